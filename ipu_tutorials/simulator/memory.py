"""The per-IPU memory plan: what each IPU holds on chip, what lives in streaming memory, and OOM.

Always-live and transient memory are simply added, so the plan is an upper bound, as a
compiler's worst case is. Code size has no public figure: CODE_BASE_BYTES and CODE_PER_OP_BYTES
are explicit teaching parameters.
"""
from __future__ import annotations

import dataclasses

from ..errors import OutOfMemoryError
from . import phases
from .capture import HOST, Graph, Op
from .placement import Placement, Stage, stage_params
from .rules import pipelines, recomputes, stash_depth
from .spec import RunSpec
from .units import KiB, MiB, format_bytes

CODE_BASE_BYTES = 16 * MiB  # per IPU: control program, runtime and host-exchange code (assumed)
# vertex and exchange code of one distinct compute step (assumed). Identical ops (the same
# kind on the same shapes, as in repeated layers) share code: PopART outlines them by default
# (sessionoptions.hpp, enableOutlining = true), so code does not grow with the layer count.
CODE_PER_OP_BYTES = 128 * KiB
# availableMemoryProportion when unset (graphcore/poptorch@sdk/poptorch/3.4.0:python/ops.py,
# set_available_memory: "The default value is 0.6")
DEFAULT_AVAILABLE_MEMORY = 0.6
CATEGORIES = ("code", "weights", "gradients", "optimizer", "activations", "stash", "exchange",
              "temporaries")


def temp_bytes(op: Op, partials_bytes: int) -> int:
    """Temporary memory a matmul/conv would like: rearranged inputs plus partials."""
    return op.bytes_in + op.out_elements * partials_bytes if op.kind == "matmul" else 0


def embedding_gradient_bytes(op: Op, graph: Graph) -> int:
    """Temporary memory of an embedding lookup's gradient: the whole table's.

    The backward of a lookup scatters the gradient rows into a zeroed tensor the size of its
    table before that joins the weight's gradient (PopART's GatherGrad, a multiUpdateAdd), so
    the temporary grows with the vocabulary, not the batch. A SerializedEmbedding looks up k
    slices one after another: each wants 1/k of it. (An assumption of the simulator: the
    real planner's figure depends on tile layout; optimum-graphcore's SerializedEmbedding
    exists "to reduce memory in the embedding gradient calculation".)
    """
    if op.name != "aten.embedding" or not op.params:
        return 0
    return graph.params[op.params[0]].numel * op.dtype_bytes


def available_memory(op: Op, ipu: int, spec: RunSpec) -> float:
    """The proportion of an IPU's memory an op may use for temporaries (availableMemoryProportion)."""
    if op.available_memory is not None:
        return op.available_memory
    return spec.available_memory.get(ipu, DEFAULT_AVAILABLE_MEMORY)


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
    ways_to_fit: list[str] = dataclasses.field(default_factory=lambda: list(GENERIC_WAYS))

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
            "Ways to fit: " + ", ".join(self.ways_to_fit[:-1]) + ", or " + self.ways_to_fit[-1]
            + ".", plan=self)


GENERIC_WAYS = ("spread the blocks over more IPUs", "shrink the micro-batch")


