"""Half partials for the ops that have them: matmuls and plain 2-D convolutions equal float32
on exactly representable sums, and every other op is left to float partials."""
import torch
import torch.nn.functional as F

from ipu_tutorials.simulator import partials

aten = torch.ops.aten


def small_ints(*shape, seed=0):
    """Integers in [-3, 3] as float16: their products and sums are exact in float16."""
    return torch.randint(-3, 4, shape, generator=torch.Generator().manual_seed(seed)).half()


def test_matmuls_equal_float32_when_every_sum_is_exact():
    a, b, bias = small_ints(3, 40), small_ints(40, 5, seed=1), small_ints(5, seed=2)
    assert torch.equal(partials.run(aten.mm.default, (a, b), {}, None).float(), a.float() @ b.float())
    addmm = partials.run(aten.addmm.default, (bias, a, b), {"beta": 2}, None)
    assert torch.equal(addmm.float(), 2 * bias.float() + a.float() @ b.float())


def test_a_plain_conv2d_and_its_gradients_equal_float32_on_exact_sums():
    x, w, bias = small_ints(2, 3, 6, 6), small_ints(4, 3, 3, 3, seed=1), small_ints(4, seed=2)
    args = (x, w, bias, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)
    out = partials.run(aten.convolution.default, args, {}, None)
    assert torch.equal(out.float(), F.conv2d(x.float(), w.float(), bias.float(), padding=1))
    grad_out = small_ints(*out.shape, seed=3)
    grads = partials.run(aten.convolution_backward.default,
                         (grad_out, x, w, [4], [1, 1], [1, 1], [1, 1], False, [0, 0], 1,
                          [True, True, True]), {}, None)
    xf, wf = x.float().requires_grad_(), w.float().requires_grad_()
    F.conv2d(xf, wf, padding=1).backward(grad_out.float())
    assert torch.equal(grads[0].float(), xf.grad) and torch.equal(grads[1].float(), wf.grad)
    assert torch.equal(grads[2].float(), grad_out.float().sum((0, 2, 3)))


def test_ops_without_half_partials_are_not_handled():
    a = small_ints(2, 2)
    assert partials.run(aten.add.Tensor, (a, a), {}, None) is NotImplemented
    assert partials.run(aten.mm.default, (a.float(), a.float()), {}, None) is NotImplemented
    grouped = (small_ints(1, 2, 4, 4), small_ints(2, 1, 3, 3), None, [1, 1], [0, 0], [1, 1],
               False, [0, 0], 2)
    assert partials.run(aten.convolution.default, grouped, {}, None) is NotImplemented
