"""Which facade stands for which real project, with a sample of each class to read attributes from.

Used by surface.py (the comparison) and tests/peer/test_surface.py.
"""
from __future__ import annotations

import torch

import surface
from ipu_tutorials.support import extras_registry


def poptorch_walk() -> surface.Walk:
    from ipu_tutorials import poptorch
    from ipu_tutorials.poptorch._declared import groups

    options = poptorch.Options()
    model = poptorch.inferenceModel(torch.nn.Linear(2, 2))
    model.compile(torch.zeros(1, 2))
    parameter = [torch.nn.Parameter(torch.zeros(2))]
    samples = [options, poptorch.Stage("A"), poptorch.Phase("A"),
               poptorch.PipelinedExecution("A"), poptorch.ShardedExecution("A"),
               poptorch.SerialPhasedExecution(poptorch.Phase("A")),
               poptorch.ParallelPhasedExecution(poptorch.Phase("A")),
               poptorch.TensorLocationSettings(), poptorch.Block("A"), poptorch.MultiConv(),
               model, poptorch.DataLoader(options, torch.zeros(4, 2)),
               *[getattr(options, g.name) for g in groups(type(options))],
               *[cls(parameter, lr=0.1) for cls in (poptorch.optim.SGD, poptorch.optim.Adam,
                                                     poptorch.optim.AdamW,
                                                     poptorch.optim.RMSprop,
                                                     poptorch.optim.LAMB)]]
    walk = surface.Walk(
        surface.Real("poptorch-3.4.0"),
        modules={"ipu_tutorials.poptorch": "poptorch",
                 "ipu_tutorials.poptorch.optim": "poptorch.optim",
                 "ipu_tutorials.poptorch.enums": "poptorch.enums"},
        instances={type(s): s for s in samples},
        outside=[torch.optim.SGD(parameter, lr=0.1), torch.optim.Adam(parameter),
                 torch.optim.AdamW(parameter), torch.optim.RMSprop(parameter),
                 torch.optim.Optimizer(parameter, {}), torch.nn.Module(),
                 torch.utils.data.DataLoader(torch.zeros(4, 2))])
    # the option groups hang off Options (opts.Training ...): PopTorch's private classes
    for group in groups(type(options)):
        if group.name.startswith("_"):
            continue  # opts._Popart: private in PopTorch too
        walk.classes[group.cls] = (f"poptorch.Options.{group.name}",
                                   f"poptorch.options.{group.cls.__name__}")
        walk.built_inside.add(group.cls)
    return walk


def optimum_walk() -> surface.Walk:
    from ipu_tutorials.optimum.graphcore import IPUConfig

    releases = ("v0.7.1", "v0.7.0", "v0.6.1", "v0.6.0", "v0.5.0", "v0.2.3", "v0.2.1")
    return surface.Walk(
        surface.Real(*[f"optimum-graphcore-{r}" for r in releases]),
        modules={"ipu_tutorials.optimum.graphcore": "optimum.graphcore",
                 "ipu_tutorials.optimum.graphcore.ipu_configuration":
                     "optimum.graphcore.ipu_configuration",
                 "ipu_tutorials.optimum.graphcore.modeling_utils":
                     "optimum.graphcore.modeling_utils"},
        instances={IPUConfig: IPUConfig()})


def lightning_walk() -> surface.Walk:
    from ipu_tutorials.lightning import IPUAccelerator, IPUPrecisionPlugin, IPUStrategy

    samples = [IPUAccelerator(), IPUStrategy(), IPUPrecisionPlugin("32-true")]
    return surface.Walk(
        surface.Real("lightning-2.0.9"),
        modules={"ipu_tutorials.lightning": ("lightning.pytorch.strategies.ipu",
                                             "lightning.pytorch.accelerators.ipu",
                                             "lightning.pytorch.plugins.precision.ipu")},
        instances={type(s): s for s in samples})


WALKS = {"poptorch": poptorch_walk, "optimum-graphcore": optimum_walk,
         "lightning": lightning_walk}


def all_findings(declared: bool = True) -> list[surface.Finding]:
    """Every finding of every facade; with `declared`, without those the registry declares."""
    findings = []
    for walk in WALKS.values():
        findings += walk().run()
    if declared:
        findings = [f for f in findings if not extras_registry.declares(f.kind, f.name)]
    return findings
