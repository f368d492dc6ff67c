"""The per-IPU memory plan: what each IPU holds on chip, what lives in streaming memory, and OOM.

Always-live and transient memory are simply added, so the plan is an upper bound, as a
compiler's worst case is. Code size has no public figure: CODE_BASE_BYTES and CODE_PER_OP_BYTES
are explicit teaching parameters.
"""
from __future__ import annotations

import dataclasses

from ..errors import OutOfMemoryError
from .capture import HOST, Graph, Op
from .config import PIPELINED, RunConfig
from .costs import available_memory, temp_bytes
from .hardware import KiB, MiB
from .placement import Placement, Stage, stage_params

CODE_BASE_BYTES = 16 * MiB  # per IPU: control program, runtime and host-exchange code (assumed)
CODE_PER_OP_BYTES = 128 * KiB  # vertex and exchange code of one compute step (assumed)
CATEGORIES = ("code", "weights", "gradients", "optimizer", "activations", "stash", "exchange",
              "temporaries")


def format_bytes(num_bytes: float) -> str:
    """1536 -> '1.5 KiB'."""
    for unit, size in (("GiB", 1024**3), ("MiB", MiB), ("KiB", KiB)):
        if abs(num_bytes) >= size:
            return f"{num_bytes / size:,.1f} {unit}"
    return f"{int(num_bytes)} B"


@dataclasses.dataclass
class IpuMemory:
    ipu: int
    capacity: int
    code: int = 0
    weights: int = 0
    gradients: int = 0
    optimizer: int = 0
    activations: int = 0
    stash: int = 0
    exchange: int = 0
    temporaries: int = 0
    off_chip: dict[str, int] = dataclasses.field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(getattr(self, c) for c in CATEGORIES)

    @property
    def fits(self) -> bool:
        return self.total <= self.capacity

    @property
    def utilisation(self) -> float:
        return self.total / self.capacity

    def as_dict(self) -> dict:
        return {"ipu": self.ipu, "capacity": self.capacity, "total": self.total,
                **{c: getattr(self, c) for c in CATEGORIES}, "off_chip": dict(self.off_chip)}


