"""Memory tuning: recomputation, availableMemoryProportion and serialisation -> memory and time.

Every figure comes from compiling a GPT-like language model, built on the meta device, with
poptorch.trainingModel on 4 IPUs: the bars are the simulator's own memory plan and the time is
its own simulated step. The model is lesson 7's; its exercises build on the same functions.
"""
from __future__ import annotations

import dataclasses
import functools

import torch

from ... import poptorch
from ...errors import OutOfMemoryError
from ...optimum.graphcore.modeling_utils import SerializedEmbedding
from ...profiling.plots import plot_memory
from ...simulator.compile import Plan
from ...simulator.memory import IpuMemory, MemoryPlan, embedding_gradient_bytes
from ...simulator.units import format_bytes
from ...tutorial.models import TransformerLM, split_layers
from ..plans import plan_on_meta
from .widgets import FIGURE_INCHES, Explorer, choice

# A GPT-2-small-like decoder (width, heads, context), 8 layers, a 32,000-token vocabulary.
VOCAB, WIDTH, DEPTH, HEADS, CONTEXT = 32_000, 768, 8, 12, 512
MICRO_BATCH, ACCUMULATION, IPUS = 4, 16, 4
RECOMPUTATION = {  # the explorer's choices -> (autoRecomputation value or None, checkpoints)
    "off (autoRecomputation 0)": (0, False),
    "pipeline default": (None, False),
    "checkpoint every layer": (None, True),
}


class TunableLM(TransformerLM):
    """TransformerLM returning only its loss, with a serialisable vocabulary projection.

    Args:
        head_serialization: the output projection onto the vocabulary runs as this many
            poptorch.serializedMatMul slices of the vocabulary (OutputChannels); 1 runs it whole.
        kwargs: TransformerLM's (vocab, width, depth, heads, context,
            recompute_checkpoint_every_layer).
    """

    def __init__(self, head_serialization: int = 1, **kwargs):
        super().__init__(**kwargs)
        self.head_serialization = head_serialization

    def forward(self, tokens, labels):  # tokens, labels: (B, T)
        x = self.embed(tokens) + self.position[: tokens.shape[1]]
        for layer in self.layers:
            x = layer(x)
            if self.checkpoint_every_layer:  # stash layer outputs, recompute one layer at a time
                x = poptorch.recomputationCheckpoint(x)
        x = self.norm(x)
        if self.head_serialization > 1:
            logits = poptorch.serializedMatMul(x, self.head.weight.t(),
                                               poptorch.MatMulSerializationMode.OutputChannels,
                                               self.head_serialization)
        else:
            logits = self.head(x)  # (B, T, vocab)
        return self.loss(logits.flatten(0, 1), labels.flatten())


