"""Hugging Face models on meta tensors: the static graph PopTorch traces, whatever the attention.

Two things in transformers stop a meta-device capture, and PopTorch's own tracing avoids both:
- the attention-mask helpers skip the mask when its values show no padding (`mask.all()`),
  a read of tensor values; they skip that read while tracing (`is_tracing`), as PopTorch's
  torch.jit trace is, so a capture counts as tracing for meta tensors too;
- flex and flash attention have no meta (or IPU) kernel; a capture runs them as "sdpa", the
  same arithmetic (PopTorch replaced attention with its own kernels too), and puts the model's
  choice back afterwards.
"""
from __future__ import annotations

import contextlib
import sys

PORTABLE = ("eager", "sdpa")  # attention implementations that run on meta tensors


def _or_meta(original):
    def is_tracing(tensor=None):
        return bool(getattr(tensor, "is_meta", False)) or original(tensor)
    return is_tracing


def _changes(model) -> list[tuple[object, str, object]]:
    """(object, attribute, value during the capture) for both fixes."""
    tracing = [(module, "is_tracing", _or_meta(module.is_tracing))
               for name, module in list(sys.modules.items())
               if name.startswith("transformers.") and callable(getattr(module, "is_tracing", None))]
    configs = {id(m.config): m.config for m in model.modules()
               if getattr(getattr(m, "config", None), "_attn_implementation", None)}
    attention = [(config, "_attn_implementation", "sdpa") for config in configs.values()
                 if config._attn_implementation not in PORTABLE]
    return tracing + attention


@contextlib.contextmanager
def _patched(changes):
    saved = [(target, name, getattr(target, name)) for target, name, _ in changes]
    try:
        for target, name, value in changes:
            setattr(target, name, value)
        yield
    finally:
        for target, name, value in reversed(saved):
            setattr(target, name, value)


@contextlib.contextmanager
def static_graph(model):
    """Capture `model` as PopTorch traces it: no value-dependent mask shortcuts, portable attention."""
    if "transformers" not in sys.modules:
        yield
        return
    with _patched(_changes(model)):
        yield
