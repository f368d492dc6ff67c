"""poprun's options: the rules between counts, and the torch.distributed launch they become."""
import pytest

from ipu_tutorials import poprun


def args(*argv):
    return poprun.parse_args([*argv, "python", "train.py", "--epochs", "2"])


def test_counts_become_a_torchrun_launch_of_the_local_instances(tmp_path):
    parsed = args("--num-instances", "2", "--num-replicas", "4", "--numa-aware", "yes")
    launch = poprun.torchrun_arguments(parsed, str(tmp_path))
    assert "--nproc-per-node=2" in launch and "--max-restarts=0" in launch
    assert "--rdzv-backend=c10d" in launch and "--rdzv-endpoint=localhost:0" in launch
    assert f"--log-line-prefix-template={poprun.PREFIX}" in launch
    assert launch[-3:] == ["train.py", "--epochs", "2"]
    env = poprun.instance_environment(parsed, 2)
    assert env["POPDIST_NUM_TOTAL_REPLICAS"] == "4" and env["POPDIST_NUM_INSTANCES"] == "2"


def test_several_hosts_meet_at_the_first_one(tmp_path):
    parsed = args("--num-instances", "4", "--num-replicas", "8", "--host", "pod-a,pod-b")
    launch = poprun.torchrun_arguments(parsed, str(tmp_path))
    assert "--nnodes=2" in launch and "--nproc-per-node=2" in launch
    assert "--rdzv-endpoint=pod-a:29400" in launch


@pytest.mark.parametrize("argv, message", [
    (("--num-instances", "2", "--num-replicas", "3"),
     r"--num-replicas \(3\) must be a multiple of --num-instances \(2\)"),
    (("--num-instances", "3", "--num-replicas", "6", "--host", "a,b"),
     r"--num-instances \(3\) must be a multiple of the 2 host\(s\)"),
    (("--num-replicas", "8", "--ipus-per-replica", "4"),
     r"8 replicas x 4 IPU\(s\) per replica need 32 IPUs but the simulated system has 16"),
    (("--num-instances", "0",), r"--num-instances must be at least 1, got 0"),
])
def test_counts_that_do_not_fit_exit_with_the_rule(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        args(*argv)
    assert exit_info.value.code == 2
    assert pytest.importorskip("re").search(message, capsys.readouterr().err)


def test_a_program_is_required(capsys):
    with pytest.raises(SystemExit):
        poprun.parse_args(["--num-instances", "2"])
    assert "give the program to run" in capsys.readouterr().err