def ways_to_fit(graph: Graph, placement: Placement, spec: RunSpec) -> list[str]:
    """The out-of-memory advice, leaving out what the configuration already does."""
    ways = []
    optimizer = spec.location("optimizer")
    if spec.training and spec.optimizer.state_per_param:
        if optimizer.on_chip:
            ways.append("move optimizer state off chip (opts.TensorLocations.setOptimizerLocation("
                        "poptorch.TensorLocationSettings().useOnChipStorage(False)))")
        elif spec.pod_replicas > 1 and not optimizer.replicated_sharding:
            ways.append("shard the off-chip optimizer state across replicas "
                        "(TensorLocationSettings().useReplicatedTensorSharding(True))")
    ways.append(GENERIC_WAYS[0])
    if any(p.dtype_bytes > 2 for p in graph.params.values()):
        ways.append("use half precision (model.half())")
    if spec.partials_bytes > 2:
        ways.append("use half partials (opts.Precision.setPartialsType(torch.half))")
    if spec.training and not recomputes(spec, len(placement.stages)):
        ways.append("recompute activations (poptorch.recomputationCheckpoint, with "
                    "opts._Popart.set(\"autoRecomputation\", 4) on one IPU)")
    ways.append(GENERIC_WAYS[1])
    if max(spec.available_memory.values(), default=DEFAULT_AVAILABLE_MEMORY) > 0.1:
        ways.append("lower availableMemoryProportion")
    return ways


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

    Training keeps every forward result for the backward pass; when the backward recomputes,
    only one recomputation segment (between checkpoints) is rebuilt at a time; the
    checkpoints themselves are counted by the stash. Inference needs only the largest op's
    inputs and outputs.
    """
    if not training:
        return max((op.bytes_in + op.bytes_out for op in ops), default=0)
    segments: dict[int, int] = {}
    for op in ops:
        segments[op.segment] = segments.get(op.segment, 0) + op.bytes_out
    return max(segments.values(), default=0) if recompute else sum(segments.values())


def _code_bytes(ops: list[Op], training: bool) -> int:
    """Code of one IPU: a base, plus each distinct compute step (forward, and in training its
    backward and recomputation); outlined repeats of one op share their code."""
    distinct = {(op.name, op.kind, op.flops, op.bytes_in, op.bytes_out) for op in ops}
    return CODE_BASE_BYTES + CODE_PER_OP_BYTES * len(distinct) * (3 if training else 1)


def _split(amounts: list[int], on_chip: bool, streams_through: bool) -> tuple[int, int]:
    """(on chip, off chip) for one tensor kind given per-stage amounts on one IPU.

    Off-chip tensors still visit the chip while in use, one stage at a time, except optimizer
    state, which streams through memory the activations free during the weight update.
    """
    if on_chip:
        return sum(amounts), 0
    return (0 if streams_through else max(amounts, default=0)), sum(amounts)


def _param_kinds(graph: Graph, names: list[str], spec: RunSpec) -> dict[str, list[int]]:
    """Weights, gradients and optimizer state of some parameters, split into (on, off) chip."""
    opt = spec.optimizer
    result = {"weights": [0, 0], "gradients": [0, 0], "optimizer": [0, 0]}
    for name in names:
        p = graph.params[name]
        sizes = {"weights": p.bytes}
        if spec.training and p.trainable:
            sizes["gradients"] = p.numel * (opt.accum_bytes or p.dtype_bytes)
            state = p.numel * opt.state_per_param * opt.state_bytes
            sharding = spec.location("optimizer")
            if (sharding.replicated_sharding and spec.pod_replicas > 1
                    and p.numel >= sharding.min_elements_sharding):
                state //= spec.pod_replicas
            sizes["optimizer"] = state
        for kind, location in (("weights", "weight"), ("gradients", "accumulator"),
                               ("optimizer", "optimizer")):
            loc = spec.location(location)
            off = not loc.on_chip and p.numel >= loc.min_elements_off_chip
            result[kind][1 if off else 0] += sizes.get(kind, 0)
    return result


def _stage_parts(graph: Graph, stages: list[Stage], spec: RunSpec) -> list[tuple]:
    """(stage, its ops, its parameter kinds split on/off chip) for the stages of one IPU."""
    parts = []
    for stage in stages:
        ops = [op for op in graph.ops if op.block in stage.blocks]
        kinds = _param_kinds(graph, stage_params(graph, stage), spec)
        kinds["weights"][0] += sum(graph.buffers_bytes.get(b, 0) for b in stage.blocks)
        parts.append((stage, ops, kinds))
    return parts


def _add_param_kinds(memory: IpuMemory, parts: list[tuple], peaks: dict[str, int] | None) -> None:
    """On-chip and off-chip parameters; phased runs hold what their phase ids overlap (peaks)."""
    for kind in ("weights", "gradients", "optimizer"):
        on = [k[kind][0] for _, _, k in parts]
        off = [k[kind][1] for _, _, k in parts]
        on_chip, off_chip = _split(off, False, kind == "optimizer")
        if peaks is not None and kind != "optimizer":
            on_chip = peaks.get(kind, 0)
        setattr(memory, kind, sum(on) + on_chip)
        if off_chip:
            memory.off_chip[kind] = off_chip


def _add_activations(memory: IpuMemory, graph: Graph, parts: list[tuple], placement: Placement,
                     spec: RunSpec) -> None:
    """Live activations, the pipeline's stash of stage inputs, and exchange buffers."""
    n = len(placement.stages)
    recompute = recomputes(spec, n)
    # a pipeline that does not recompute keeps every in-flight micro-batch's activations
    kept = pipelines(spec, n) and spec.training and not recompute
    acts = [_activations(ops, spec.training, recompute)
            * (stash_depth(spec, s.index, n) if kept else 1) for s, ops, _ in parts]
    on_chip, off_chip = _split(acts, spec.location("activation").on_chip, False)
    # stages of one IPU run one at a time: with recomputation, one segment is live at once
    memory.activations = max(acts, default=0) if recompute and on_chip else on_chip
    if off_chip:
        memory.off_chip["activations"] = off_chip
    # checkpoints are stashed only when the backward recomputes from them
    memory.stash = sum(stash_depth(spec, s.index, n) * (_stage_inputs(graph, s) + (
        sum(graph.checkpoint_bytes.get(b, 0) for b in s.blocks) if recompute else 0))
        for s, _, _ in parts)
    traffic = [_stage_traffic(graph, s, spec.training) for s, _, _ in parts]
    # phases run one at a time, so their exchange buffers need not coexist
    memory.exchange = max(traffic, default=0) if placement.kind.phased else sum(traffic)


