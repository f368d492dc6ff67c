"""The sliced optimizer update equals the whole-tensor update bit for bit, step after step."""
import contextlib

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from ipu_tutorials import poptorch
from ipu_tutorials.poptorch import _sliced_update
from ipu_tutorials.simulator import half
from ipu_tutorials.simulator.half import HalfEmulation, Rounding

optim = poptorch.optim
HALF = torch.float16
STEPS = 4


def bits(t: torch.Tensor) -> torch.Tensor:
    """The raw bits (so -0 differs from 0), every NaN as one: a NaN's payload depends on the
    CPU's vector width and thread count, and no learner can observe it."""
    t = t.detach().contiguous()
    t = torch.where(t.isnan(), torch.full_like(t, float("nan")), t)
    return t.view(torch.int16 if t.element_size() == 2 else torch.int32)


def weights(dtype):
    """Weights that span several slices and end in a partial one, small ones, a transposed one."""
    generator = torch.Generator().manual_seed(3)
    shapes = [(3, _sliced_update.SLICE + 123), (7,), (2, 3, 4)]
    ws = [torch.randn(s, generator=generator).to(dtype) for s in shapes]
    ws.append(torch.randn(5, 9, generator=generator).to(dtype).t())  # not contiguous
    return [nn.Parameter(w) for w in ws]


def gradients(ws, step: int, loss_scaling: float, grad_dtype):
    """Loss-scaled gradients with values that underflow and overflow float16 state (g * g)."""
    generator = torch.Generator().manual_seed(100 + step)
    grads = {}
    for w in ws:
        magnitude = 10 ** (torch.rand(w.shape, generator=generator) * 9 - 6)  # 1e-6 .. 1e3
        sign = torch.randn(w.shape, generator=generator).sign()
        grads[w] = (sign * magnitude * loss_scaling).to(grad_dtype)
    return grads


def run(make, dtype, sliced: bool, loss_scaling=1.0, grad_dtype=None):
    """Weights and state after STEPS updates by apply_gradients, sliced or whole-tensor."""
    ws = weights(dtype)
    optimizer = make(ws)
    for step in range(STEPS):
        grads = gradients(ws, step, loss_scaling, grad_dtype or dtype)
        if sliced:
            assert _sliced_update.can_slice(optimizer)
            optimizer.apply_gradients(grads, 1.0 / loss_scaling)
        else:
            torch.no_grad()(optimizer._apply_per_tensor)(grads, 1.0 / loss_scaling)
    states = [t for w in ws for t in optimizer.state[w].values() if isinstance(t, torch.Tensor)]
    return ws + states


H = dict(accum_type=HALF)
CASES = {
    "SGD": lambda ws: optim.SGD(ws, lr=0.1),
    "SGD momentum float16 velocity": lambda ws: optim.SGD(
        ws, lr=0.05, momentum=0.9, dampening=0.1, velocity_accum_type=HALF, **H),
    "SGD velocity scaling": lambda ws: optim.SGD(
        ws, lr=0.05, momentum=0.9, velocity_scaling=64.0, use_combined_accum=True,
        velocity_accum_type=HALF, weight_decay=0.01, **H),
    "SGD nesterov maximize": lambda ws: optim.SGD(
        ws, lr=0.05, momentum=0.8, nesterov=True, maximize=True),
    "Adam float16 moments": lambda ws: optim.Adam(
        ws, lr=0.01, weight_decay=0.1, first_order_momentum_accum_type=HALF,
        second_order_momentum_accum_type=HALF, **H),
    "AdamW float32 moments": lambda ws: optim.AdamW(ws, lr=0.01, bias_correction=False),
    "AdamW float16 moments": lambda ws: optim.AdamW(
        ws, lr=0.001, first_order_momentum_accum_type=HALF, second_order_momentum_accum_type=HALF),
    "AdamW clipped": lambda ws: optim.AdamW(ws, lr=0.01, max_grad_norm=0.5, **H),
    "RMSprop centered momentum": lambda ws: optim.RMSprop(
        ws, lr=0.01, centered=True, momentum=0.5, first_order_momentum_accum_type=HALF,
        second_order_momentum_accum_type=HALF),
    "RMSprop tf variant": lambda ws: optim.RMSprop(ws, lr=0.01, use_tf_variant=True,
                                                   weight_decay=0.01),
}


@pytest.mark.parametrize("dtype, loss_scaling", [(HALF, 1024.0), (torch.float32, 1.0)])
@pytest.mark.parametrize("case", list(CASES))
def test_sliced_update_equals_whole_tensor_update_bit_for_bit(case, dtype, loss_scaling):
    sliced = run(CASES[case], dtype, True, loss_scaling)
    whole = run(CASES[case], dtype, False, loss_scaling)
    for ours, reference in zip(sliced, whole):
        assert ours.dtype == reference.dtype and ours.shape == reference.shape
        assert torch.equal(bits(ours), bits(reference))


