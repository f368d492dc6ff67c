"""Float16 emulation: each op equals float16 storage of its float32 result, bit for bit."""
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves, tree_map

from ipu_tutorials import poptorch
from ipu_tutorials.simulator.half import HalfEmulation, Rounding, involves_half, outside_emulation
from ipu_tutorials.simulator.rounding import PARTIALS_BLOCK, matmul_half_partials, to_half

TINY = 2.0 ** -24  # float16's smallest subnormal


def wide(*shape, low=-7.0, high=2.5):
    """float16 values with magnitudes 10**low..10**high: products underflow and overflow."""
    magnitude = 10 ** (torch.rand(*shape) * (high - low) + low)
    return (torch.randn(*shape).sign() * magnitude).half()


def bits(t: torch.Tensor) -> torch.Tensor:
    return t.detach().view(torch.int16)


def assert_bitwise(emulated: torch.Tensor, reference32: torch.Tensor):
    """The emulated float16 tensor holds exactly float16 storage of the float32 reference."""
    assert emulated.dtype == torch.float16
    expected = reference32.detach().half()
    mismatched = int((bits(emulated) != bits(expected)).sum())
    assert mismatched == 0, f"{mismatched} of {expected.numel()} values differ"


class Recorder(TorchDispatchMode):
    """Entered inside HalfEmulation: sees every op with its float16 arguments, and its result."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        uninitialised = "empty" in func.__name__
        if not (func._schema.is_mutable or func.is_view or uninitialised):
            self.calls.append((func, tree_map(_snapshot, (args, kwargs)), tree_map(_snapshot, out)))
        return out


def _snapshot(x):
    return x.detach().clone() if isinstance(x, torch.Tensor) else x


def _up(x):
    if isinstance(x, torch.Tensor) and x.dtype == torch.float16:
        return x.float()
    return torch.float32 if x is torch.float16 else x


def assert_each_op_rounds_once(calls):
    """Every op ran in float32 on its float16 inputs and rounded its float16 results once."""
    for func, (args, kwargs), out in calls:
        reference = func(*tree_map(_up, args), **tree_map(_up, kwargs))
        for got, want in zip(tree_leaves(out), tree_leaves(reference)):
            if isinstance(got, torch.Tensor) and got.dtype == torch.float16:
                assert_bitwise(got, want)


def check_op(fn, *inputs: torch.Tensor, grad_inputs: bool = True):
    """fn's forward == float32 fn rounded to float16; every backward op rounds its result once."""
    halves = [x.clone().requires_grad_(grad_inputs) for x in inputs]
    floats = [x.float().requires_grad_(grad_inputs) for x in inputs]
    with HalfEmulation():
        out = fn(*halves)
    reference = fn(*floats)
    assert_bitwise(out, reference)
    if not grad_inputs:
        return out
    upstream = wide(*out.shape, low=-3, high=1) if out.dim() else torch.tensor(0.75).half()
    recorder = Recorder()
    with HalfEmulation(), recorder:
        out.backward(upstream)
    assert all(h.grad.dtype == torch.float16 for h in halves)
    assert_each_op_rounds_once(recorder.calls)
    return out


def check_op_input_gradients(fn, *inputs: torch.Tensor):
    """For ops whose backward reads only their inputs: gradients == float32 gradients, rounded."""
    halves = [x.clone().requires_grad_() for x in inputs]
    floats = [x.float().requires_grad_() for x in inputs]
    with HalfEmulation():
        out = fn(*halves)
    upstream = wide(*out.shape, low=-3, high=1)
    with HalfEmulation():
        out.backward(upstream)
    fn(*floats).backward(upstream.float())
    for h, f in zip(halves, floats):
        assert_bitwise(h.grad, f.grad)


def test_wide_inputs_reach_float16_limits():
    x = wide(64, 64)
    with HalfEmulation():
        y = x * x
    assert (y == 0).any() and torch.isinf(y).any()  # the products under- and overflow


def test_linear():
    x, w, b = wide(6, 40, low=-4, high=1.5), wide(8, 40, low=-4, high=1.5), wide(8)
    check_op(F.linear, x, w, b)
    check_op_input_gradients(F.linear, x, w, b)


