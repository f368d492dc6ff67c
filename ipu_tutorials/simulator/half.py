"""Float16 numerics at float32 speed: every op on float16 tensors runs in float32 and rounds.

CPUs have few fast float16 kernels (a float16 convolution backward runs ~20x slower than the
float32 one), while the IPU computes float16 natively. So while a model with float16 tensors
runs, an aten-level dispatch mode upcasts each op's float16 inputs to float32, runs the float32
kernel, and rounds each result that would be float16 back to float16. Every tensor a learner can
see (activations, gradients, weights, optimizer state) holds float16 values, as on the IPU:

- with float partials (the default) an IPU matmul or convolution accumulates in float32 and
  rounds once at the end, which is exactly float32 compute + one rounding;
- elementwise ops, norms, softmax and losses compute in float32 internally on the IPU and
  round their results, the same again (basic arithmetic and max pooling run PyTorch's CPU
  float16 kernels, which do exactly that, unless rounding is stochastic);
- with half partials, matmuls and convolutions sum in float16 (rounding.matmul_half_partials);
- with stochastic rounding, every rounding to float16 is stochastic, drawn from the wrapped
  model's own generator, seeded from opts.randomSeed (0 when unset).

Autograd records the float16 graph above this mode, so backward ops come through it as well.
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import weakref

import torch
from torch.utils._pytree import tree_leaves
from torch.utils._python_dispatch import (TorchDispatchMode, _get_current_dispatch_mode,
                                          _pop_mode_temporarily)

from . import partials
from .rounding import to_half

aten = torch.ops.aten
HALF, FLOAT = torch.float16, torch.float32

# Ops that move or convert data without arithmetic: they run on the float16 tensors as they are.
_MOVES = {aten._to_copy.default, aten.copy_.default, aten.clone.default, aten.detach.default,
          aten.alias.default, aten.cat.default, aten.stack.default, aten.index.Tensor,
          aten.index_select.default, aten.gather.default, aten.zero_.default,
          aten.fill_.Scalar, aten.empty_like.default, aten.zeros_like.default,
          aten.ones_like.default, aten.full_like.default, aten.new_empty.default,
          aten.new_zeros.default, aten.new_ones.default, aten.new_full.default,
          aten.new_empty_strided.default, aten.lift_fresh.default, aten._local_scalar_dense.default,
          aten.constant_pad_nd.default, aten.slice_scatter.default, aten.select_scatter.default,
          aten.split_with_sizes_copy.default, aten.set_.source_Tensor, aten.is_same_size.default,
          aten.equal.default}
_CONVERSIONS = {aten._to_copy.default, aten.copy_.default}  # round stochastically if asked


@dataclasses.dataclass(frozen=True)
class Rounding:
    """How float16 results round: the options' partials type and stochastic rounding."""

    half_partials: bool = False
    stochastic: bool = False
    seed: int = 0
    owner: object = dataclasses.field(default=None, compare=False, repr=False)  # whose stream


_GENERATORS = weakref.WeakKeyDictionary()  # owner -> its stochastic-rounding generator
_SHARED_GENERATORS: dict[int, torch.Generator] = {}  # seed -> generator, for rounding without owner
_RESULT_TYPES: dict[tuple, list | None] = {}  # op and argument types -> result types (or None)
_UPCASTS_KEPT = 4  # float32 copies kept for reuse (a weight is read in forward and backward)


def generator_for(rounding: Rounding) -> torch.Generator:
    """The simulator's stochastic-rounding stream: one per owner (a wrapped model's options),
    seeded with the rounding's seed on first use, so each model's rounding is reproducible."""
    streams, key = ((_GENERATORS, rounding.owner) if rounding.owner is not None
                    else (_SHARED_GENERATORS, rounding.seed))
    if key not in streams:
        streams[key] = torch.Generator().manual_seed(rounding.seed)
    return streams[key]


def _has_half(values) -> bool:
    for v in values:
        if isinstance(v, torch.Tensor):
            if v.dtype == HALF:
                return True
        elif isinstance(v, (list, tuple)) and _has_half(v):
            return True
    return False


# Op arguments are tensors, scalars, or flat lists of them; results are a tensor or a flat
# tuple/list. These helpers walk that one level (torch's pytree costs ~100 us an op).

def _map(fn, value):
    if isinstance(value, (list, tuple)):
        return type(value)(fn(x) for x in value)
    return fn(value)


def _map_args(fn, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    return (tuple(_map(fn, a) for a in args), {k: _map(fn, v) for k, v in kwargs.items()})


def _leaves(value) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _up(x, compute: torch.dtype = FLOAT):
    if isinstance(x, torch.Tensor) and x.dtype == HALF:
        return x.to(compute)
    return compute if x is HALF else x


def _meta(x):
    if isinstance(x, torch.Tensor):
        return torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device="meta")
    return x


