"""Reports written at compile: by Options.enableProfiling or POPLAR_ENGINE_OPTIONS autoReport."""
import json
import os

import pytest

from ipu_tutorials import poptorch
from ipu_tutorials.profiling import autoreport


def test_poplar_engine_options_autoreport_writes_a_report(tmp_path, monkeypatch, trained):
    monkeypatch.setenv("POPLAR_ENGINE_OPTIONS", json.dumps(
        {"autoReport.all": "true", "autoReport.directory": str(tmp_path)}))
    trained(poptorch.Options())
    assert sorted(os.listdir(tmp_path / "training")) == ["summary.json", "trace.json"]


def test_enable_profiling_uses_the_model_name(tmp_path, trained):
    trained(poptorch.Options().enableProfiling(str(tmp_path)).modelName("mnist"))
    assert (tmp_path / "mnist" / "summary.json").exists()


def test_bad_engine_options_say_what_is_expected(monkeypatch, trained):
    monkeypatch.setenv("POPLAR_ENGINE_OPTIONS", "autoReport.all=true")
    with pytest.raises(ValueError, match="must be JSON"):
        trained(poptorch.Options())


def test_the_report_directory_prefers_enable_profiling_then_the_engine_options():
    on = json.dumps({"autoReport.outputExecutionProfile": "true"})
    assert autoreport.report_directory("mine", on) == "mine"
    assert autoreport.report_directory(None, on) == "."
    assert autoreport.report_directory(None, "") is None
    with pytest.raises(ValueError, match="must be a JSON object"):
        autoreport.engine_options("[1]")
