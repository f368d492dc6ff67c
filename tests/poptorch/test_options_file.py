"""_options_file.py: options files are read by parsers; names are checked, never evaluated."""
import json

import pytest
import torch

from ipu_tutorials import poptorch
from ipu_tutorials.support.atomic_io import FileFormatError
from ipu_tutorials.poptorch._options_file import check_name, read_lines, read_table, torch_value


@pytest.mark.parametrize("name, part", [("__class__.__init__", "__class__"),
                                        ("Training._values", "_values"), ("_private", "_private")])
def test_private_names_are_refused_naming_the_part(name, part):
    with pytest.raises(ValueError, match=f"{name!r} names the private attribute {part!r}"):
        check_name(name)
    check_name("_Popart.set")  # PopTorch's own examples set PopART flags this way
    check_name("Training.gradientAccumulation")


def test_only_torch_dtypes_are_reachable():
    assert torch_value("float16") is torch.float16 and torch_value("int32") is torch.int32
    assert torch_value("load") is None and torch_value("nn") is None
    assert torch_value("float16; import os") is None


def test_a_binary_file_or_a_table_that_is_not_an_object_is_one_error(tmp_path):
    (tmp_path / "o.conf").write_bytes(b"deviceIterations(2)\n\xff\xfe")
    with pytest.raises(FileFormatError, match=r"o.conf is not an options file: it is not UTF-8"):
        read_lines(tmp_path / "o.conf")
    (tmp_path / "o.json").write_text("[1, 2]")
    with pytest.raises(FileFormatError, match=r"o.json must hold an object of method: argument "
                                              r"pairs .*, got a list"):
        read_table(tmp_path / "o.json")


def test_options_files_in_json_and_toml_are_read_with_a_parser(tmp_path):
    (tmp_path / "o.json").write_text(json.dumps({"deviceIterations": 4,
                                                 "Training.gradientAccumulation": 2,
                                                 "outputMode": "OutputMode.All"}))
    (tmp_path / "o.toml").write_text('deviceIterations = 4\n"Training.gradientAccumulation" = 2\n'
                                     'outputMode = "OutputMode.All"\n')
    for name in ("o.json", "o.toml"):
        opts = poptorch.Options().loadFromFile(str(tmp_path / name))
        assert (opts.device_iterations, opts.Training.gradient_accumulation,
                opts.output_mode) == (4, 2, poptorch.OutputMode.All)
    (tmp_path / "bad.json").write_text(json.dumps({"__class__.__init__": []}))
    with pytest.raises(ValueError, match="private attribute '__class__'"):
        poptorch.Options().loadFromFile(str(tmp_path / "bad.json"))
    (tmp_path / "bad.toml").write_text("deviceIterations = [\n")
    with pytest.raises(FileFormatError, match=r"bad.toml is not a valid TOML options file"):
        poptorch.Options().loadFromFile(str(tmp_path / "bad.toml"))


def test_options_json_in_the_environment_is_bounded(monkeypatch):
    monkeypatch.setenv("POPTORCH_DEFAULT_OPTIONS", "[" * 100_000)
    with pytest.raises(ValueError, match="options JSON is (not valid JSON|nested too deeply)"):
        poptorch.Options()