def _describe(x):
    if isinstance(x, torch.Tensor):
        return x.dtype, x.dim() == 0
    return x if isinstance(x, (torch.dtype, bool)) else None


def _key(func, args, kwargs) -> tuple:
    """What decides an op's result types: the op, its tensors' types (and 0-dim), dtype args."""
    parts = [func]
    for value in (*args, *kwargs.values()):
        parts += [_describe(x) for x in _leaves(value)]
    return tuple(parts)


_WRITES: dict = {}  # op -> (position, name) of each argument it writes to
# Ops whose CPU float16 kernels give exactly the emulation's result, faster (half the memory
# traffic, no conversions): IEEE arithmetic done per element in float32 and rounded once,
# comparisons and selections. The bit-for-bit tests hold them to that. Others (GELU's float16
# kernel, for one) differ in the last bit, so everything not listed is emulated.
_EXACT_NATIVELY = {
    aten.add.Tensor, aten.add_.Tensor, aten.add.Scalar, aten.sub.Tensor, aten.sub_.Tensor,
    aten.mul.Tensor, aten.mul_.Tensor, aten.mul.Scalar, aten.mul_.Scalar, aten.div.Tensor,
    aten.div_.Tensor, aten.div.Scalar, aten.neg.default, aten.abs.default, aten.relu.default,
    aten.relu_.default, aten.clamp_min.default, aten.clamp.default, aten.threshold_backward.default,
    aten.where.self, aten.maximum.default, aten.minimum.default, aten.masked_fill.Scalar,
    aten.masked_fill_.Scalar, aten.eq.Tensor, aten.eq.Scalar, aten.ne.Tensor, aten.ne.Scalar,
    aten.gt.Tensor, aten.gt.Scalar, aten.ge.Tensor, aten.ge.Scalar, aten.lt.Tensor,
    aten.lt.Scalar, aten.le.Tensor, aten.le.Scalar, aten.max_pool2d_with_indices.default}


def _writes(func) -> list[tuple[int, str]]:
    if func not in _WRITES:
        _WRITES[func] = [(i, a.name) for i, a in enumerate(func._schema.arguments)
                         if a.alias_info is not None and a.alias_info.is_write]
    return _WRITES[func]


def _exact_natively(func, args) -> bool:
    if func in _EXACT_NATIVELY:
        return True
    if func is aten.max_pool2d_with_indices_backward.default:  # (grad, input, kernel, stride...)
        kernel, stride = args[2], args[3] or args[2]
        return all(s >= k for s, k in zip(stride, kernel))  # windows apart: nothing is summed
    return False


