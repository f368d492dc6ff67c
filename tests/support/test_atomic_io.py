"""atomic_io.py: a write replaces the file whole or not at all; a bad JSON file is one line."""
import errno
import os

import pytest

from ipu_tutorials.support.atomic_io import (FileFormatError, FileWriteError, atomic_open, read_json,
                                     write_json, write_text)

OLD = {"version": "old", "values": list(range(100))}


def test_a_write_replaces_the_file_and_leaves_no_temporary(tmp_path):
    target = tmp_path / "data.json"
    write_json(target, OLD)
    write_json(target, {"version": "new"}, indent=1)
    assert read_json(target) == {"version": "new"} and target.read_text() == '{\n "version": "new"\n}'
    write_text(target, "é")
    assert target.read_bytes() == "é".encode() and os.listdir(tmp_path) == ["data.json"]


def test_only_whole_file_modes_are_accepted(tmp_path):
    with pytest.raises(ValueError, match="mode must be 'w' or 'wb', got 'a'"):
        with atomic_open(tmp_path / "log.txt", "a"):
            pass
    assert os.listdir(tmp_path) == []


def test_a_missing_folder_is_one_clear_error(tmp_path):
    with pytest.raises(FileWriteError, match=r"could not write .*nowhere/x.json: No such file"):
        write_json(tmp_path / "nowhere" / "x.json", OLD)


def test_bad_json_names_the_file_and_what_was_expected(tmp_path):
    (tmp_path / "cut.json").write_text('{"a": [1,')
    with pytest.raises(FileFormatError, match=r"cut.json is not a valid IPU config \(Expecting "
                                              r"value at line 1, column 10\); it may be truncated"):
        read_json(tmp_path / "cut.json", "IPU config")
    (tmp_path / "empty.json").write_text("")
    with pytest.raises(FileFormatError, match=r"empty.json is empty; expected a JSON file"):
        read_json(tmp_path / "empty.json")


def test_an_exception_mid_write_keeps_the_old_file_and_removes_the_temporary(tmp_path):
    target = tmp_path / "data.json"
    write_json(target, OLD)
    with pytest.raises(KeyboardInterrupt), atomic_open(target) as f:
        f.write("{")
        raise KeyboardInterrupt
    assert read_json(target) == OLD and os.listdir(tmp_path) == ["data.json"]


def test_a_simulated_enospc_at_fsync_is_one_clear_error(tmp_path, monkeypatch):
    target = tmp_path / "model.poptorch"
    target.write_bytes(b"old")

    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(FileWriteError, match="No space left on device"):
        with atomic_open(target, "wb") as f:
            f.write(b"new")
    assert target.read_bytes() == b"old" and os.listdir(tmp_path) == ["model.poptorch"]
