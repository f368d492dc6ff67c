"""Cost model: seconds of simulated IPU time for ops, stages, transfers and the weight update.

Where it is approximate (on purpose, to stay explainable):

- a matmul or convolution runs at the fraction of the chip's peak its shape and operand width
  reach on the tiles' AMP units (matmul.matmul_efficiency); other ops are bound by tile-memory
  bandwidth;
- every op that computes pays a fixed OP_OVERHEAD_CYCLES for its compute set's sync and
  exchange, which is what dominates tiny models;
- backward costs twice the forward for matmuls (input and weight gradients), once otherwise;
  pipelined training recomputes the forward pass before the backward (PopTorch's default);
- transfers cost bytes / bandwidth plus a fixed latency; links and host never contend;
- the host prepares every sample of a call (the data loader's work: HOST_SAMPLE_SECONDS plus
  its bytes at HOST_BYTES_PER_SECOND), overlapped with the device when the loader is
  asynchronous, and each call pays a fixed synchronisation latency.

Calibration (docs/cost-model.md, "Calibration against published runs"): OP_OVERHEAD_CYCLES and the host
constants are fitted on the pipelining tutorial's published run (graphcore/tutorials@198c92b:
tutorials/pytorch/pipelining/README.md: about 15 calls of 4,000 images per second, and its
PopVision trace of about 85 k cycles per pipeline cycle) and
on Graphcore's efficient-data-loading tutorial; the matmul model's two constants on BERT-Large
and ResNet-50.
"""
from __future__ import annotations

import dataclasses

from . import collectives
from .capture import HOST, Graph, Op
from .hardware import IpuSpec, System
from .matmul import matmul_efficiency
from .memory import available_memory, temp_bytes
from .placement import Placement
from .rules import recomputes
from .spec import RunSpec

# cycles per compute step (its BSP sync and exchange setup). Calibrated on the pipelining
# tutorial's PopVision trace (graphcore/examples@v3.4.1:tutorials/tutorials/pytorch/pipelining/
# static/pipelined-execution.png: about 85 k cycles per pipeline cycle of a 4-IPU MNIST model) and on
# the efficient-data-loading tutorial's synthetic-data run (338 us per 16-image step).
OP_OVERHEAD_CYCLES = 6_000
# cycles per element-wise or reduction step (normalisation, activation, residual add, softmax):
# no weights to exchange and PopART fuses and outlines chains of them, so they sync for less
# than a matmul. Fitted on the calibration runs with matmul.py's two constants (ResNet-50's
# graph is 80% such ops, BERT-Large's 74%); the tutorial trace's cycles bound it below.
ELEMENTWISE_OVERHEAD_CYCLES = 850
LINK_LATENCY = 1e-6  # s per inter-IPU copy (assumption)
# s per call, host <-> IPU synchronisation, half at the start and half at the end. Assumption,
# bounded above by popxl's MNIST tutorial: 7,500 synchronous calls in 24 s, 3.3 ms per call
# with everything included (graphcore/examples@v3.4.1:tutorials/tutorials/popxl/1_basic_concepts/
# README.md: 7500/7500 [00:24, 306.92it/s]).
HOST_CALL_LATENCY = 1e-3
HOST_LATENCY = HOST_CALL_LATENCY / 2  # s at each end of a call
# s per micro-batch streamed from the host: the trace shows one StreamCopy per pipeline cycle
# (pipelined-execution.png, ~10 us of its ~64 us at 1.33 GHz). Calibrated on that trace.
HOST_STREAM_LATENCY = 10e-6
# The host's data preparation (the data loader's collation, transforms and copies):
# HOST_SAMPLE_SECONDS per sample plus its input bytes at HOST_BYTES_PER_SECOND. Calibrated on
# two published runs together: the pipelining tutorial's output (15 calls/s of 4,000 MNIST
# images of 3,136 B: ~56 ms of a 66 ms call is host-side, ~14 us per image) and the
# efficient-data-loading tutorial (graphcore/examples@v3.4.1:tutorials/tutorials/pytorch/
# efficient_data_loading/README.md: 17,956
# items/s with real data against 47,323 synthetic, 64 KiB per item: ~35-45 us per item).
HOST_SAMPLE_SECONDS = 13.5e-6
HOST_BYTES_PER_SECOND = 2e9
STREAM_LATENCY = 5e-6  # s per streaming-memory transfer (assumption)
BACKWARD_MATMUL_FACTOR = 2  # gradient with respect to the input and to the weight


@dataclasses.dataclass
class StageCost:
    """Simulated seconds for one micro-batch through one stage."""

    forward: float
    backward: float  # includes the recomputed forward when pipelining
    send: float  # copy of the stage's activations to later stages
    receive: float  # copy back of the gradient of what it received from earlier stages
    flops: float  # forward FLOPs


def op_seconds(op: Op, chip: IpuSpec, cap_bytes: float, partials_bytes: int) -> float:
    """One op on one IPU; a matmul denied the temporary memory it wants takes longer."""
    if op.kind == "view":
        return 0.0
    if op.kind != "matmul":
        return ((op.bytes_in + op.bytes_out) / chip.memory_bandwidth
                + ELEMENTWISE_OVERHEAD_CYCLES / chip.clock_hz)
    efficiency = matmul_efficiency(op.shape, op.dtype_bytes, chip.tiles)
    seconds = op.flops / (chip.peak_flops(op.dtype_bytes) * efficiency)
    wanted = temp_bytes(op, partials_bytes)
    if wanted > cap_bytes:  # the planner serialises the op to fit the cap
        seconds *= wanted / cap_bytes
    return seconds + OP_OVERHEAD_CYCLES / chip.clock_hz


