"""Files: a killed writer, a full disk and a read-only folder lose nothing; bad files get one line."""
import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch

from ipu_tutorials import poptorch
from ipu_tutorials.support.atomic_io import FileFormatError, FileWriteError, read_json, write_json
from ipu_tutorials.optimum.graphcore import IPUConfig
from ipu_tutorials.profiling import Report
from ipu_tutorials.tutorial.models import Regression

ROOT = Path(__file__).resolve().parents[2]
OLD = {"version": "old", "values": list(range(100))}


def run_python(code: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_a_writer_killed_mid_write_leaves_the_old_file_whole(tmp_path):
    target = tmp_path / "data.json"
    write_json(target, OLD)
    writer = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sys, time
        from ipu_tutorials.support.atomic_io import atomic_open
        with atomic_open({str(target)!r}) as f:
            f.write('{{"version": "new", "values": [')
            f.flush()
            print("half written", flush=True)
            time.sleep(60)
            f.write('1]}}')
        """)], stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert writer.stdout.readline().strip() == "half written"
        writer.send_signal(signal.SIGKILL)
        writer.wait(timeout=30)
    finally:
        if writer.poll() is None:
            writer.kill()
    assert read_json(target) == OLD
    leftovers = [p.name for p in tmp_path.iterdir() if p.name != "data.json"]
    assert len(leftovers) == 1 and leftovers[0].startswith(".data.json.")  # the dead temp file


def test_a_file_size_limit_mid_write_is_one_clear_error_and_the_old_file_survives(tmp_path):
    target = tmp_path / "big.json"
    write_json(target, OLD)
    result = run_python(f"""
        import resource, signal
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of being killed
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
        from ipu_tutorials.support.atomic_io import write_json, FileWriteError
        try:
            write_json({str(target)!r}, list(range(100000)))
        except FileWriteError as error:
            print(error)
        """)
    assert ("could not write" in result.stdout and "the previous file (if any) is unchanged"
            in result.stdout), result.stderr
    assert read_json(target) == OLD and os.listdir(tmp_path) == ["big.json"]


@contextlib.contextmanager
def tiny_tmpfs(path: Path, options: str):
    path.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)],
                             capture_output=True)
    if mounted.returncode:
        pytest.skip("cannot mount a tmpfs here (needs root); the ENOSPC case is simulated below")
    try:
        yield path
    finally:
        subprocess.run(["umount", str(path)], capture_output=True)


def test_a_full_disk_is_one_clear_error_and_the_old_file_survives(tmp_path):
    with tiny_tmpfs(tmp_path / "disk", "size=64k") as disk:
        target = disk / "config.json"
        IPUConfig(layers_per_ipu=[1, 2]).to_json_file(target)
        before = target.read_bytes()
        with pytest.raises(FileWriteError, match=r"could not write .*config.json: No space left "
                                                 r"on device; the previous file .* unchanged"):
            write_json(target, ["x" * 1000] * 1000)
        assert target.read_bytes() == before and os.listdir(disk) == ["config.json"]


def test_a_read_only_folder_is_one_clear_error_and_the_old_file_survives(tmp_path):
    with tiny_tmpfs(tmp_path / "disk", "size=64k") as disk:
        write_json(disk / "summary.json", OLD)
        subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
        with pytest.raises(FileWriteError, match=r"could not write .*summary.json: Read-only "
                                                 r"file system"):
            write_json(disk / "summary.json", {"new": 1})
        assert read_json(disk / "summary.json") == OLD


# --- reading: empty, truncated, damaged and deeply nested files -----------------------------------
BAD_JSON = {"empty": b"", "blank": b"  \n", "truncated": b'{"a": [1, 2', "binary": b"\xff\xfe\x00",
            "nested": b"[" * 100_000 + b"]" * 100_000}


@pytest.mark.parametrize("kind", BAD_JSON)
def test_bad_json_files_are_one_error_naming_the_file(tmp_path, kind):
    path = tmp_path / f"{kind}.json"
    path.write_bytes(BAD_JSON[kind])
    with pytest.raises(FileFormatError) as info:
        read_json(path)
    assert str(path) in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(OSError, match=str(path)):  # IPUConfig keeps transformers' OSError
        IPUConfig.from_json_file(path)
    with pytest.raises(FileFormatError, match=str(path)):
        poptorch.Options().loadFromFile(str(path))


@pytest.mark.parametrize("kind", BAD_JSON)
def test_a_damaged_report_is_one_error_naming_the_file(tmp_path, kind):
    (tmp_path / "trace.json").write_text(json.dumps({"traceEvents": []}))
    (tmp_path / "summary.json").write_bytes(BAD_JSON[kind])
    with pytest.raises(FileFormatError, match=str(tmp_path / "summary.json")):
        Report.load(str(tmp_path))


def test_a_report_with_a_malformed_trace_names_the_trace(tmp_path):
    (tmp_path / "summary.json").write_text(json.dumps({"format": "ipu-tutorials-report/1"}))
    (tmp_path / "trace.json").write_text(json.dumps({"traceEvents": [{"ph": "X"}]}))
    with pytest.raises(FileFormatError, match=r"trace.json is not a trace written by Report.save"):
        Report.load(str(tmp_path))


@pytest.fixture
def saved_model(tmp_path):
    model = poptorch.trainingModel(Regression())
    model(torch.randn(4, 5), torch.randn(4, 3))
    path = tmp_path / "model.poptorch"
    model.save(str(path))
    model.destroy()
    return path


@pytest.mark.parametrize("cut", [0, 10, 1000, -10])
def test_an_empty_or_truncated_executable_is_one_error_naming_the_file(saved_model, cut):
    saved_model.write_bytes(saved_model.read_bytes()[:cut])
    for load in (poptorch.load, poptorch.inferenceModel(Regression()).loadExecutable):
        with pytest.raises(FileFormatError) as info:
            load(str(saved_model))
        assert str(saved_model) in str(info.value) and "\n" not in str(info.value)


def test_saving_over_an_executable_replaces_it_whole(saved_model):
    before = saved_model.read_bytes()
    model = poptorch.trainingModel(Regression())
    model(torch.randn(4, 5), torch.randn(4, 3))
    model.save(str(saved_model))
    assert saved_model.read_bytes() != before
    assert poptorch.load(str(saved_model)).isCompiled()
    assert os.listdir(saved_model.parent) == ["model.poptorch"]


def test_two_processes_writing_one_report_folder_leave_whole_files(tmp_path):
    code = f"""
        from ipu_tutorials.support.atomic_io import write_json
        for i in range(200):
            write_json({str(tmp_path / 'summary.json')!r}, {{"writer": WHO, "data": [i] * 2000}})
        """
    writers = [subprocess.Popen([sys.executable, "-c", textwrap.dedent(code.replace("WHO", w))],
                                env={**os.environ, "PYTHONPATH": str(ROOT)}) for w in ("1", "2")]
    deadline = time.monotonic() + 60
    reads = 0
    while any(w.poll() is None for w in writers) and time.monotonic() < deadline:
        with contextlib.suppress(FileNotFoundError):
            value = read_json(tmp_path / "summary.json")  # never a torn file
            assert value["writer"] in (1, 2) and len(value["data"]) == 2000
            reads += 1
    for w in writers:
        assert w.wait(timeout=60) == 0
    assert read_json(tmp_path / "summary.json")["data"] == [199] * 2000