def test_float32_gradients_of_float16_weights_give_the_same_bits():
    make = CASES["AdamW float16 moments"]
    sliced = run(make, HALF, True, 1024.0, grad_dtype=torch.float32)
    whole = run(make, HALF, False, 1024.0, grad_dtype=torch.float32)
    assert all(torch.equal(bits(a), bits(b)) for a, b in zip(sliced, whole))


def test_the_cases_reach_float16_limits():
    """The comparison covers state that overflows to inf and weights that go to zero or inf."""
    values = run(CASES["AdamW float16 moments"], HALF, False, 1024.0)
    assert any(torch.isinf(t).any() for t in values)


def test_lamb_and_watched_updates_are_not_sliced():
    w = [nn.Parameter(torch.ones(3))]
    assert not _sliced_update.can_slice(optim.LAMB(w))
    adam = optim.Adam(w)
    assert _sliced_update.can_slice(adam)
    with HalfEmulation(Rounding(stochastic=True)):
        assert not _sliced_update.can_slice(adam)


# --- through the simulator: the new path against the old one ---------------------------------
class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3)
        self.fc = nn.Linear(4 * 30 * 30, 10)

    def forward(self, x, labels):
        out = self.fc(F.relu(self.conv(x)).flatten(1))
        return out, F.cross_entropy(out, labels)


def train(make, stochastic: bool, previous_path: bool, steps=3):
    torch.manual_seed(0)
    model = Classifier().half()
    opts = poptorch.Options().randomSeed(7).showCompilationProgressBar(False)
    opts.Precision.enableStochasticRounding(stochastic)
    training = poptorch.trainingModel(model, opts, make(model.parameters()))
    data = torch.randn(8, 1, 32, 32).half(), torch.randint(0, 10, (8,))
    stay_inside = lambda rounding: contextlib.nullcontext()  # noqa: E731 - the previous runtime
    with pytest.MonkeyPatch.context() as patch:
        if previous_path:
            patch.setattr(half, "outside_emulation", stay_inside)
        for _ in range(steps):
            training(*data)
    return list(model.parameters())


@pytest.mark.parametrize("stochastic", [False, True])
@pytest.mark.parametrize("make", [
    lambda ps: optim.AdamW(ps, lr=0.01, accum_type=HALF, loss_scaling=256.0,
                           first_order_momentum_accum_type=HALF),
    lambda ps: optim.SGD(ps, lr=0.01, momentum=0.9, velocity_scaling=16.0,
                         use_combined_accum=True, velocity_accum_type=HALF, loss_scaling=128.0),
], ids=["AdamW", "SGD"])
def test_simulated_half_training_keeps_its_bits(make, stochastic):
    """Leaving the emulation for the update changes no bit, with or without stochastic rounding
    (stochastic updates stay inside it and draw from the same generator)."""
    ours, previous = train(make, stochastic, False), train(make, stochastic, True)
    assert all(torch.equal(bits(a), bits(b)) for a, b in zip(ours, previous))
    assert all(torch.isfinite(w).all() for w in ours)
    if stochastic:
        nearest = train(make, False, False)
        assert any(not torch.equal(bits(a), bits(b)) for a, b in zip(ours, nearest))


def test_slices_run_on_one_thread_and_the_thread_count_comes_back():
    seen = []

    class Recording(optim.SGD):
        _elementwise = True  # a subclass's own update is sliced only when it says so

        def _update(self, w, g, state, group):
            seen.append(torch.get_num_threads())
            return super()._update(w, g, state, group)

    w = nn.Parameter(torch.ones(3))
    previous = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        Recording([w], lr=0.1).apply_gradients({w: torch.ones(3)}, 1.0)
        assert seen == [1] and torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(previous)


def test_a_users_own_update_runs_on_whole_tensors_unless_declared_elementwise():
    class WholeTensorRule(poptorch.optim.SGD):  # e.g. normalises by the whole tensor's norm
        def _update(self, w, g, state, group):
            return super()._update(w, g / g.norm().clamp_min(1e-12), state, group)

    class DeclaredElementwise(poptorch.optim.SGD):
        _elementwise = True

        def _update(self, w, g, state, group):
            return super()._update(w, 2 * g, state, group)

    class Unchanged(poptorch.optim.SGD):
        pass

    params = [torch.nn.Parameter(torch.zeros(3))]
    assert not _sliced_update.can_slice(WholeTensorRule(params, lr=0.1))
    assert _sliced_update.can_slice(DeclaredElementwise(params, lr=0.1))
    assert _sliced_update.can_slice(Unchanged(params, lr=0.1))
    assert not _sliced_update.can_slice(poptorch.optim.LAMB(params, lr=0.1))