def test_linear_overflow_and_underflow():
    x = torch.full((2, 4), 300.0).half()
    w = torch.tensor([[300.0] * 4, [1e-4] * 4]).half()
    out = check_op(F.linear, x, w, grad_inputs=False)
    assert torch.isinf(out[:, 0]).all()  # 4 x 90000 overflows float16
    tiny = torch.full((1, 4), 5e-5).half()
    assert (check_op(F.linear, tiny, tiny.clone(), grad_inputs=False) == 0).all()  # 1e-8 -> 0


def test_conv2d():
    x, w, b = wide(2, 3, 9, 9, low=-4, high=1), wide(4, 3, 3, 3, low=-4, high=1), wide(4)
    check_op(lambda *a: F.conv2d(*a, padding=1), x, w, b)
    check_op(lambda *a: F.conv2d(*a, stride=2), x, w, b)
    check_op_input_gradients(lambda *a: F.conv2d(*a, padding=1), x, w, b)


def test_conv2d_differs_from_cpu_float16_kernels():
    """The emulation is the reference: CPU float16 convolutions do not round once."""
    x, w = torch.randn(12, 5, 63, 63).half(), torch.randn(12, 5, 5, 5).half()
    with HalfEmulation():
        emulated = F.conv2d(x, w)
    assert_bitwise(emulated, F.conv2d(x.float(), w.float()))


@pytest.mark.parametrize("pool", [lambda x: F.max_pool2d(x, 2), lambda x: F.max_pool2d(x, 3, 2),
                                  lambda x: F.avg_pool2d(x, 2),
                                  lambda x: F.adaptive_avg_pool2d(x, 1)])
def test_pooling(pool):
    check_op(pool, wide(2, 3, 8, 8))
    check_op_input_gradients(pool, wide(2, 3, 8, 8))


@pytest.mark.parametrize("norm", [
    lambda x, w, b: F.group_norm(x, 2, w, b),
    lambda x, w, b: F.layer_norm(x.transpose(1, 3), (4,), w, b),
    lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True)])
def test_norms(norm):
    x = (torch.randn(4, 4, 6, 6) * 3).half()
    check_op(norm, x, torch.rand(4).half() + 0.5, torch.randn(4).half())


@pytest.mark.parametrize("dim", [0, 1])
def test_softmax_and_log_softmax(dim):
    x = (torch.randn(5, 7) * 4).half()
    check_op(lambda t: F.softmax(t, dim), x)
    check_op(lambda t: F.log_softmax(t, dim), x)


def test_losses():
    logp = F.log_softmax(torch.randn(6, 10), 1).half()
    labels = torch.randint(0, 10, (6,))
    check_op(lambda t: F.nll_loss(t, labels), logp)
    check_op(F.mse_loss, wide(6, 3, low=-3, high=2), wide(6, 3, low=-3, high=2))
    target = torch.rand(6, 3).half()
    check_op(lambda t: F.binary_cross_entropy_with_logits(t, target), torch.randn(6, 3).half())


@pytest.mark.parametrize("fn", [torch.add, torch.mul, torch.sub, torch.div])
def test_elementwise_binary(fn):
    check_op(fn, wide(50), wide(50))
    if fn is not torch.div:
        check_op_input_gradients(fn, wide(50), wide(50))


@pytest.mark.parametrize("fn", [F.relu, F.gelu, torch.sigmoid, torch.tanh, torch.exp,
                                lambda t: t.sum(), lambda t: t.mean(1)])
def test_elementwise_unary_and_reductions(fn):
    check_op(fn, wide(6, 20, low=-4, high=1))


def test_in_place_ops_write_rounded_float16():
    x, y = wide(100), wide(100)
    expected = (x.float() * y.float()).half()
    with HalfEmulation():
        returned = x.mul_(y)
    assert returned is x and torch.equal(bits(x), bits(expected))


def test_gradients_accumulate_in_float16():
    w = wide(30, low=-5, high=0).requires_grad_()
    w32 = w.detach().float().requires_grad_()
    for _ in range(2):
        with HalfEmulation():
            (w * 3).sum().backward()
        (w32 * 3).sum().backward()
    assert_bitwise(w.grad, (w32.grad / 2).half().float() * 2)


def test_float32_ops_pass_through_untouched():
    x = torch.randn(8, 8)
    with HalfEmulation():
        y = x @ x
    assert y.dtype == torch.float32 and torch.equal(y, x @ x)