def _ipu_memory(graph: Graph, placement: Placement, spec: RunSpec, ipu: int) -> IpuMemory:
    capacity = spec.system.ipu.memory_bytes
    memory = IpuMemory(ipu=ipu, capacity=capacity)
    parts = _stage_parts(graph, placement.stages_on(ipu), spec)
    compute_ops = [op for _, ops, _ in parts for op in ops if op.kind != "view"]
    memory.code = _code_bytes(compute_ops, spec.training)
    peaks = _phase_peaks(graph, placement, spec).get(ipu, {}) if placement.kind.phased else None
    _add_param_kinds(memory, parts, peaks)
    _add_activations(memory, graph, parts, placement, spec)
    if peaks and not spec.location("activation").on_chip:
        memory.activations = max(memory.activations, peaks.get("activations", 0))
    memory.temporaries = int(max((min(temp_bytes(op, spec.partials_bytes),
                                      available_memory(op, ipu, spec) * capacity)
                                  for op in compute_ops), default=0))
    if spec.training:
        memory.temporaries = max([memory.temporaries, *(embedding_gradient_bytes(op, graph)
                                                         for op in compute_ops)])
    return memory


def phase_works(graph: Graph, placement: Placement, spec: RunSpec) -> list[phases.PhaseWork]:
    """Each phased stage's streamed bytes (off-chip weights, accumulators, activations, outputs)."""
    works = []
    for stage, ops, kinds in _stage_parts(graph, placement.stages, spec):
        streamed = not spec.location("activation").on_chip and spec.training
        boundary = sum(size for (src, dst), size in graph.edges.items()
                       if src in stage.blocks and dst not in stage.blocks)
        works.append(phases.PhaseWork(
            stage.ipu, stage.phase, weights=kinds["weights"][1], gradients=kinds["gradients"][1],
            activations=_activations(ops, True, False) if streamed else 0, boundary=boundary))
    return works


def _phase_peaks(graph: Graph, placement: Placement, spec: RunSpec) -> dict[int, dict[str, int]]:
    works = phase_works(graph, placement, spec)
    strategy = spec.strategy
    runs = phases.program(works, strategy.liveness, strategy.separate_backward_phase, spec.training)
    return phases.peaks(works, runs)


def plan_memory(graph: Graph, placement: Placement, spec: RunSpec) -> MemoryPlan:
    """The memory plan of one replica (every replica holds the same)."""
    ipus = [_ipu_memory(graph, placement, spec, ipu) for ipu in range(placement.ipus_per_replica)]
    return MemoryPlan(ipus, spec.system.streaming_bytes_per_ipu,
                      ways_to_fit(graph, placement, spec))
