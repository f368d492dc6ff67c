"""Write a report when profiling is on: Options.enableProfiling or POPLAR_ENGINE_OPTIONS autoReport."""
from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from .report import Report


def engine_options(text: str) -> dict:
    """POPLAR_ENGINE_OPTIONS's text as a dict ({} when empty).

    Raises:
        ValueError: the text is not a JSON object.
    """
    if not text.strip():
        return {}
    try:
        options = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"POPLAR_ENGINE_OPTIONS must be JSON such as "
                         f"'{{\"autoReport.all\":\"true\"}}'; got {text!r} ({error})") from None
    if not isinstance(options, dict):
        raise ValueError(f"POPLAR_ENGINE_OPTIONS must be a JSON object, got {text!r}")
    return options


def report_directory(profile_dir: str | None, engine_options_text: str) -> str | None:
    """Where reports go, or None when profiling is off."""
    if profile_dir is not None:
        return profile_dir
    options = engine_options(engine_options_text)
    enabled = any(str(options.get(k, "false")).lower() == "true"
                  for k in ("autoReport.all", "autoReport.outputExecutionProfile"))
    return options.get("autoReport.directory", ".") if enabled else None


def write_if_enabled(profile_dir: str | None, engine_options_text: str, name: str,
                     make_report: Callable[[], "Report"]) -> str | None:
    """Save a report under <dir>/<name> when profiling is on; returns where it went.

    Args:
        profile_dir: Options.enableProfiling's directory (None: ask the engine options).
        engine_options_text: POPLAR_ENGINE_OPTIONS as the environment holds it.
        name: the model name, or "training" / "inference".
        make_report: builds the report, called only when one is written.
    """
    directory = report_directory(profile_dir, engine_options_text)
    if directory is None:
        return None
    return make_report().save(os.path.join(directory, name))
