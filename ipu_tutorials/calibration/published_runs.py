"""Runs Graphcore published, rebuilt as simulator plans: the calibration of the cost model.

Each run is configured as its published source configures it (the "Calibration against
published runs" table in docs/cost-model.md names each source and shows the result).
Models are built on the meta device, so planning needs no weights and no download.

- Graphcore's PyTorch pipelining tutorial (graphcore/tutorials@198c92b:tutorials/pytorch/pipelining/
  README.md, 15.04 and 14.89 it/s): 4 IPUs pipelined, micro-batch 40, D 10, A 10, AdamW,
  optimizer state off chip, OutputMode.All; about 15 calls of 4,000 images per second;
- BERT-Large phase 1 on a Bow Pod16 as graphcore/examples nlp/bert/pytorch runs it
  (graphcore/examples@v3.4.1:nlp/bert/pytorch/configs_pretraining.yml `pretrain_large_128`):
  embedding, 3 layers and the tied MLM head over 20 masked tokens on IPU 0, 7 layers on each of
  IPUs 1-3, one block per layer with AutoStage.AutoIncrement, a recomputation checkpoint after
  every layer, LAMB with float16 accumulators and its state off chip and sharded over 4
  replicas, half partials, available memory [0.15, 0.25, 0.25, 0.25]; 5,600 sequences/s;
- ResNet-50 on a Bow Pod16 as the TensorFlow 1 benchmark `resnet50_mlperf_pod16_bs20` ran it
  (graphcore/examples@8ae588c:vision/cnns/tensorflow1/training/configs.yml): 16 replicas of one
  IPU, micro-batch 20, A 6, float16, half partials, available memory 0.15, recomputation with
  six checkpoints (RecomputeAll), 8-bit input, 8 host processes (poprun --num-instances 8);
  42,029 images/s.
"""
from __future__ import annotations

import dataclasses

import torch
import torch.nn as nn

from .. import poptorch
from ..poptorch import _to_simulator
from ..simulator import capture, compile_plan
from ..simulator.compile import Plan
from ..simulator.hardware import System, ipu_spec
from ..support import environment
from ..tutorial.capstone import BERT_PACKING_RATIO
from ..tutorial.loops import training_options
from ..tutorial.models import BertPretraining, Network, TrainingModelWithLoss, TransformerLayer

CALIBRATED = 1.1  # a calibration run's accepted ratio either way (validation runs: 1.25)
# BERT-Large phase 1, Bow Pod16: Graphcore's Performance Results page,
# https://www.graphcore.ai/performance-results (Bow Pod training table, "BERT Large Ph1
# Pre-Training (SL128) - Packed, Bow Pod16, SDK 3.3, PyTorch", 5,600 items/s; an SDK 3.3 row,
# graphcore/examples v3.3.0 being tagged 2023-06-30; mirrored at
# https://www.graphcore.cn/performance-results/)
BERT_LARGE_SEQUENCES_PER_SECOND = 5_600


@dataclasses.dataclass(frozen=True)
class PublishedRun:
    """One published figure and the simulator's plan of the same configuration."""

    name: str
    unit: str
    published: float
    source: str
    tolerance: float  # the accepted ratio either way
    plan: Plan
    per_row: float = 1.0  # published samples per simulated sample (packing)

    @property
    def simulated(self) -> float:
        return self.plan.samples_per_second * self.per_row

    @property
    def ratio(self) -> float:
        """Simulated over published: above 1 the simulator is too fast."""
        return self.simulated / self.published


def plan_run(model, inputs, opts, optimizer, micro_batch: int, system: System) -> Plan:
    """Plan a model as poptorch.trainingModel(model, opts, optimizer) would compile it."""
    spec = dataclasses.replace(_to_simulator.options_spec(opts, True, optimizer, environment.read(),
                                                          micro_batch=micro_batch),
                               system=system)
    return compile_plan(capture(model, inputs, {}), spec)


