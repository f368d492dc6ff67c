"""poprun's options: the rules between counts, and the torch.distributed launch they become."""
import pytest

from ipu_tutorials.distributed import poprun


def args(*argv):
    return poprun.parse_args([*argv, "python", "train.py", "--epochs", "2"])


def test_counts_become_the_instances_environments():
    parsed = args("--num-instances", "2", "--num-replicas", "4", "--numa-aware", "yes")
    envs = poprun.launch_environments(parsed, [0, 1], "s" * 32, store_file="/private/store")
    assert [e["RANK"] for e in envs] == ["0", "1"] and envs[1]["LOCAL_RANK"] == "1"
    for env in envs:
        assert env["POPDIST_NUM_TOTAL_REPLICAS"] == "4" and env["POPDIST_NUM_INSTANCES"] == "2"
        assert env["IPU_TUTORIALS_RDZV_FILE"] == "/private/store"
        assert "MASTER_ADDR" not in env and "MASTER_PORT" not in env  # no port on one host
        assert env["IPU_TUTORIALS_RDZV_SECRET"] == "s" * 32
        assert env["WORLD_SIZE"] == "2"
    assert poprun.program(parsed)[1:] == ["train.py", "--epochs", "2"]


def test_several_hosts_get_the_tcp_store_poprun_hosts():
    parsed = args("--num-instances", "4", "--host", "pod-a,pod-b", "--host-index", "1")
    assert not parsed.file_store
    env = poprun.launch_environments(parsed, [2, 3], "s" * 32, address="pod-a", port=29400)[0]
    assert (env["MASTER_ADDR"], env["MASTER_PORT"], env["RANK"]) == ("pod-a", "29400", "2")
    assert env["IPU_TUTORIALS_STORE_HOSTED"] == "1" and "IPU_TUTORIALS_RDZV_FILE" not in env


@pytest.mark.parametrize("flags, file_store", [((), True), (("--rdzv-port", "4242"), False),
                                                (("--rdzv-address", "127.0.0.1"), False)])
def test_one_host_meets_in_a_private_store_unless_a_port_or_address_is_named(flags, file_store):
    assert args("--num-instances", "2", *flags).file_store == file_store


def test_one_host_meets_on_loopback_at_any_free_port():
    parsed = args("--num-instances", "2")
    assert parsed.rdzv_port == 0 and poprun.host_index(parsed, poprun.hosts_of(parsed)) == 0


def test_several_hosts_meet_at_the_first_one_on_a_fixed_port():
    parsed = args("--num-instances", "4", "--num-replicas", "8", "--host", "pod-a,pod-b",
                  "--host-index", "1")
    assert parsed.rdzv_port == 29400
    assert poprun.host_index(parsed, poprun.hosts_of(parsed)) == 1


@pytest.mark.parametrize("argv, message", [
    (("--num-instances", "2", "--num-replicas", "3"),
     r"--num-replicas \(3\) must be a multiple of --num-instances \(2\)"),
    (("--num-instances", "3", "--num-replicas", "6", "--host", "a,b"),
     r"--num-instances \(3\) must be a multiple of the 2 host\(s\)"),
    (("--num-replicas", "8", "--ipus-per-replica", "4"),
     r"8 replicas x 4 IPU\(s\) per replica need 32 IPUs but the simulated system has 16"),
    (("--num-instances", "0",), r"--num-instances must be at least 1, got 0"),
    (("--instance-timeout", "nan"), r"--instance-timeout must be a positive number of seconds"),
    (("--instance-timeout", "inf"), r"--instance-timeout must be a positive number of seconds"),
    (("--rdzv-port", "70000"), r"--rdzv-port must be between 1 and 65535, got 70000"),
    (("--num-instances", "2", "--host", "a,b", "--rdzv-port", "0"),
     r"--rdzv-port 0 lets the system pick a port the other hosts cannot know"),
    (("--only-output-from-instance", "3", "--num-instances", "2"),
     r"--only-output-from-instance must be between 0 and 1, got 3"),
    (("--host", "a,b", "--num-instances", "2", "--host-index", "2"),
     r"--host-index must be between 0 and 1"),
    (("--mpi-local-args", "-x 'A=1"), r"--mpi-local-args .*No closing quotation"),
    (("--update-partition", "maybe"), r"argument --update-partition: invalid choice: 'maybe'"),
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
