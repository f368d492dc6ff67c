"""Capture: run the model once and record every op with its block, FLOPs, bytes and parameters.

The pass runs on meta tensors (shapes only, no data, no side effects), so a model far larger
than the laptop can be planned. A model whose control flow reads tensor values falls back to
one real pass on a throwaway copy.
"""
from __future__ import annotations

import contextlib
import copy
import dataclasses

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten
from torch.utils.flop_counter import flop_registry

from ..errors import Error
from . import tracing
from .frozen_values import Recording, ValueRead
from .losses import LossLocator, LossMode
from .matmul import Shape, matmul_shape
from .static_graph import static_graph

HOST = "(host)"  # the source of model inputs and the sink of outputs in the edge table
WHOLE_MODEL = "(model)"  # the single block of a model without annotations
PENDING = "(before first block)"  # ops run before any block began; they join the first block
OUTSIDE = "(outside)"  # ops run outside every block once blocks were in use: a broken rule


@dataclasses.dataclass
class Op:
    index: int
    name: str  # e.g. "aten.addmm"
    block: str
    module: str  # dotted path of the innermost module running it ("" is the top)
    kind: str  # "matmul" (matmul or conv), "compute" or "view"
    flops: float  # forward FLOPs
    bytes_in: int
    bytes_out: int  # new memory the op writes (0 for views and in-place ops)
    out_elements: int
    dtype_bytes: int  # width of the floating-point operands, for the peak rate
    params: tuple[str, ...] = ()
    available_memory: float | None = None  # set_available_memory() proportion
    multiconv: int | None = None  # MultiConv group
    segment: int = 0  # recomputation segment: recomputationCheckpoint() starts a new one
    shape: Shape | None = None  # (count, M, K, N) of a matmul or convolution (matmul.py)


@dataclasses.dataclass
class Param:
    name: str
    numel: int
    dtype_bytes: int
    trainable: bool
    blocks: list[str] = dataclasses.field(default_factory=list)  # in order of first use

    @property
    def bytes(self) -> int:
        return self.numel * self.dtype_bytes


@dataclasses.dataclass
class Graph:
    """Everything compile needs to know about one forward pass of one micro-batch."""

    ops: list[Op]
    blocks: dict[str, int | None]  # block id -> annotated ipu_id, in order of first use
    params: dict[str, Param]
    buffers_bytes: dict[str, int]  # non-trainable state (e.g. BatchNorm statistics) per block
    edges: dict[tuple[str, str], int]  # (from block, to block) -> activation bytes
    output_bytes: dict[str, int]  # block -> bytes it returns to the host
    checkpoint_bytes: dict[str, int]  # block -> recomputation checkpoints
    outputs: list[tuple[tuple[int, ...], torch.dtype]]  # flattened outputs: shape, dtype
    loss: LossLocator  # where the final loss is: among the outputs, or computed inside
    losses_found: int  # independent losses in the graph (a training model needs exactly 1)
    outside_blocks: list[Op]  # ops run outside every block once blocks were in use
    annotated: bool
    # tensor values forward's Python code read at trace time (frozen_values), replayed each run
    value_reads: tuple[ValueRead, ...] = ()
    # each tensor used outside the block that made it: (source block, consumer blocks, bytes)
    transfers: tuple[tuple[str, tuple[str, ...], int], ...] = ()

    def __repr__(self) -> str:
        weights = sum(p.numel for p in self.params.values())
        return (f"Graph({len(self.ops)} ops in {len(self.blocks)} block(s) "
                f"{list(self.blocks)}, {weights:,} parameters)")


def _nbytes(t: torch.Tensor) -> int:
    return t.numel() * t.element_size()


def _tensors(tree) -> list[torch.Tensor]:
    return [x for x in tree_flatten(tree)[0] if isinstance(x, torch.Tensor)]