def tutorial_run() -> PublishedRun:
    """The pipelining tutorial's published output, on an IPU-POD16 of GC200s."""
    torch.manual_seed(0)
    model = TrainingModelWithLoss(Network())
    opts = training_options("pipelined", 10, 10, offload_optimiser=True, output_all=True)
    optimizer = poptorch.optim.AdamW(model.parameters(), lr=1e-3)
    inputs = (torch.zeros(40, 1, 28, 28), torch.zeros(40, dtype=torch.long))
    plan = plan_run(model, inputs, opts, optimizer, 40, System(ipu_spec("ipu2"), 16))
    return PublishedRun("Pipelining tutorial, 4 GC200 pipelined, 4,000 images per call",
                        "images/s", 60_000,
                        "graphcore/tutorials@198c92b:tutorials/pytorch/pipelining/README.md: "
                        "~15 calls/s x 4,000 images", CALIBRATED, plan)


@dataclasses.dataclass(frozen=True)
class BertConfig:
    """The fields of graphcore/examples nlp/bert/pytorch configs_pretraining.yml the plan uses."""

    width: int = 1024
    depth: int = 24
    heads: int = 16
    context: int = 128
    mask_tokens: int = 20
    layers_per_ipu: tuple[int, ...] = (3, 7, 7, 7)
    micro_batch: int = 8
    replicas: int = 4
    accumulation: int = 2048
    matmul_proportion: tuple[float, ...] = (0.15, 0.25, 0.25, 0.25)
    instances: int = 1  # poprun --num-instances
    optimizer_off_chip: bool = True


