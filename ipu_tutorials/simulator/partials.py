"""Half partials: matmuls and 2-D convolutions whose sums accumulate in float16.

With opts.Precision.setPartialsType(torch.half) the IPU keeps the partial sums of a matmul or
convolution in float16. We approximate that (see rounding.matmul_half_partials): the products
of each output are summed in blocks at float32 precision, each block sum is rounded to float16,
and the block sums are added pairwise in float16. A convolution is its im2col matmul; its input
gradient adds the overlapping patches (torch's fold) in float32 before the final rounding. Ops
this module does not handle (1-D/3-D, grouped or transposed convolutions) keep float partials.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from .rounding import matmul_half_partials, to_half

aten = torch.ops.aten
HALF = torch.float16


def _all_half(tensors) -> bool:
    return all(t.dtype == HALF for t in tensors if isinstance(t, torch.Tensor))


def _mm(a, b, generator):
    return matmul_half_partials(a.float(), b.float(), generator)


def _plus_bias(out: torch.Tensor, bias, generator, beta=1, alpha=1) -> torch.Tensor:
    """The bias added by a separate float16 op after the matmul, as the IPU does."""
    if bias is None:
        return out
    return to_half(beta * bias.float() + alpha * out.float(), generator)


def run(func, args, kwargs, generator):
    """The op with half partials, or NotImplemented when it has no partials (or we skip it)."""
    if kwargs.get("out") is not None or not _all_half(args):
        return NotImplemented
    if func in (aten.mm.default, aten.bmm.default):
        return _mm(args[0], args[1], generator)
    if func in (aten.addmm.default, aten.baddbmm.default):
        return _plus_bias(_mm(args[1], args[2], generator), args[0], generator,
                          kwargs.get("beta", 1), kwargs.get("alpha", 1))
    if func is aten.convolution.default and _plain_conv2d(args[1], args[6], args[8]):
        return _conv2d(*args[:6], generator)
    if func is aten.convolution_backward.default and _plain_conv2d(args[2], args[7], args[9]):
        return _conv2d_backward(*args[:7], args[10], generator)
    return NotImplemented


def _plain_conv2d(weight: torch.Tensor, transposed: bool, groups: int) -> bool:
    return weight.dim() == 4 and not transposed and groups == 1


def _cols(x, weight, stride, padding, dilation) -> torch.Tensor:
    """im2col: (N, C x kh x kw, L) patches of x in float32."""
    return F.unfold(x.float(), weight.shape[2:], dilation=dilation, padding=padding, stride=stride)


def _out_size(x, weight, stride, padding, dilation) -> tuple[int, int]:
    return tuple((x.shape[2 + i] + 2 * padding[i] - dilation[i] * (weight.shape[2 + i] - 1) - 1)
                 // stride[i] + 1 for i in range(2))


def _conv2d(x, weight, bias, stride, padding, dilation, generator):
    cols = _cols(x, weight, stride, padding, dilation)  # (N, K, L)
    w = weight.float().flatten(1).unsqueeze(0)  # (1, Cout, K)
    out = matmul_half_partials(w, cols, generator)  # (N, Cout, L)
    out = out.unflatten(-1, _out_size(x, weight, stride, padding, dilation))
    return _plus_bias(out, None if bias is None else bias.view(1, -1, 1, 1), generator)


def _conv2d_backward(grad_out, x, weight, bias_sizes, stride, padding, dilation, output_mask,
                     generator):
    """(grad_input, grad_weight, grad_bias); each with half partials, None where not asked."""
    go = grad_out.float().flatten(2)  # (N, Cout, L)
    grad_input = grad_weight = grad_bias = None
    if output_mask[0]:
        w = weight.float().flatten(1).t().unsqueeze(0)  # (1, K, Cout)
        patches = matmul_half_partials(w, go, generator).float()  # (N, K, L), sums over Cout
        grad_input = to_half(F.fold(patches, x.shape[2:], weight.shape[2:], dilation=dilation,
                                    padding=padding, stride=stride), generator)
    if output_mask[1]:
        cols = _cols(x, weight, stride, padding, dilation)  # (N, K, L)
        lhs = go.transpose(0, 1).flatten(1)  # (Cout, N x L)
        rhs = cols.transpose(1, 2).flatten(0, 1)  # (N x L, K)
        grad_weight = matmul_half_partials(lhs, rhs, generator).view(weight.shape)
    if output_mask[2]:
        grad_bias = to_half(grad_out.float().sum((0, 2, 3)), generator)
    return grad_input, grad_weight, grad_bias