class Recorder:
    """Receives ops from the dispatch mode and annotations from tracing."""

    def __init__(self, param_names: dict[int, str], inputs: list[torch.Tensor]):
        self.param_names = param_names
        self.ops: list[Op] = []
        self.blocks: dict[str, int | None] = {}
        self.module_stack: list[str] = [""]
        self.keep_alive: list[torch.Tensor] = []  # ids stay unique while we hold the tensors
        self.producer: dict[int, tuple[str | None, int | None]] = {id(t): (HOST, None) for t in inputs}
        self.loss_ancestry: dict[int, frozenset[int]] = {}
        self.folded_losses: set[int] = set()
        self.losses: dict[int, int] = {}  # loss id -> id of its tensor
        self.edges: dict[tuple[str, str], int] = {}
        self.edge_seen: set[tuple[int, str]] = set()
        self.crossings: dict[int, tuple[str, set[str], int]] = {}  # tensor id -> its transfer
        self.checkpoints: dict[str, int] = {}
        self.multiconv: int | None = None
        self.segment = 0
        self.keep_alive.extend(inputs)

    # --- annotations ----------------------------------------------------------------------
    def note_block(self, block: tracing.BlockId):
        known = self.blocks.get(block.user_id)
        if known is not None and block.ipu_id is not None and known != block.ipu_id:
            raise Error(f"block {block.user_id!r} is given two IPUs ({known} and "
                        f"{block.ipu_id}); a block lives on one IPU")
        if not self.blocks:  # ops before the first block join it (PopTorch puts them on IPU 0)
            self.rename_block(PENDING, block.user_id)
        self.blocks[block.user_id] = block.ipu_id if block.ipu_id is not None else known

    def rename_block(self, old: str, new: str):
        for op in self.ops:
            if op.block == old:
                op.block = new
        for key, (source, index) in self.producer.items():
            if source == old:
                self.producer[key] = (new, index)
        renamed: dict[tuple[str, str], int] = {}
        for (source, target), size in self.edges.items():
            key = (new if source == old else source, new if target == old else target)
            if key[0] != key[1]:
                renamed[key] = renamed.get(key, 0) + size
        self.edges = renamed
        self.edge_seen = {(t, new if b == old else b) for t, b in self.edge_seen}
        self.crossings = {t: (new if src == old else src, {new if b == old else b for b in dsts}, size)
                          for t, (src, dsts, size) in self.crossings.items()}
        if old in self.checkpoints:  # checkpoints taken before the first block join it
            self.checkpoints[new] = self.checkpoints.get(new, 0) + self.checkpoints.pop(old)

    def mark_loss(self, tensor: torch.Tensor):
        ancestors = self.loss_ancestry.get(id(tensor), frozenset())
        self.folded_losses |= ancestors  # a loss that feeds another loss is not final
        loss_id = len(self.losses)
        self.losses[loss_id] = id(tensor)
        self.loss_ancestry[id(tensor)] = ancestors | {loss_id}

    def set_available_memory(self, tensor: torch.Tensor, proportion: float):
        _, op_index = self.producer.get(id(tensor), (None, None))
        # nn.Linear on a (B, T, C) input ends in a reshaping view of its matmul's result:
        # the proportion belongs to the op that computed it
        while op_index is not None and op_index > 0 and self.ops[op_index].kind == "view":
            op_index -= 1
        if op_index is not None:
            self.ops[op_index].available_memory = proportion

    def checkpoint(self, tensor: torch.Tensor):
        block = tracing.STATE.block.user_id if tracing.STATE.block else PENDING
        self.checkpoints[block] = self.checkpoints.get(block, 0) + _nbytes(tensor)
        self.segment += 1

    # --- ops ------------------------------------------------------------------------------
    def record(self, func, args, kwargs, out):
        inputs, outputs = _tensors((args, kwargs)), _tensors(out)
        block = tracing.STATE.block.user_id if tracing.STATE.block else None
        if block is None:
            block = OUTSIDE if self.blocks else PENDING
        op = self._make_op(func, args, kwargs, out, inputs, outputs, block)
        self.ops.append(op)
        ancestry = frozenset().union(*(self.loss_ancestry.get(id(t), frozenset()) for t in inputs))
        for t in inputs:
            self._note_crossing(t, block)
        for t in outputs:
            self.producer[id(t)] = (block, op.index)
            if ancestry:
                self.loss_ancestry[id(t)] = ancestry
        self.keep_alive.extend(outputs)

    def _note_crossing(self, t: torch.Tensor, block: str | None):
        source, _ = self.producer.get(id(t), (None, None))
        if source is None or source == block or (id(t), block) in self.edge_seen:
            return
        self.edge_seen.add((id(t), block))
        self.edges[(source, block)] = self.edges.get((source, block), 0) + _nbytes(t)
        self.crossings.setdefault(id(t), (source, set(), _nbytes(t)))[1].add(block)

    def _make_op(self, func, args, kwargs, out, inputs, outputs, block) -> Op:
        packet = func.overloadpacket
        floats = [t for t in inputs if t.is_floating_point()]
        params = tuple(dict.fromkeys(self.param_names[id(t)] for t in inputs if id(t) in self.param_names))
        aliases = any(r.alias_info is not None for r in func._schema.returns)
        out_elements = sum(t.numel() for t in outputs)
        if packet in flop_registry:
            kind, flops = "matmul", float(flop_registry[packet](*args, **kwargs, out_val=out))
        elif func.is_view:
            kind, flops = "view", 0.0
        else:
            kind = "compute"
            flops = float(max(out_elements, max((t.numel() for t in inputs), default=0)))
        return Op(index=len(self.ops), name=str(packet), block=block,
                  module=self.module_stack[-1], kind=kind, flops=flops,
                  bytes_in=sum(_nbytes(t) for t in inputs) if kind != "view" else 0,
                  bytes_out=0 if aliases else sum(_nbytes(t) for t in outputs),
                  out_elements=out_elements,
                  dtype_bytes=floats[0].element_size() if floats else 4, params=params,
                  multiconv=self.multiconv if kind == "matmul" else None, segment=self.segment,
                  shape=matmul_shape(str(packet), args, out) if kind == "matmul" else None)