def bert_plan(config: BertConfig, system: System) -> Plan:
    """BERT pretraining as graphcore/examples nlp/bert/pytorch runs it, planned on meta tensors."""
    with torch.device("meta"):
        model = BertPretraining(width=config.width, depth=config.depth, heads=config.heads,
                                context=config.context, layers_per_ipu=config.layers_per_ipu).half()
    opts = poptorch.Options().replicationFactor(config.replicas // config.instances)
    opts.outputMode(poptorch.OutputMode.Final)
    opts.setExecutionStrategy(poptorch.PipelinedExecution(poptorch.AutoStage.AutoIncrement))
    opts.Training.gradientAccumulation(config.accumulation)
    opts.TensorLocations.setOptimizerLocation(poptorch.TensorLocationSettings().useOnChipStorage(
        not config.optimizer_off_chip).useReplicatedTensorSharding(True))
    opts.setAvailableMemoryProportion({f"IPU{i}": p for i, p in enumerate(config.matmul_proportion)})
    opts.Precision.setPartialsType(torch.half)
    if config.instances > 1:
        opts.Distributed.configureProcessId(0, config.instances)
    optimizer = poptorch.optim.LAMB(model.parameters(), accum_type=torch.float16)
    b = config.micro_batch
    inputs = (torch.zeros(b, config.context, dtype=torch.long, device="meta"),
              torch.zeros(b, config.mask_tokens, dtype=torch.long, device="meta"),
              torch.zeros(b, config.mask_tokens, dtype=torch.long, device="meta"))
    return plan_run(model, inputs, opts, optimizer, b, system)


def bert_large_run() -> PublishedRun:
    """BERT-Large phase 1 (sequence length 128) on a Bow Pod16."""
    plan = bert_plan(BertConfig(), System(ipu_spec("ipu21"), 16))
    return PublishedRun("BERT-Large phase 1, Bow Pod16, 4 IPUs x 4 replicas", "sequences/s",
                        BERT_LARGE_SEQUENCES_PER_SECOND,
                        "graphcore/examples nlp/bert/pytorch, SDK 3.3, packed", CALIBRATED, plan,
                        per_row=BERT_PACKING_RATIO)


class ResNet50(nn.Module):
    """torchvision's ResNet-50 fed 8-bit images, cast to float16 on the IPU, with a loss."""

    CHECKPOINTS = ("maxpool", "layer1.0", "layer1.1", "layer1.2", "layer2.1", "layer3.0")

    def __init__(self):
        super().__init__()
        import torchvision  # imported here: only this run needs it
        self.net = torchvision.models.resnet50()
        self.loss = nn.CrossEntropyLoss()
        modules = dict(self.net.named_modules())
        # six checkpoints, as the TF1 config's six pipeline splits on one IPU; placed here to
        # balance the seven recomputation segments (the config's own split points differ)
        for name in self.CHECKPOINTS:
            modules[name].register_forward_hook(
                lambda module, args, out: poptorch.recomputationCheckpoint(out))

    def forward(self, images, labels):
        logits = self.net(images.half())
        return logits, self.loss(logits, labels)


def resnet50_tf1_plan(replicas: int = 16, accumulation: int = 6, proportion: float = 0.15,
                      instances: int = 8) -> Plan:
    """ResNet-50 as the TF1 MLPerf configs run it: one IPU per replica, micro-batch 20."""
    with torch.device("meta"):
        model = ResNet50().half()
    opts = poptorch.Options().replicationFactor(replicas // instances)
    opts.Training.gradientAccumulation(accumulation)
    opts.setAvailableMemoryProportion({"IPU0": proportion})
    opts.Precision.setPartialsType(torch.half)
    opts._Popart.set("autoRecomputation", 4)  # RecomputeAll
    opts.Distributed.configureProcessId(0, instances)  # poprun --num-instances
    optimizer = poptorch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    inputs = (torch.zeros(20, 3, 224, 224, dtype=torch.uint8, device="meta"),
              torch.zeros(20, dtype=torch.long, device="meta"))
    return plan_run(model, inputs, opts, optimizer, 20, System(ipu_spec("ipu21"), replicas))


def resnet50_run() -> PublishedRun:
    """ResNet-50 training on a Bow Pod16, 16 replicas of one IPU (8 instances of 2 replicas)."""
    return PublishedRun("ResNet-50, Bow Pod16, 16 replicas of 1 IPU", "images/s", 42_029,
                        "graphcore/examples TF1 resnet50_mlperf_pod16_bs20", CALIBRATED,
                        resnet50_tf1_plan())


def bert_large_pod64_run() -> PublishedRun:
    """The same BERT-Large on a Bow Pod64 (16 replicas, A 512): calibrates the instances' host
    work (collectives.INSTANCE_MICRO_BATCH_SECONDS) with bert_large_run."""
    config = BertConfig(replicas=16, accumulation=512, matmul_proportion=(0.14, 0.19, 0.19, 0.19))
    return PublishedRun("BERT-Large phase 1, Bow Pod64, 4 IPUs x 16 replicas", "sequences/s",
                        18_442, "graphcore.ai/performance-results, PyTorch SDK 3.2; graphcore/"
                        "examples nlp/bert/pytorch pretrain_large_128_POD64, packed", CALIBRATED,
                        bert_plan(config, System(ipu_spec("ipu21"), 64)), per_row=BERT_PACKING_RATIO)


def all_runs() -> list[PublishedRun]:
    return [tutorial_run(), bert_large_run(), bert_large_pod64_run(), resnet50_run()]


def calibration_table(runs: list[PublishedRun]) -> str:
    """The calibration table of docs/cost-model.md: published / simulated / ratio, in Markdown."""
    rows = ["| published run | published | simulated | ratio (accepted) |",
            "| --- | --- | --- | --- |"]
    for run in runs:
        rows.append(f"| {run.name} ({run.source}) | {run.published:,.0f} {run.unit} | "
                    f"{run.simulated:,.0f} {run.unit} | {run.ratio:.2f} "
                    f"({1 / run.tolerance:.2f}-{run.tolerance:.2f}) |")
    return "\n".join(rows)