class HalfEmulation(TorchDispatchMode):
    """Runs ops on float16 tensors in float32 and rounds their float16 results (see module doc).

    `compute=torch.float64` runs them in float64 instead: sums of float16 products are then
    exact or nearly, so each rounded result is the same whatever order the CPU's kernels add in
    (for figures that must not depend on the kernel set or thread count).
    """

    def __init__(self, rounding: Rounding = Rounding(), compute: torch.dtype = FLOAT):
        super().__init__()
        self.rounding = rounding
        self.compute = compute
        self.generator = generator_for(rounding) if rounding.stochastic else None
        self._upcasts: dict[tuple, tuple[torch.Tensor, torch.Tensor]] = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if not (_has_half(args) or _has_half(kwargs.values())) or func.is_view:
            return self._conversion(func, args, kwargs)
        if func in _MOVES or (self.generator is None and _exact_natively(func, args)):
            return self._conversion(func, args, kwargs)
        wanted = self._wanted_types(func, args, kwargs)
        if wanted is None:  # no meta kernel to tell the result types: run the float16 kernel
            return func(*args, **kwargs)
        if self.rounding.half_partials:
            result = partials.run(func, args, kwargs, self.generator)
            if result is not NotImplemented:
                return result
        return self._emulate(func, args, kwargs, wanted)

    def _conversion(self, func, args, kwargs):
        """Data movement runs as is; a float32 -> float16 conversion may round stochastically."""
        if self.generator is None or func not in _CONVERSIONS:
            return func(*args, **kwargs)
        if (func is aten._to_copy.default and kwargs.get("dtype") == HALF
                and args[0].dtype == FLOAT):
            rest = {k: v for k, v in kwargs.items() if k != "dtype"}
            return to_half(func(args[0], *args[1:], **rest), self.generator)
        if func is aten.copy_.default and args[0].dtype == HALF and args[1].dtype == FLOAT:
            return args[0].copy_(to_half(args[1].expand_as(args[0]), self.generator))
        return func(*args, **kwargs)

    def _wanted_types(self, func, args, kwargs) -> list | None:
        """The dtype of each tensor the float16 op would return (None: unknown), cached."""
        key = _key(func, args, kwargs)
        if key not in _RESULT_TYPES:
            try:
                meta_args, meta_kwargs = _map_args(_meta, args, kwargs)
                _RESULT_TYPES[key] = [v.dtype if isinstance(v, torch.Tensor) else None
                                      for v in _leaves(func(*meta_args, **meta_kwargs))]
            except (NotImplementedError, RuntimeError):
                _RESULT_TYPES[key] = None
        return _RESULT_TYPES[key]

    def _upcast(self, x):
        """x in the compute type; the last few copies are reused while x is unchanged."""
        if not isinstance(x, torch.Tensor) or x.dtype != HALF:
            return self.compute if x is HALF else x
        key = (x.untyped_storage().data_ptr(), x.storage_offset(), x.shape, x.stride(),
               x._version)
        if key in self._upcasts:
            return self._upcasts[key][1]
        if len(self._upcasts) >= _UPCASTS_KEPT:
            del self._upcasts[next(iter(self._upcasts))]
        copy = x.to(self.compute)
        self._upcasts[key] = (x, copy)  # holding x keeps its memory from being reused
        return copy

    def _emulate(self, func, args, kwargs, wanted: list):
        writes = _writes(func)
        # never share a copy an op writes to
        up = self._upcast if not writes else functools.partial(_up, compute=self.compute)
        up_args, up_kwargs = _map_args(up, args, kwargs)
        if func in (aten._softmax.default, aten._log_softmax.default):
            up_args = (*up_args[:2], False)  # half_to_float: the float32 input needs no flag
        out = func(*up_args, **up_kwargs)
        written = _written_pairs(writes, args, kwargs, up_args, up_kwargs) if writes else []
        for original, upcast in written:
            original.copy_(to_half(upcast, self.generator))
        by_copy = {id(upcast): original for original, upcast in written}
        if isinstance(out, (list, tuple)):
            return type(out)(self._round(v, t, by_copy) for v, t in zip(out, wanted))
        return self._round(out, wanted[0], by_copy)

    def _round(self, value, dtype, by_copy: dict):
        if not isinstance(value, torch.Tensor):
            return value
        if id(value) in by_copy:  # an in-place op returns the tensor it wrote
            return by_copy[id(value)]
        if dtype == HALF and value.dtype == self.compute:
            return to_half(value, self.generator)
        return value


def _written_pairs(writes, args, kwargs, up_args, up_kwargs) -> list:
    """(float16 original, float32 copy) for every float16 argument the op writes to."""
    pairs = []
    for i, name in writes:
        if i < len(args):
            original, upcast = args[i], up_args[i]
        else:
            original, upcast = kwargs.get(name), up_kwargs.get(name)
        originals = original if isinstance(original, (list, tuple)) else [original]
        upcasts = upcast if isinstance(upcast, (list, tuple)) else [upcast]
        pairs += [(o, u) for o, u in zip(originals, upcasts)
                  if isinstance(o, torch.Tensor) and o.dtype == HALF]
    return pairs


def involves_half(model: torch.nn.Module, inputs, optimizer=None, mixed: bool = False) -> bool:
    """Whether a call touches float16: weights, inputs, autocast to float16, optimizer state."""
    if mixed or any(p.dtype == HALF for p in model.parameters()):
        return True
    if any(isinstance(x, torch.Tensor) and x.dtype == HALF for x in tree_leaves(inputs)):
        return True
    types = getattr(optimizer, "_state_types", {}) or {}
    return getattr(optimizer, "_accumulator_type", None) == HALF or HALF in types.values()


def emulation(active: bool, rounding: Rounding = Rounding(), compute: torch.dtype = FLOAT):
    """The float16 emulation mode when a call involves float16, else nothing."""
    return HalfEmulation(rounding, compute) if active else contextlib.nullcontext()


def outside_emulation(rounding: Rounding):
    """Step out of the emulation for code that computes in float32 and rounds to nearest itself.

    A DeviceOptimizer's update upcasts its float16 inputs, computes in float32 and converts its
    results to float16, which the mode would pass through unchanged; outside it the update
    loses the per-op dispatch (and may run in cache-sized slices) with the same bits. With
    stochastic rounding it stays inside: its draws come from the mode's generator.
    """
    if rounding.stochastic or not isinstance(_get_current_dispatch_mode(), HalfEmulation):
        return contextlib.nullcontext()
    return _pop_mode_temporarily()