class _OpMode(TorchDispatchMode):
    def __init__(self, recorder: Recorder):
        super().__init__()
        self.recorder = recorder

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        self.recorder.record(func, args, kwargs, out)
        return out


def _module_hooks(model: torch.nn.Module, recorder: Recorder):
    names = {id(m): name for name, m in model.named_modules()}

    def enter(module, inputs):
        recorder.module_stack.append(names.get(id(module), recorder.module_stack[-1]))

    def leave(module, inputs, output):
        if len(recorder.module_stack) > 1:
            recorder.module_stack.pop()

    return (torch.nn.modules.module.register_module_forward_pre_hook(enter),
            torch.nn.modules.module.register_module_forward_hook(leave))


def _to_meta(tree):
    def convert(x):
        return torch.empty_like(x, device="meta") if isinstance(x, torch.Tensor) else x
    return torch.utils._pytree.tree_map(convert, tree)


def capture(model: torch.nn.Module, args: tuple, kwargs: dict,
            compute_dtype: torch.dtype | None = None) -> Graph:
    """Record one forward pass of `model` on one micro-batch `args`/`kwargs`.

    compute_dtype: run the floating-point weights in this type (float16 inputs meeting float32
    weights compute in float16), while the plan still counts the weights at their own width.

    Raises:
        Error: when the model cannot be captured (it reads values of a meta tensor).
    """
    try:
        return _capture_meta(model, args, kwargs, compute_dtype)
    except (NotImplementedError, RuntimeError) as error:
        if isinstance(error, Error):
            raise
        if any(p.is_meta for p in model.parameters()):
            raise Error(f"this model lives on the meta device and its forward pass reads tensor "
                        f"values ({error}); PopTorch models must have a static graph. Build it on "
                        f"the CPU to compile it.") from None
        return _capture_real(copy.deepcopy(model), args, kwargs)


