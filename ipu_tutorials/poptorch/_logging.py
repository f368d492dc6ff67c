"""PopTorch's log: what a compile reports at INFO and DEBUG, written to stderr as PopTorch does.

The messages appear once poptorch.setLogLevel (or POPTORCH_LOG_LEVEL) lets them through. They
carry no timestamp (PopTorch's do), so a notebook's log is the same run to run.
"""
from __future__ import annotations

import logging
import sys

from .enums import OutputMode

logger = logging.getLogger("poptorch")
_LEVEL_NAMES = {logging.DEBUG - 5: "trace", logging.DEBUG: "debug", logging.INFO: "info",
                logging.WARNING: "warn", logging.ERROR: "err"}


def to_stderr(line: str) -> None:
    """Write one line to the stderr of the moment (a notebook's) after all the program printed
    before it, as a terminal shows them: a notebook kernel sends stdout and stderr on timers of
    their own, so without the flushes the order would depend on the machine's load."""
    sys.stdout.flush()
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


class _StderrHandler(logging.Handler):
    """Writes `[poptorch:python] [info] message` to stderr, in order with the program's prints."""

    def emit(self, record: logging.LogRecord) -> None:
        level = _LEVEL_NAMES.get(record.levelno, record.levelname.lower())
        to_stderr(f"[poptorch:python] [{level}] {record.getMessage()}")


_HANDLER = _StderrHandler()
# each output mode as PopTorch writes it to PopART (popart_compiler PopartEnums.hpp,
# outputModeToString): Sum alone is not upper case
_MODE_NAMES = {OutputMode.All: "ALL", OutputMode.EveryN: "EVERYN", OutputMode.Final: "FINAL",
               OutputMode.Sum: "Sum"}


def install_handler() -> None:
    """Show the log on stderr from now on (idempotent; setLogLevel calls it)."""
    if _HANDLER not in logger.handlers:
        logger.addHandler(_HANDLER)


def log_compiled(plan, name: str, training: bool, anchors: dict, output_mode) -> None:
    """INFO: what was compiled, the fullest IPU and the simulated speed; DEBUG: each stage and
    each anchored tensor (PopTorch's `<tensor> ALL/1` form; an anchor without a mode takes the
    model's `output_mode`, as in PopTorch)."""
    if not logger.isEnabledFor(logging.INFO):
        return
    spec, placement = plan.spec, plan.placement
    logger.info("Compiled %s model %s: %s on %d IPU(s) per replica, %d replica(s), "
                "micro-batch %d, %d micro-batches per call", "training" if training else
                "inference", name, spec.strategy.kind, placement.ipus_per_replica,
                spec.pod_replicas, spec.micro_batch, spec.micro_batches_per_input)
    fullest = max(plan.memory.ipus, key=lambda m: m.total)
    logger.info("Memory: the fullest IPU is IPU %d with %.2f MiB of %.0f MiB", fullest.ipu,
                fullest.total / 2**20, fullest.capacity / 2**20)
    logger.info("Simulated call: %.3f ms, %s samples/s", plan.call_seconds * 1e3,
                f"{plan.samples_per_second:,.0f}")
    for line in placement.describe().splitlines():
        logger.debug("Placement: %s", line)
    for short_name, (long_name, _, mode, period) in anchors.items():
        mode = _MODE_NAMES[output_mode if mode in (None, OutputMode.Default) else mode]
        period = period if mode == "EVERYN" else 1  # as PopTorch logs
        logger.debug("Anchoring %s %s/%d as %r", long_name, mode, period, short_name)
