"""Reading back a PoplarExecutor.save file: weights-only, checked, one clear error."""
from __future__ import annotations

import os

from ..support.atomic_io import FileFormatError
from ..support.trusted_load import load_trusted

KEYS = ("training", "options", "model", "optimizer", "example", "rng_state")


def read_saved(filename: str | os.PathLike) -> dict:
    """The dict PoplarExecutor.save wrote, loaded without running code from the file.

    Raises:
        FileFormatError: the file is empty, damaged, unsafe, or not a poptorch save.
    """
    saved = load_trusted(filename, "file saved by PoplarExecutor.save or compileAndExport")
    if not isinstance(saved, dict) or any(key not in saved for key in KEYS):
        raise FileFormatError(f"{os.fspath(filename)} is not a file saved by "
                              f"PoplarExecutor.save or compileAndExport (it lacks "
                              f"{', '.join(KEYS)})")
    if not isinstance(saved["training"], bool) or not isinstance(saved["example"], tuple):
        raise FileFormatError(f"{os.fspath(filename)} is damaged: its 'training' or 'example' "
                              f"entry has the wrong type")
    return saved
