"""The simulator's extras: every name a facade offers that the real project lacks, declared once.

An extra is kept because a lesson needs what PopTorch (optimum-graphcore, Lightning, popdist)
cannot show, such as the simulated plan; each says why it exists and how the same is done on
real IPUs. docs/differences.md lists them all (written from this table), and
tests/peer/test_surface.py fails on an undeclared one. A lesson line that uses one carries
the `# simulator extra` marker (ipu_tutorials.support.extras).
"""
from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Extra:
    """One extra: its name as the real project's path would be (`poptorch.Phase.ipu_ids`;
    `poptorch.Options.outputMode(...)` for a signature that differs), why the simulator has
    it, and the real way."""
    name: str
    why: str
    real_way: str
    # "extra": a name the real project lacks; "signature": other parameters; "keyword": an
    # argument the real function would refuse, which its **kwargs lets in (noted when given)
    kind: str = "extra"


EXTRAS: tuple[Extra, ...] = (
    # --- PopTorch (poptorch) ---
    Extra("poptorch.PoplarExecutor.plan",
          "the simulated plan of one call (placement, memory per IPU, costs, timeline), which "
          "the lessons print and draw",
          "a PopVision Graph Analyser and System Analyser profile "
          "(POPLAR_ENGINE_OPTIONS='{\"autoReport.all\":\"true\"}') and getPerfCounters()"),
    Extra("poptorch.PoplarExecutor.report",
          "the plan as a profiling report (JSON summary, Chrome trace, figures)",
          "Poplar's autoReport profile, opened in PopVision"),
    Extra("poptorch.PoplarExecutor.simulated_seconds",
          "the IPU time the cost model gives every call so far",
          "time the calls on the host (time.perf_counter) or read getLatency()"),
    Extra("poptorch.PoplarExecutor.host_seconds",
          "the host time the simulator spent running the calls",
          "time.perf_counter around the calls"),
    Extra("poptorch.OutOfMemoryError",
          "a poptorch.Error that carries the simulator's memory plan per IPU (`.plan`)",
          "catch poptorch.Error; PopTorch's message holds Poplar's report per tile"),
    Extra("poptorch.register_custom_op",
          "gives poptorch.custom_op a Python implementation to run",
          "build the op with the Poplar SDK and load its library with "
          "ctypes.cdll.LoadLibrary(\"custom_ops.so\")"),
    Extra("poptorch.optim.Optimizer.apply_gradients",
          "runs, on the host, the update an IPU call makes from accumulated gradients",
          "none: PopART updates the weights on the IPU; compare with torch.optim on the CPU"),
    Extra("poptorch.PoplarExecutor.__init__",
          "built only by trainingModel and inferenceModel; the simulator has no SDK version "
          "to pass (PopTorch's takes poptorch_version and user_model)",
          "poptorch.trainingModel(model, ...) or poptorch.inferenceModel(model, ...)",
          kind="signature"),
    # --- optimum-graphcore (optimum.graphcore) ---
    Extra("optimum.graphcore.IPUConfig(defaults_from=)",
          "picks which release's defaults fill what a configuration leaves out: \"v0.5\" "
          "(v0.2.1 to v0.6.0) or \"v0.7\"",
          "install the optimum-graphcore release whose defaults you want",
          kind="keyword"),
    # --- Lightning 2.0.9 (lightning.pytorch ... ipu) ---
    Extra("lightning.pytorch.strategies.ipu.IPUStrategy.stats",
          "calls, samples and simulated seconds of each stage the strategy ran",
          "time the stages with a Lightning callback, or read PopVision profiles"),
    Extra("lightning.pytorch.strategies.ipu.IPUStrategy.report_paths",
          "the simulator's reports written as the stages ended",
          "IPUStrategy(autoreport=True, autoreport_dir=...) writes Poplar's profile.pop"),
    Extra("lightning.pytorch.strategies.ipu.RealIPUWarning",
          "the warning a step gives where real IPUs would refuse (self.log inside a step)",
          "none: on IPUs the step is traced and the call fails; log in the hooks outside "
          "the step"),
)

BY_NAME = {extra.name: extra for extra in EXTRAS}


def declares(kind: str, name: str) -> bool:
    """Whether the registry declares this finding of tests/peer/surface.py."""
    extra = BY_NAME.get(name)
    return extra is not None and extra.kind == kind
