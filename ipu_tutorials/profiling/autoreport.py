"""Write a report when profiling is on: Options.enableProfiling or POPLAR_ENGINE_OPTIONS autoReport."""
from __future__ import annotations

import json
import os


def engine_options() -> dict:
    """POPLAR_ENGINE_OPTIONS as a dict ({} when unset).

    Raises:
        ValueError: the variable is set but is not a JSON object.
    """
    text = os.environ.get("POPLAR_ENGINE_OPTIONS", "")
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


def report_directory(profile_dir: str | None) -> str | None:
    """Where reports go, or None when profiling is off."""
    if profile_dir is not None:
        return profile_dir
    options = engine_options()
    enabled = any(str(options.get(k, "false")).lower() == "true"
                  for k in ("autoReport.all", "autoReport.outputExecutionProfile"))
    return options.get("autoReport.directory", ".") if enabled else None


def write_if_enabled(executor) -> str | None:
    """Save the executor's report under <dir>/<model name or training|inference>; returns it."""
    directory = report_directory(executor.options.profile_dir)
    if directory is None:
        return None
    name = executor.options.model_name or ("training" if executor.training else "inference")
    return executor.report().save(os.path.join(directory, name))