@dataclasses.dataclass
class MemoryPlan:
    ipus: list[IpuMemory]
    streaming_capacity: int

    @property
    def fits(self) -> bool:
        return all(m.fits for m in self.ipus) and all(
            sum(m.off_chip.values()) <= self.streaming_capacity for m in self.ipus)

    def __getitem__(self, ipu: int) -> IpuMemory:
        return self.ipus[ipu]

    def __repr__(self) -> str:
        return f"MemoryPlan({'fits' if self.fits else 'out of memory'}):\n{self.table()}"

    def table(self) -> str:
        """One row per IPU, sizes in binary units, over-capacity rows marked."""
        header = ["IPU", *CATEGORIES, "total", "of", "use", "off chip"]
        rows = [header]
        for m in self.ipus:
            rows.append([str(m.ipu), *(format_bytes(getattr(m, c)) for c in CATEGORIES),
                         format_bytes(m.total), format_bytes(m.capacity),
                         f"{m.utilisation:.0%}" + ("" if m.fits else " OOM"),
                         format_bytes(sum(m.off_chip.values()))])
        widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
        return "\n".join("  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in rows)

    def check(self) -> None:
        """Raise OutOfMemoryError, showing the whole plan and the ways out, if anything is over."""
        over = [m for m in self.ipus if not m.fits]
        if not over and self.fits:
            return
        lines = [f"IPU {m.ipu} needs {format_bytes(m.total)} but has {format_bytes(m.capacity)} "
                 f"({format_bytes(m.total - m.capacity)} over)" for m in over]
        if not over:
            lines = [f"streaming memory holds {format_bytes(self.streaming_capacity)} per IPU"]
        raise OutOfMemoryError(
            "Out of memory: " + "; ".join(lines) + ".\n\n" + self.table() + "\n\n"
            "Ways to fit: move optimizer state off chip (opts.TensorLocations.setOptimizerLocation("
            "poptorch.TensorLocationSettings().useOnChipStorage(False))), spread the blocks over "
            "more IPUs, use half precision (model.half()), shrink the micro-batch, or lower "
            "availableMemoryProportion.", plan=self)


def _stage_inputs(graph: Graph, stage: Stage) -> int:
    return sum(size for (src, dst), size in graph.edges.items()
               if dst in stage.blocks and src not in stage.blocks)


def _stage_traffic(graph: Graph, stage: Stage, training: bool) -> int:
    """Bytes crossing the stage's boundary for one micro-batch (gradients flow back too)."""
    crossing = sum(size for (src, dst), size in graph.edges.items()
                   if (src in stage.blocks) != (dst in stage.blocks))
    host = sum(size for (src, dst), size in graph.edges.items() if src == HOST and dst in stage.blocks)
    outputs = sum(graph.output_bytes.get(b, 0) for b in stage.blocks)
    return (crossing - host) * (2 if training else 1) + host + outputs


def _activations(ops: list[Op], training: bool, recompute: bool) -> int:
    """Activations live at once for one micro-batch.

    Training keeps every forward result for the backward pass; when the pipeline recomputes,
    only one recomputation segment (between checkpoints) is rebuilt at a time. Inference
    needs only the largest op's inputs and outputs.
    """
    if not training:
        return max((op.bytes_in + op.bytes_out for op in ops), default=0)
    segments: dict[int, int] = {}
    for op in ops:
        segments[op.segment] = segments.get(op.segment, 0) + op.bytes_out
    return max(segments.values(), default=0) if recompute else sum(segments.values())


def _stash_depth(stage: Stage, placement: Placement, config: RunConfig) -> int:
    """Micro-batches whose inputs a pipeline stage holds until their backward: 2(N-1-s)+1."""
    n = len(placement.stages)
    if not config.training or config.strategy.kind != PIPELINED or n < 2:
        return 0
    return 2 * (n - 1 - stage.index) + 1


def _split(amounts: list[int], on_chip: bool, streams_through: bool) -> tuple[int, int]:
    """(on chip, off chip) for one tensor kind given per-stage amounts on one IPU.

    Off-chip tensors still visit the chip while in use, one stage at a time, except optimizer
    state, which streams through memory the activations free during the weight update.
    """
    if on_chip:
        return sum(amounts), 0
    return (0 if streams_through else max(amounts, default=0)), sum(amounts)


def _param_kinds(graph: Graph, names: list[str], config: RunConfig) -> dict[str, list[int]]:
    """Weights, gradients and optimizer state of some parameters, split into (on, off) chip."""
    opt = config.optimizer
    result = {"weights": [0, 0], "gradients": [0, 0], "optimizer": [0, 0]}
    for name in names:
        p = graph.params[name]
        sizes = {"weights": p.bytes}
        if config.training and p.trainable:
            sizes["gradients"] = p.numel * (opt.accum_bytes or p.dtype_bytes)
            state = p.numel * opt.state_per_param * opt.state_bytes
            sharding = config.location("optimizer")
            if sharding.replicated_sharding and config.replicas > 1 \
                    and p.numel >= sharding.min_elements_sharding:
                state //= config.replicas
            sizes["optimizer"] = state
        for kind, location in (("weights", "weight"), ("gradients", "accumulator"),
                               ("optimizer", "optimizer")):
            loc = config.location(location)
            off = not loc.on_chip and p.numel >= loc.min_elements_off_chip
            result[kind][1 if off else 0] += sizes.get(kind, 0)
    return result


def plan_memory(graph: Graph, placement: Placement, config: RunConfig) -> MemoryPlan:
    """The memory plan of one replica (every replica holds the same)."""
    spec = config.system.ipu
    ipus = []
    for ipu in range(placement.ipus_per_replica):
        stages = placement.stages_on(ipu)
        memory = IpuMemory(ipu=ipu, capacity=spec.memory_bytes)
        per_stage = []
        for stage in stages:
            ops = [op for op in graph.ops if op.block in stage.blocks]
            kinds = _param_kinds(graph, stage_params(graph, stage), config)
            kinds["weights"][0] += sum(graph.buffers_bytes.get(b, 0) for b in stage.blocks)
            per_stage.append((stage, ops, kinds))
        compute_ops = [op for _, ops, _ in per_stage for op in ops if op.kind != "view"]
        memory.code = CODE_BASE_BYTES + CODE_PER_OP_BYTES * len(compute_ops) * (
            3 if config.training else 1)
        for kind in ("weights", "gradients", "optimizer"):
            on = [k[kind][0] for _, _, k in per_stage]
            off = [k[kind][1] for _, _, k in per_stage]
            on_chip, off_chip = _split(off, False, kind == "optimizer")
            setattr(memory, kind, sum(on) + on_chip)
            if off_chip:
                memory.off_chip[kind] = off_chip
        recompute = _stash_depth(stages[0], placement, config) > 0 if stages else False
        acts = [_activations(ops, config.training, recompute) for _, ops, _ in per_stage]
        on_chip, off_chip = _split(acts, config.location("activation").on_chip, False)
        memory.activations = on_chip
        if off_chip:
            memory.off_chip["activations"] = off_chip
        memory.stash = sum(_stash_depth(s, placement, config) * (
            _stage_inputs(graph, s) + sum(graph.checkpoint_bytes.get(b, 0) for b in s.blocks))
            for s in stages)
        memory.exchange = sum(_stage_traffic(graph, s, config.training) for s in stages)
        capacity = spec.memory_bytes
        memory.temporaries = max((min(temp_bytes(op, config.partials_bytes),
                                      available_memory(op, ipu, config) * capacity)
                                  for op in compute_ops), default=0)
        memory.temporaries = int(memory.temporaries)
        ipus.append(memory)
    return MemoryPlan(ipus, config.system.streaming_bytes_per_ipu)
