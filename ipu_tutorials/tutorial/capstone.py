"""The capstone's Pod16 recipe: six choices -> a BERT model in blocks and its poptorch.Options.

Lesson 15, its explorer and its exercises all build the model and the options here, so the
BERT-Large plan on the meta device and the tiny BERT trained for real go through the same
code. The model is the calibration's BERT-Large (calibration/published_runs.py plans it), so the
default configuration is the published Bow Pod16 run: 4 IPUs x 4 replicas, accumulation 2048, float16,
LAMB state off chip, a recomputation checkpoint after every layer.
"""
from __future__ import annotations

import dataclasses

import torch

from .. import poptorch
from ..errors import OutOfMemoryError
from .models import BertPretraining

POD_IPUS = 16  # a Pod16: 4 IPU-M2000 (or Bow-2000) machines of 4 IPUs
BERT_LARGE_LAYERS = 24
HEAD_LAYERS = 4  # IPU 0's embedding and tied MLM head weigh about 4 layers: (3, 7, 7, 7) on 4 IPUs
MICRO_BATCH, SEQUENCE, MASKED = 8, 128, 20  # phase 1: length 128, 20 masked tokens per sequence
# pretrain_large_128's loss_scaling (graphcore/examples@v3.4.1 nlp/bert/pytorch/
# configs_pretraining.yml): keeps float16 gradients above the underflow threshold (lesson 9)
LOSS_SCALING = 4096.0
BERT_PACKING_RATIO = 1.17  # sequences per packed row at length 128 (the config's packing_factor)


@dataclasses.dataclass(frozen=True)
class PodConfig:
    """One way to run BERT on a Pod16.

    Attributes:
        ipus_per_replica: pipeline depth; the layers are split over these IPUs.
        replicas: data-parallel copies of the pipeline.
        accumulation: micro-batches per weight update and replica.
        half: float16 weights and activations, with float16 partials.
        offload: the optimizer state in streaming memory, sharded over the replicas.
        recompute: a recomputation checkpoint after every layer.
    """

    ipus_per_replica: int = 4
    replicas: int = 4
    accumulation: int = 2048
    half: bool = True
    offload: bool = True
    recompute: bool = True

    @property
    def ipus(self) -> int:
        return self.ipus_per_replica * self.replicas

    def samples_per_update(self, micro_batch: int = MICRO_BATCH) -> int:
        """Sequences in one weight update: micro-batch x accumulation x replicas."""
        return micro_batch * self.accumulation * self.replicas


PUBLISHED = PodConfig()


def layers_per_ipu(ipus: int, depth: int = BERT_LARGE_LAYERS) -> tuple[int, ...]:
    """Split `depth` layers over `ipus` IPUs, IPU 0 also holding the embedding and heads.

    IPU 0 counts as HEAD_LAYERS layers already; the rest is spread evenly, the later IPUs
    taking one more when it does not divide. layers_per_ipu(4) == (3, 7, 7, 7), as published.

    Raises:
        ValueError: fewer than one IPU, or more IPUs than layers plus one.
    """
    if not 1 <= ipus <= depth + 1:
        raise ValueError(f"{depth} layers split over 1 to {depth + 1} IPUs, got {ipus}")
    if ipus == 1:
        return (depth,)
    first = max(0, min(depth, round((depth + HEAD_LAYERS) / ipus) - HEAD_LAYERS))
    rest, extra = divmod(depth - first, ipus - 1)
    return (first,) + tuple(rest + (i >= ipus - 1 - extra) for i in range(ipus - 1))


def bert(config: PodConfig, width: int = 1024, depth: int = BERT_LARGE_LAYERS, heads: int = 16,
         vocab: int = 30522, device: str = "meta") -> BertPretraining:
    """BERT (Large by default) in one block per layer, placed for `config`.

    Args:
        config: its IPUs per replica place the layers; half and recompute shape the model.
        width, depth, heads, vocab: the BERT size; the tiny real run passes small ones.
        device: "meta" to plan without memory, "cpu" to train.
    """
    with torch.device(device):
        model = BertPretraining(vocab, width, depth, heads, SEQUENCE,
                                layers_per_ipu(config.ipus_per_replica, depth),
                                recompute=config.recompute)
    return model.half() if config.half else model


def options(config: PodConfig, plan_only: bool = True) -> poptorch.Options:
    """The PopTorch options of `config`, as the published BERT run sets them.

    Args:
        config: the six choices.
        plan_only: compile offline for the simulator's Bow chip (useOfflineIpuTarget(21), which
            PopTorch reads as the C600's ipu21; docs/differences.md): a plan, no run.
    """
    opts = poptorch.Options().replicationFactor(config.replicas)
    opts.outputMode(poptorch.OutputMode.Final).showCompilationProgressBar(False)
    opts.setExecutionStrategy(poptorch.PipelinedExecution(poptorch.AutoStage.AutoIncrement))
    opts.Training.gradientAccumulation(config.accumulation)
    opts.TensorLocations.setOptimizerLocation(
        poptorch.TensorLocationSettings().useOnChipStorage(not config.offload)
        .useReplicatedTensorSharding(config.offload and config.replicas > 1))
    # IPU 0 keeps more room for the embedding's and the head's temporaries, as published
    opts.setAvailableMemoryProportion({f"IPU{i}": 0.15 if i == 0 else 0.25
                                       for i in range(config.ipus_per_replica)})
    if config.half:
        opts.Precision.setPartialsType(torch.half)
    if plan_only:
        opts.useOfflineIpuTarget(21)
    return opts


def optimizer(model: torch.nn.Module, config: PodConfig, lr: float = 1e-3) -> poptorch.optim.LAMB:
    """LAMB, its accumulators in float16 when the model is."""
    return poptorch.optim.LAMB(model.parameters(), lr=lr,
                               loss_scaling=LOSS_SCALING if config.half else 1.0,
                               accum_type=torch.float16 if config.half else torch.float32)


def batch(config: PodConfig, device: str = "meta", vocab: int = 30522,
          micro_batch: int = MICRO_BATCH, seed: int = 0) -> tuple[torch.Tensor, ...]:
    """One call's tokens, masked positions and masked labels (random on a real device)."""
    rows = micro_batch * config.accumulation * config.replicas
    if device == "meta":
        return tuple(torch.zeros(rows, n, dtype=torch.long, device="meta")
                     for n in (SEQUENCE, MASKED, MASKED))
    generator = torch.Generator().manual_seed(seed)
    return (torch.randint(0, vocab, (rows, SEQUENCE), generator=generator),
            torch.randint(0, SEQUENCE, (rows, MASKED), generator=generator),
            torch.randint(0, vocab, (rows, MASKED), generator=generator))


def plan_pod16(config: PodConfig, check_memory: bool = True):
    """Compile BERT-Large under `config` for a Bow Pod16 on the meta device; return the plan.

    Raises:
        poptorch.Error: a placement or batching rule is broken (too many IPUs, too little
            accumulation for the pipeline).
        OutOfMemoryError: an IPU does not hold its share; `error.plan` is the memory plan.
    """
    model = bert(config)
    training = poptorch.trainingModel(model, options(config), optimizer(model, config))
    try:
        training.compile(*batch(config))
        return training.plan
    finally:
        training.destroy()


def sequences_per_second(plan) -> float:
    """The plan's throughput in published units: packed sequences (1.17 per row at 128)."""
    return plan.samples_per_second * BERT_PACKING_RATIO


__all__ = ["PodConfig", "PUBLISHED", "OutOfMemoryError", "layers_per_ipu", "bert", "options",
           "optimizer", "batch", "plan_pod16", "sequences_per_second"]
