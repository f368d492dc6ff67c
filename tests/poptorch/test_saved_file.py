"""_saved_file.py: a PoplarExecutor.save file is read back only when it has every entry."""
import pytest
import torch

from ipu_tutorials.support.atomic_io import FileFormatError
from ipu_tutorials.poptorch._saved_file import KEYS, read_saved

WHOLE = {"training": True, "options": None, "model": torch.nn.Linear(2, 1), "optimizer": None,
         "example": ((torch.ones(1, 2),), {}), "rng_state": None}


def test_a_whole_save_is_read_back(tmp_path):
    torch.save(WHOLE, tmp_path / "m.poptorch")
    saved = read_saved(tmp_path / "m.poptorch")
    assert set(saved) == set(KEYS) and saved["training"] is True
    assert torch.equal(saved["model"].weight, WHOLE["model"].weight)


@pytest.mark.parametrize("content, message", [
    ({"model": torch.nn.Linear(2, 1)}, r"is not a file saved by PoplarExecutor.save or "
                                       r"compileAndExport \(it lacks training, options"),
    ([1, 2], r"is not a file saved by PoplarExecutor.save"),
    ({**WHOLE, "training": "yes"}, r"is damaged: its 'training' or 'example' entry has the wrong"),
    ({**WHOLE, "example": [1]}, r"is damaged: its 'training' or 'example' entry has the wrong"),
])
def test_anything_else_is_one_error_naming_the_file(tmp_path, content, message):
    torch.save(content, tmp_path / "m.poptorch")
    with pytest.raises(FileFormatError, match="m.poptorch " + message):
        read_saved(tmp_path / "m.poptorch")