def test_results_of_other_types_keep_them():
    x = wide(4, 6)
    with HalfEmulation():
        values, indices = x.max(1)
        as_float = x.float() + 1
    assert values.dtype == torch.float16 and indices.dtype == torch.int64
    assert as_float.dtype == torch.float32 and torch.equal(as_float, x.float() + 1)


# --- stochastic rounding ---------------------------------------------------------------------

def test_stochastic_rounding_picks_a_neighbour_in_proportion():
    x = torch.full((20_000,), 1.0 + 2.0 ** -12)  # a quarter of float16's step above 1.0
    rounded = to_half(x, torch.Generator().manual_seed(0))
    up = float((rounded.float() > 1.0).float().mean())
    assert set(rounded.float().unique().tolist()) == {1.0, 1.0 + 2.0 ** -10}
    assert abs(up - 0.25) < 0.02
    exact = torch.tensor([1.0, 0.5, -2.0, 65504.0, TINY])
    assert torch.equal(to_half(exact, torch.Generator().manual_seed(0)).float(), exact)


def test_stochastic_rounding_is_seeded():
    x = torch.rand(1000)
    a = to_half(x, torch.Generator().manual_seed(3))
    b = to_half(x, torch.Generator().manual_seed(3))
    assert torch.equal(bits(a), bits(b)) and not torch.equal(bits(a), bits(x.half()))


def test_stochastic_rounding_mode_rounds_op_results():
    x, y = torch.ones(10_000).half(), torch.full((10_000,), 2.0 ** -12).half()
    with HalfEmulation(Rounding(stochastic=True, seed=1)):
        total = x + y
    assert 0.2 < float((total > 1).float().mean()) < 0.3
    assert torch.equal(bits(x + y), bits(torch.ones(10_000).half()))  # nearest: always 1.0


# --- half partials ---------------------------------------------------------------------------

def test_half_partials_round_every_block_sum():
    a = torch.ones(1, 2 * PARTIALS_BLOCK)
    b = torch.full((2 * PARTIALS_BLOCK, 1), 2.0 ** -5)
    b[0] = 1024.0  # first block sums to 1024.47 -> 1024, second to 0.5; 1024.5 ties to 1024
    assert matmul_half_partials(a, b).item() == 1024.0
    assert (a @ b).half().item() == 1025.0  # float partials: 1024.97 rounds once, to 1025
    with HalfEmulation(Rounding(half_partials=True)):
        assert (a.half() @ b.half()).item() == 1024.0
    with HalfEmulation():
        assert (a.half() @ b.half()).item() == 1025.0


def test_half_partials_conv_matches_its_matmul():
    x, w = torch.randn(2, 3, 7, 7).half(), torch.randn(4, 3, 3, 3).half()
    with HalfEmulation(Rounding(half_partials=True)):
        out = F.conv2d(x, w, padding=1)
    cols = F.unfold(x.float(), 3, padding=1)
    expected = matmul_half_partials(w.float().flatten(1).unsqueeze(0), cols).view(2, 4, 7, 7)
    assert torch.equal(bits(out), bits(expected))


def test_half_partials_backward_runs_and_stays_close():
    x = torch.randn(2, 3, 9, 9).half().requires_grad_()
    conv = nn.Conv2d(3, 4, 3).half()
    with HalfEmulation(Rounding(half_partials=True)):
        conv(x).square().sum().backward()
    x32 = x.detach().float().requires_grad_()
    conv32 = nn.Conv2d(3, 4, 3)
    conv32.load_state_dict({k: v.float() for k, v in conv.state_dict().items()})
    conv32(x32).square().sum().backward()
    torch.testing.assert_close(x.grad.float(), x32.grad, rtol=2e-2, atol=2e-2)
    torch.testing.assert_close(conv.weight.grad.float(), conv32.weight.grad, rtol=2e-2, atol=0.5)


# --- through the simulator -------------------------------------------------------------------

class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3)
        self.fc = nn.Linear(4 * 6 * 6, 10)

    def forward(self, x, labels):
        out = self.fc(F.relu(self.conv(x)).flatten(1))
        return out, F.cross_entropy(out, labels)


def train_half(options=None, steps=3, emulate=True):
    torch.manual_seed(0)
    model = Classifier().half()
    optimizer = poptorch.optim.AdamW(model.parameters(), lr=0.01, accum_type=torch.float16,
                                     loss_scaling=64.0)
    opts = options or poptorch.Options()
    training = poptorch.trainingModel(model, opts.showCompilationProgressBar(False), optimizer)
    data = torch.randn(8, 1, 8, 8).half(), torch.randint(0, 10, (8,))
    for _ in range(steps):
        training(*data)
    return model


