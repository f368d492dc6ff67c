"""Atomic writes and careful reads: a crash or a full disk never leaves a half-written file.

Every save, export, report and IPUConfig goes through `atomic_open`: the bytes go to a
temporary file in the destination's folder, are flushed and fsynced, then `os.replace` swaps
it in. A reader sees the old file or the new one, never a mix; a failed write leaves the old
file untouched and removes the temporary file. Reads of JSON go through `read_json`, which
answers an empty, truncated, damaged or absurdly nested file with one `FileFormatError`
naming the file.
"""
from __future__ import annotations

import contextlib
import json
import os
import uuid
from typing import IO, Any, Iterator


class FileFormatError(ValueError):
    """A file exists but does not hold what it should (empty, truncated, damaged, untrusted)."""


class FileWriteError(OSError):
    """A write failed (full disk, read-only folder, ...); the previous file is unchanged."""


def _temporary_name(path: str) -> str:
    folder, name = os.path.split(os.path.abspath(path))
    return os.path.join(folder, f".{name}.{uuid.uuid4().hex[:12]}.tmp")


def _write_failed(path: str, error: OSError) -> FileWriteError:
    reason = error.strerror or str(error)
    return FileWriteError(error.errno, f"could not write {path}: {reason}; the previous "
                          f"file (if any) is unchanged. Free some space or choose a folder "
                          f"you can write to")


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike, mode: str = "w") -> Iterator[IO]:
    """Open a temporary file that replaces `path` only once the block ends without error.

    Args:
        path: the destination; its folder must exist.
        mode: "w" (text, UTF-8) or "wb".

    Raises:
        FileWriteError: the folder is not writable or the disk filled up; `path` is unchanged.
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_open writes whole files: mode must be 'w' or 'wb', got {mode!r}")
    path = os.fspath(path)
    temporary = _temporary_name(path)
    try:
        # 0o666 minus the umask, like open(path, "w") would give a new file
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except OSError as error:
        raise _write_failed(path, error) from None
    try:
        with os.fdopen(descriptor, mode, **({"encoding": "utf-8"} if mode == "w" else {})) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, path)
    except BaseException as error:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        if isinstance(error, OSError) and not isinstance(error, FileWriteError):
            raise _write_failed(path, error) from None
        raise
    _sync_folder(path)


def _sync_folder(path: str) -> None:
    """Make the rename itself durable (POSIX); not every system can open a folder."""
    with contextlib.suppress(OSError):
        descriptor = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)


def write_text(path: str | os.PathLike, text: str) -> None:
    """Replace `path` with `text` atomically."""
    with atomic_open(path, "w") as f:
        f.write(text)


def write_json(path: str | os.PathLike, value: Any, **dump_options: Any) -> None:
    """Replace `path` with `value` as JSON atomically (the JSON is built before writing)."""
    write_text(path, json.dumps(value, **dump_options))


def read_json(path: str | os.PathLike, what: str = "JSON file") -> Any:
    """Parse a JSON file, answering any problem with its content in one line naming the file.

    Raises:
        FileNotFoundError, PermissionError: as open() does (they name the file).
        FileFormatError: empty, not UTF-8, not JSON (truncated?), or nested too deeply.
    """
    path = os.fspath(path)
    with open(path, "rb") as f:
        data = f.read()
    if not data.strip():
        raise FileFormatError(f"{path} is empty; expected a {what} (was its write interrupted?)")
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise FileFormatError(f"{path} is not a {what}: it is not UTF-8 text ({error.reason} "
                              f"at byte {error.start})") from None
    except json.JSONDecodeError as error:
        raise FileFormatError(f"{path} is not a valid {what} ({error.msg} at line "
                              f"{error.lineno}, column {error.colno}); it may be truncated or "
                              f"damaged: write it again") from None
    except RecursionError:
        raise FileFormatError(f"{path} is nested too deeply to be a {what}; it is damaged or "
                              f"malicious") from None