def _ops_seconds(ops: list[Op], ipu: int, spec: RunSpec, backward: bool) -> float:
    """Sum over ops; convolutions of one Parallel MultiConv run side by side (slowest counts)."""
    chip = spec.system.ipu
    total, groups = 0.0, {}
    for op in ops:
        seconds = op_seconds(op, chip, available_memory(op, ipu, spec) * chip.memory_bytes,
                             spec.partials_bytes)
        if backward:
            seconds *= BACKWARD_MATMUL_FACTOR if op.kind == "matmul" else 1
        if op.multiconv is not None:
            groups[op.multiconv] = max(groups.get(op.multiconv, 0.0), seconds)
        else:
            total += seconds
    return total + sum(groups.values())


def link_seconds(num_bytes: int, system: System) -> float:
    return num_bytes / system.ipu.link_bandwidth + LINK_LATENCY if num_bytes else 0.0


def host_seconds(num_bytes: int, system: System, host_links: int = 1) -> float:
    """Bytes over the host link(s) (one per IPU-M2000), with the per-transfer latency."""
    if not num_bytes:
        return 0.0
    return num_bytes / (system.host_bandwidth * host_links) + HOST_STREAM_LATENCY


def host_data_seconds(samples: int, bytes_per_sample: float, instances: int = 1) -> float:
    """The host's data preparation for one call, shared by `instances` host processes.

    Args:
        samples: samples one call consumes (all replicas).
        bytes_per_sample: input bytes of one sample as streamed to the IPU.
        instances: host processes preparing data in parallel (poprun --num-instances).
    Returns:
        Seconds of loader work per call on each host process.
    """
    per_sample = HOST_SAMPLE_SECONDS + bytes_per_sample / HOST_BYTES_PER_SECOND
    return samples / max(1, instances) * per_sample


def stream_seconds(num_bytes: int, system: System) -> float:
    return num_bytes / system.streaming_bandwidth + STREAM_LATENCY if num_bytes else 0.0


def crossing_bytes(graph: Graph, placement: Placement, stage) -> tuple[int, int]:
    """Bytes a stage sends to and receives from other IPUs: each tensor once per IPU it
    reaches, however many blocks there read it (the copy lands once per IPU)."""
    ipu_of = {block: s.ipu for s in placement.stages for block in s.blocks}
    sent = received = 0
    for source, targets, size in graph.transfers:
        if source == HOST:
            continue
        reached = {ipu_of.get(t) for t in targets} - {ipu_of.get(source), None}
        if source in stage.blocks:
            sent += size * len(reached)
        elif stage.ipu in reached and any(t in stage.blocks for t in targets):
            received += size
    return sent, received


def with_recomputation(forward: float, backward: float) -> float:
    """A pipelined stage's backward when it first recomputes its forward from the stashed
    inputs (PopART's RecomputationType::Pipeline, which PopTorch sets for a pipeline over more
    than one IPU): the forward's time again, then the backward's."""
    return backward + forward


def stage_costs(graph: Graph, placement: Placement, spec: RunSpec) -> list[StageCost]:
    recompute = recomputes(spec, len(placement.stages))
    costs = []
    for stage in placement.stages:
        ops = [op for op in graph.ops if op.block in stage.blocks]
        forward = _ops_seconds(ops, stage.ipu, spec, backward=False)
        backward = _ops_seconds(ops, stage.ipu, spec, backward=True) if spec.training else 0.0
        if recompute:
            backward = with_recomputation(forward, backward)
        sent, received = crossing_bytes(graph, placement, stage)
        costs.append(StageCost(forward, backward, link_seconds(sent, spec.system),
                               link_seconds(received, spec.system) if spec.training else 0.0,
                               sum(op.flops for op in ops)))
    return costs


def host_io_bytes(graph: Graph) -> tuple[int, int]:
    """Bytes in from and out to the host for one micro-batch."""
    inputs = sum(size for (src, _), size in graph.edges.items() if src == HOST)
    return inputs, sum(graph.output_bytes.values())


def update_seconds(weight_elements: int, touched_bytes: int, tensors: int,
                   spec: RunSpec) -> float:
    """The optimizer step's arithmetic and memory traffic on one IPU.

    Args:
        weight_elements: weights updated on this IPU.
        touched_bytes: bytes the update reads and writes on chip (weights, gradients, state).
        tensors: weight tensors updated (each is one compute step).
    """
    chip = spec.system.ipu
    arithmetic = weight_elements * spec.optimizer.flops_per_param / chip.peak_fp32_flops
    memory = 2 * touched_bytes / chip.memory_bandwidth
    overhead = tensors * OP_OVERHEAD_CYCLES / chip.clock_hz
    return max(arithmetic, memory) + overhead


def allreduce_seconds(gradient_bytes: int, spec: RunSpec, ipus_per_replica: int = 1) -> float:
    """The all-reduce of one IPU's gradients across replicas (collectives.allreduce_seconds)."""
    return collectives.allreduce_seconds(gradient_bytes, spec.pod_replicas, ipus_per_replica,
                                         spec.system.ipu.link_bandwidth, LINK_LATENCY)