def build_model(checkpoints: bool = False, head_serialization: int = 1,
                embedding_serialization: int = 1) -> TunableLM:
    """Lesson 7's model on the meta device in float16, two layers per IPU on 4 IPUs.

    Args:
        checkpoints: poptorch.recomputationCheckpoint after every layer.
        head_serialization: slices of the vocabulary projection (serializedMatMul).
        embedding_serialization: slices of the token embedding (optimum-graphcore's
            SerializedEmbedding, as embedding_serialization_factor builds it).
    """
    with torch.device("meta"):
        model = TunableLM(head_serialization, vocab=VOCAB, width=WIDTH, depth=DEPTH,
                          heads=HEADS, context=CONTEXT,
                          recompute_checkpoint_every_layer=checkpoints).half()
        if embedding_serialization > 1:
            model.embed = SerializedEmbedding(model.embed, embedding_serialization)
    return split_layers(model, [DEPTH // IPUS] * IPUS)


def starting_options() -> poptorch.Options:
    """The lesson's options: pipelined over 4 IPUs, gradient accumulation 16, all on chip."""
    opts = poptorch.Options()
    opts.Training.gradientAccumulation(ACCUMULATION)
    return opts


def tokens(opts: poptorch.Options | None = None) -> torch.Tensor:
    """One call's token ids (and labels) on the meta device: micro-batches of MICRO_BATCH
    sequences, as many as `opts` consume in a call (the lesson's options when None)."""
    opts = opts or starting_options()
    micro_batches = (opts.Training.gradient_accumulation * opts.device_iterations
                     * opts.replication_factor)
    return torch.zeros(MICRO_BATCH * micro_batches, CONTEXT, dtype=torch.long, device="meta")


@dataclasses.dataclass
class Outcome:
    """What compiling one configuration gave: its memory plan and, if it fits, its plan."""

    memory: MemoryPlan
    plan: Plan | None  # None when it does not fit

    @property
    def fits(self) -> bool:
        return self.plan is not None

    @property
    def step_ms(self) -> float:
        """Simulated milliseconds of one call (one weight update)."""
        return self.plan.call_seconds * 1e3

    def fullest(self) -> IpuMemory:
        return max(self.memory.ipus, key=lambda m: m.total)

    def largest_lookup_gradient(self) -> int:
        """Bytes of the largest embedding lookup's gradient temporary (0 with no plan)."""
        if self.plan is None:
            return 0
        graph = self.plan.graph
        return max((embedding_gradient_bytes(op, graph) for op in graph.ops), default=0)


def compile_tuned(model: torch.nn.Module, opts: poptorch.Options) -> Outcome:
    """Compile `model` for training under `opts` with SGD with momentum (float16 gradient
    accumulators, float32 momentum: 8 bytes of weight, gradient and state per parameter).

    Raises:
        poptorch.Error: a placement or batching rule is broken.
    """
    optimizer = poptorch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9,
                                   accum_type=torch.float16)
    try:
        plan = plan_on_meta(model, opts, optimizer, tokens(opts), tokens(opts))
        return Outcome(plan.memory, plan)
    except OutOfMemoryError as error:  # the planner shows plans that do not fit, too
        return Outcome(error.plan, None)


def tune(recomputation: str = "pipeline default", proportion: float = 0.6,
         head_serialization: int = 1, embedding_serialization: int = 1) -> Outcome:
    """The explorer's settings compiled (cached: the same settings give the same plan).

    Args:
        recomputation: one of RECOMPUTATION's keys.
        proportion: availableMemoryProportion of every IPU.
        head_serialization: serializedMatMul slices of the vocabulary projection.
        embedding_serialization: SerializedEmbedding slices of the token embedding.
    Raises:
        ValueError: an unknown recomputation choice.
    """
    return _tune(recomputation, float(proportion), head_serialization, embedding_serialization)


@functools.lru_cache(maxsize=32)
def _tune(recomputation: str, proportion: float, head_serialization: int,
          embedding_serialization: int) -> Outcome:
    if recomputation not in RECOMPUTATION:
        raise ValueError(f"unknown recomputation {recomputation!r}; choose one of "
                         f"{', '.join(RECOMPUTATION)}")
    auto, checkpoints = RECOMPUTATION[recomputation]
    opts = starting_options()
    if auto is not None:
        opts._Popart.set("autoRecomputation", auto)
    opts.setAvailableMemoryProportion({f"IPU{i}": proportion for i in range(IPUS)})
    return compile_tuned(build_model(checkpoints, head_serialization, embedding_serialization),
                         opts)


def describe(outcome: Outcome) -> str:
    """One line: fits or not, the fullest IPU and its largest part, and the step's time."""
    worst = outcome.fullest()
    parts = {c: getattr(worst, c) for c in ("activations", "stash", "temporaries", "weights",
                                            "optimizer")}
    largest = max(parts, key=parts.get)
    head = (f"fullest IPU {worst.ipu}: {format_bytes(worst.total)} of "
            f"{format_bytes(worst.capacity)}, largest part {largest} "
            f"{format_bytes(parts[largest])}")
    if not outcome.fits:
        return f"out of memory; {head}; no step time (no executable)"
    return (f"fits; {head}; simulated step {outcome.step_ms:,.1f} ms, "
            f"{outcome.plan.samples_per_second:,.1f} sequences/s")


def memory_tuning_explorer(recomputation: str = "pipeline default", proportion: float = 0.6,
                           head_serialization: int = 1,
                           embedding_serialization: int = 1) -> Explorer:
    """Per-IPU memory and step time as recomputation, the available memory proportion and
    the serialisation of the vocabulary projection and of the embedding change."""
    controls = {
        "recomputation": choice("recomputation", list(RECOMPUTATION), recomputation),
        "proportion": choice("availableMemoryProportion", [0.05, 0.1, 0.2, 0.3, 0.45, 0.6],
                             proportion),
        "head_serialization": choice("serializedMatMul factor (vocab projection)",
                                     [1, 2, 4, 8, 16], head_serialization),
        "embedding_serialization": choice("embedding serialisation", [1, 2, 4, 8],
                                          embedding_serialization),
    }

    def compute(**values):
        outcome = tune(**values)
        colour = "#2e7d32" if outcome.fits else "#c62828"
        text = f"<span style='color:{colour}'>{describe(outcome)}</span>"
        return {"outcome": outcome, "text": text}

    def draw(result, figure):
        plot_memory(result["outcome"].memory.ipus, ax=figure.subplots())

    return Explorer("Memory tuning explorer", controls, compute, draw, figsize=(FIGURE_INCHES, 3.8))
