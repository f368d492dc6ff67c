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


def _tracing_modules() -> list:
    return [module for name, module in list(sys.modules.items())
            if name.startswith("transformers.") and callable(getattr(module, "is_tracing", None))]


def _or_meta(original):
    def is_tracing(tensor=None):
        return bool(getattr(tensor, "is_meta", False)) or original(tensor)
    return is_tracing


@contextlib.contextmanager
def _meta_counts_as_tracing():
    modules = _tracing_modules()
    originals = [module.is_tracing for module in modules]
    try:
        for module, original in zip(modules, originals):
            module.is_tracing = _or_meta(original)
        yield
    finally:
        for module, original in zip(modules, originals):
            module.is_tracing = original


@contextlib.contextmanager
def _portable_attention(model):
    configs = [m.config for m in model.modules() if hasattr(getattr(m, "config", None),
                                                            "_attn_implementation")]
    saved = [c._attn_implementation for c in configs]
    try:
        for config, implementation in zip(configs, saved):
            if implementation not in PORTABLE and implementation is not None:
                config._attn_implementation = "sdpa"
        yield
    finally:
        for config, implementation in zip(configs, saved):
            config._attn_implementation = implementation


@contextlib.contextmanager
def static_graph(model):
    """Capture `model` as PopTorch traces it: no value-dependent mask shortcuts, portable attention."""
    if "transformers" not in sys.modules:
        yield
        return
    with _meta_counts_as_tracing(), _portable_attention(model):
        yield