def plain_loop_half(steps=3):
    """The same training written as a plain loop under the emulation."""
    torch.manual_seed(0)
    model = Classifier().half()
    optimizer = poptorch.optim.AdamW(model.parameters(), lr=0.01, accum_type=torch.float16)
    data = torch.randn(8, 1, 8, 8).half(), torch.randint(0, 10, (8,))
    with HalfEmulation():
        for _ in range(steps):
            (model(*data)[1] * 64.0).backward()
            optimizer.apply_gradients({p: p.grad for p in model.parameters()}, 1 / 64.0)
            model.zero_grad(set_to_none=True)
    return model


def test_simulator_trains_half_models_with_the_emulation():
    simulated, plain = train_half(), plain_loop_half()
    for a, b in zip(simulated.parameters(), plain.parameters()):
        assert a.dtype == torch.float16 and torch.equal(bits(a), bits(b))


def test_partials_type_changes_the_numbers():
    half = poptorch.Options()
    half.Precision.setPartialsType(torch.half)
    default, with_half_partials = train_half(), train_half(half)
    assert any(not torch.equal(a, b) for a, b in
               zip(default.parameters(), with_half_partials.parameters()))


def test_stochastic_rounding_option_changes_the_numbers_reproducibly():
    def run():
        opts = poptorch.Options().randomSeed(5)
        opts.Precision.enableStochasticRounding(True)
        return train_half(opts)

    first, second, nearest = run(), run(), train_half()
    assert all(torch.equal(a, b) for a, b in zip(first.parameters(), second.parameters()))
    assert any(not torch.equal(a, b) for a, b in zip(first.parameters(), nearest.parameters()))



@pytest.mark.parametrize("stochastic", [False, True])
def test_outside_emulation_leaves_only_nearest_rounding(stochastic):
    """An optimizer update leaves the mode only when its own nearest rounding is the same."""
    from torch.utils._python_dispatch import _get_current_dispatch_mode

    rounding = Rounding(stochastic=stochastic)
    with HalfEmulation(rounding) as mode:
        with outside_emulation(rounding):
            inside = _get_current_dispatch_mode()
        assert _get_current_dispatch_mode() is mode
    assert inside is (mode if stochastic else None)
    with outside_emulation(rounding):  # no emulation to leave
        assert _get_current_dispatch_mode() is None


def test_involves_half():
    model = nn.Linear(2, 2)
    assert not involves_half(model, (torch.randn(1, 2),))
    assert involves_half(model, (torch.randn(1, 2).half(),))
    assert involves_half(model.half(), ())
    sgd = poptorch.optim.SGD(nn.Linear(2, 2).parameters(), lr=0.1, momentum=0.9,
                             velocity_accum_type=torch.float16)
    assert involves_half(nn.Linear(2, 2), (), sgd)


@pytest.mark.parametrize("threads", [1, 2])
def test_lesson5_underflow_counts_do_not_depend_on_threads(threads):
    from ipu_tutorials.classroom.explorers.precision import survival

    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        counts = {scale: survival(float(scale), torch.float16) for scale in (1, 1024)}
    finally:
        torch.set_num_threads(previous)
    summary = {s: (r["total"], r["lost"], r["overflowed"]) for s, r in counts.items()}
    assert summary == EXPECTED_SURVIVAL, summary


EXPECTED_SURVIVAL = {1: (43091, 1579, 0), 1024: (43091, 1, 0)}  # (total, lost, overflowed)


def test_float64_compute_rounds_the_exact_sum_whatever_the_order():
    # float16 products are exact in float64, so the sum is exact whatever order a kernel adds
    # in, and the rounded result is the same on every CPU kernel set and thread count
    torch.manual_seed(0)
    x, w = wide(8, 512, low=-3, high=1), wide(4, 512, low=-3, high=1)
    order = torch.randperm(512)
    with HalfEmulation(compute=torch.float64):
        out = F.linear(x, w)
        shuffled = F.linear(x[:, order], w[:, order])
    assert out.dtype == torch.float16
    assert torch.equal(bits(out), bits(shuffled))
    assert torch.equal(bits(out), bits((x.double() @ w.double().t()).half()))