def _capture_meta(model, args, kwargs, compute_dtype) -> Graph:
    meta_state, param_names = {}, {}
    by_identity: dict[int, torch.Tensor] = {}
    for name, tensor in list(model.named_parameters(remove_duplicate=False)) + list(
            model.named_buffers(remove_duplicate=False)):
        if id(tensor) not in by_identity:  # tied weights share one meta tensor
            dtype = compute_dtype if compute_dtype and tensor.is_floating_point() else tensor.dtype
            by_identity[id(tensor)] = torch.empty_like(tensor, device="meta", dtype=dtype)
        meta_state[name] = by_identity[id(tensor)]
        if isinstance(tensor, torch.nn.Parameter):
            param_names.setdefault(id(meta_state[name]), name)
    args, kwargs = _to_meta(args), _to_meta(kwargs)
    with static_graph(model):  # transformers' models as PopTorch traces them
        return _run(model, args, kwargs, param_names,
                    lambda: torch.func.functional_call(model, meta_state, args, kwargs, strict=False))


def _capture_real(model, args, kwargs) -> Graph:
    param_names = {}
    for name, p in model.named_parameters(remove_duplicate=False):
        param_names.setdefault(id(p), name)
    reads = Recording()  # the meta pass failed because forward reads values: note them
    with torch.no_grad():
        graph = _run(model, args, kwargs, param_names, lambda: model(*args, **kwargs), reads)
    return dataclasses.replace(graph, value_reads=tuple(reads.reads))


def _run(model, args, kwargs, param_names, forward, reads=None) -> Graph:
    recorder = Recorder(param_names, _tensors((args, kwargs)))
    hooks = _module_hooks(model, recorder)
    try:
        with (tracing.capturing(recorder), LossMode(), _OpMode(recorder),
              reads or contextlib.nullcontext()):
            out = forward()
    finally:
        for hook in hooks:
            hook.remove()
    return _summarise(model, recorder, out)


def _summarise(model, recorder: Recorder, out) -> Graph:
    annotated = bool(recorder.blocks)
    if not annotated:
        recorder.rename_block(PENDING, WHOLE_MODEL)
    blocks = dict(recorder.blocks) if annotated else {WHOLE_MODEL: None}
    used = [op for op in recorder.ops if op.block != OUTSIDE]
    params = _params(model, used)
    leaves = tree_flatten(out)[0]  # the runtime finds the loss among these same leaves
    outputs = [t for t in leaves if isinstance(t, torch.Tensor)]
    output_bytes: dict[str, int] = {}
    for t in outputs:
        source, _ = recorder.producer.get(id(t), (None, None))
        if source not in (None, HOST):
            output_bytes[source] = output_bytes.get(source, 0) + _nbytes(t)
    final = [i for i in recorder.losses if i not in recorder.folded_losses]
    loss_ids = {recorder.losses[i] for i in final}
    loss_output = next((i for i, t in enumerate(leaves) if id(t) in loss_ids), None)
    loss = LossLocator(loss_output, final[0] if len(final) == 1 else None)
    return Graph(ops=used, blocks=blocks, params=params,
                 buffers_bytes=_buffers(model, used), edges=recorder.edges,
                 output_bytes=output_bytes, checkpoint_bytes=recorder.checkpoints,
                 outputs=[(tuple(t.shape), t.dtype) for t in outputs], loss=loss,
                 losses_found=len(final),
                 outside_blocks=[op for op in recorder.ops if op.block == OUTSIDE],
                 annotated=annotated,
                 transfers=tuple((src, tuple(sorted(dsts - {src})), size)
                                 for src, dsts, size in recorder.crossings.values()
                                 if dsts - {src}))


def _params(model, ops: list[Op]) -> dict[str, Param]:
    params: dict[str, Param] = {}
    seen: dict[int, str] = {}
    for name, p in model.named_parameters(remove_duplicate=False):
        if id(p) in seen:
            continue
        seen[id(p)] = name
        params[name] = Param(name, p.numel(), p.element_size(), p.requires_grad)
    for op in ops:
        for name in op.params:
            if name in params and op.block not in params[name].blocks:
                params[name].blocks.append(op.block)
    return params


def _buffers(model, ops: list[Op]) -> dict[str, int]:
    """Attribute each buffer to the block of the module that owns it."""
    module_block = {}
    for op in ops:
        module_block.setdefault(op.module, op.block)
    result: dict[str, int] = {}
    for name, buffer in model.named_buffers():
        owner = name.rpartition(".")[0]
        block = module_block.get(owner)
        if block is not None:
            result[block] = result.get(block, 0) + _nbytes(buffer)
    return result
