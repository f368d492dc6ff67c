"""_poprun_flags.py: real poprun's Pod-only and MPI flags, accepted, noted or applied."""
import argparse

import pytest

from ipu_tutorials.distributed import _poprun_flags, poprun

# --- real poprun's flags, as Graphcore's published examples write them --------------------------
# tutorials/feature_examples/pytorch/popdist/tests/test_popdist_training.py (graphcore/examples)
POPDIST_EXAMPLE = ["--mpi-global-args", "--tag-output", "--num-replicas", "4",
                   "--num-instances", "2", "python", "popdist_training.py"]
# nlp/bert/pytorch/README.md (graphcore/examples): a Pod launch, V-IPU and MPI flags
POD_LAUNCH = ["--vv", "--num-instances=2", "--num-replicas=4", "--ipus-per-replica=4",
              "--numa-aware=yes", "--vipu-server-host=10.1.2.3", "--vipu-server-timeout=3600",
              "--vipu-partition=pod16", "--update-partition=yes", "--reset-partition=no",
              "--remove-partition=no", "--print-topology=yes",
              "--mpi-global-args=--mca oob_tcp_if_include eth0 --mca btl_tcp_if_include eth0",
              "--mpi-local-args=-x OMPI_CPP_FLAGS -x POPLAR_ENGINE_OPTIONS=x -x TAG=7",
              "--executable-cache-path", "/tmp/cache", "python", "run_pretraining.py",
              "--config", "pretrain_large_128"]


def test_the_popdist_examples_command_line_parses_with_its_program_intact():
    parsed = poprun.parse_args(POPDIST_EXAMPLE)
    assert (parsed.num_instances, parsed.num_replicas) == (2, 4)
    assert parsed.mpi_global_args == "--tag-output"
    assert parsed.command == ["python", "popdist_training.py"]
    assert _poprun_flags.notes(parsed) == []  # --tag-output is what poprun does anyway


def test_pod_flags_are_accepted_each_with_a_note_and_mpi_exports_applied(monkeypatch):
    monkeypatch.setenv("OMPI_CPP_FLAGS", "-O2")
    parsed = poprun.parse_args(POD_LAUNCH)
    assert parsed.command == ["python", "run_pretraining.py", "--config", "pretrain_large_128"]
    notes = _poprun_flags.notes(parsed)
    for flag in ("--vipu-server-host 10.1.2.3", "--vipu-partition pod16",
                 "--update-partition yes", "--reset-partition no", "--remove-partition no",
                 "--vipu-server-timeout 3600"):
        assert any(n.startswith(f"poprun: note: {flag}: on a Pod this") for n in notes), flag
    assert any("mpirun would get '--mca oob_tcp_if_include eth0" in n for n in notes)
    assert _poprun_flags.mpi_exports(parsed) == {
        "OMPI_CPP_FLAGS": "-O2", "POPLAR_ENGINE_OPTIONS": "x", "TAG": "7",
        "POPTORCH_CACHE_DIR": "/tmp/cache"}
    env = poprun.instance_environment(parsed, 1)
    assert env["TAG"] == "7" and env["POPTORCH_CACHE_DIR"] == "/tmp/cache"
    assert (_poprun_flags.topology(2, 4, 4).splitlines()[-1] ==
            "poprun: instance 1, replica 3: IPU(s) 12, 13, 14, 15")


# graphcore/examples v2.6.0: ai_for_simulation/cosmoflow/tensorflow1/README.md writes 1,
# nlp/bert/popart/benchmarks.yml writes =yes; real poprun takes both
COSMOFLOW = ["--num-replicas", "2", "--num-instances", "2", "--ipus-per-replica", "1",
             "--numa-aware", "1", "python", "train.py", "configs/graphcore.yaml"]


@pytest.mark.parametrize("numa, expected", [
    (["--numa-aware", "1"], "yes"), (["--numa-aware", "0"], "no"), (["--numa-aware=1"], "yes"),
    (["--numa-aware=yes"], "yes"), (["--numa-aware", "no"], "no"), (["--numa-aware"], "yes"),
    ([], "no"),
])
def test_numa_aware_takes_yes_no_1_and_0_and_leaves_the_program_alone(numa, expected):
    parsed = poprun.parse_args([*numa, "--num-instances", "2", "python", "train.py", "1"])
    assert parsed.numa_aware == expected
    assert parsed.command == ["python", "train.py", "1"]


def test_the_published_numa_aware_1_command_parses():
    parsed = poprun.parse_args(COSMOFLOW)
    assert (parsed.num_instances, parsed.num_replicas, parsed.numa_aware) == (2, 2, "yes")
    assert parsed.command == ["python", "train.py", "configs/graphcore.yaml"]


def test_every_yes_no_flag_takes_1_and_0():
    parsed = poprun.parse_args(["--update-partition", "1", "--reset-partition=0",
                                "--print-topology", "1", "python", "x.py"])
    assert ((parsed.update_partition, parsed.reset_partition, parsed.print_topology) ==
            ("yes", "no", "yes"))
    assert any(n.startswith("poprun: note: --update-partition yes:")
               for n in _poprun_flags.notes(parsed))


@pytest.mark.parametrize("value", ["2", "maybe", "on"])
def test_another_value_for_numa_aware_is_one_clear_error(value, capsys):
    with pytest.raises(SystemExit) as exit_info:
        poprun.parse_args([f"--numa-aware={value}", "python", "x.py"])
    assert exit_info.value.code == 2
    assert (f"argument --numa-aware: invalid choice: '{value}' (choose from yes, no, 1, 0)" in
            capsys.readouterr().err)


def test_the_mca_flag_takes_a_name_and_a_value():
    parsed = poprun.parse_args(["--mca", "btl_tcp_if_include", "eth0", "python", "x.py"])
    assert parsed.mca == ["btl_tcp_if_include", "eth0"] and parsed.command == ["python", "x.py"]


def test_an_open_quote_in_the_mpi_arguments_is_one_clear_error():
    parsed = argparse.Namespace(mpi_global_args="", mpi_local_args="-x 'TAG",
                                executable_cache_path=None)
    with pytest.raises(ValueError, match=r"--mpi-local-args \"-x 'TAG\": No closing quotation"):
        _poprun_flags.mpi_exports(parsed)


def test_a_free_text_value_starting_with_dashes_is_glued_on_up_to_the_program():
    parser = argparse.ArgumentParser()
    _poprun_flags.add_to(parser)
    argv = ["--vv", "--mpi-local-args", "--bind-to none", "python", "x.py", "--mpi-local-args", "y"]
    assert (_poprun_flags.join_free_text_values(argv, parser) ==
            ["--vv", "--mpi-local-args=--bind-to none", "python", "x.py", "--mpi-local-args", "y"])
