"""poptorch.optim: the same updates as torch.optim (to 1e-6 with float32 weights), LAMB against a
reference written from its documented rule, and the IPU-only arguments validated."""
import copy
import math
import warnings

import pytest
import torch

from ipu_tutorials import poptorch

optim = poptorch.optim
SHAPES = ((4, 3), (3,), (2, 2, 2))
STEPS = 6
TOL = dict(atol=1e-6, rtol=0)


def params(seed=1):
    generator = torch.Generator().manual_seed(seed)
    return [torch.nn.Parameter(torch.randn(s, generator=generator)) for s in SHAPES]


def gradient_sequence(steps=STEPS, seed=2):
    generator = torch.Generator().manual_seed(seed)
    return [[torch.randn(s, generator=generator) for s in SHAPES] for _ in range(steps)]


def train(make_optimizer, grads_seq, seed=1):
    """Run `make_optimizer(params)` over fixed gradients; returns (weights, optimizer)."""
    weights = params(seed)
    optimizer = make_optimizer(weights)
    for grads in grads_seq:
        for w, g in zip(weights, grads):
            w.grad = g.clone()
        optimizer.step()
    return weights, optimizer


def assert_same(weights, reference, **tol):
    for w, r in zip(weights, reference):
        assert w.dtype == r.dtype
        assert torch.allclose(w, r, **(tol or TOL)), (w - r).abs().max().item()


# --- every optimizer equals torch.optim ------------------------------------------------------------
CASES = {
    "SGD": (optim.SGD, torch.optim.SGD, dict(lr=0.1)),
    "SGD momentum": (optim.SGD, torch.optim.SGD, dict(lr=0.1, momentum=0.9)),
    "SGD dampening": (optim.SGD, torch.optim.SGD, dict(lr=0.05, momentum=0.8, dampening=0.3)),
    "SGD nesterov+wd": (optim.SGD, torch.optim.SGD,
                        dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01)),
    "SGD maximize": (optim.SGD, torch.optim.SGD, dict(lr=0.1, momentum=0.5, maximize=True)),
    "Adam": (optim.Adam, torch.optim.Adam, dict(lr=0.01)),
    "Adam wd+betas": (optim.Adam, torch.optim.Adam,
                      dict(lr=0.02, betas=(0.8, 0.95), eps=1e-6, weight_decay=0.1)),
    "Adam maximize": (optim.Adam, torch.optim.Adam, dict(lr=0.01, maximize=True)),
    "AdamW": (optim.AdamW, torch.optim.AdamW, dict(lr=0.01)),
    "AdamW wd": (optim.AdamW, torch.optim.AdamW, dict(lr=0.03, weight_decay=0.2, betas=(0.7, 0.9))),
    "RMSprop": (optim.RMSprop, torch.optim.RMSprop, dict(lr=0.01)),
    "RMSprop momentum+wd": (optim.RMSprop, torch.optim.RMSprop,
                            dict(lr=0.01, momentum=0.9, weight_decay=0.05)),
    "RMSprop centered": (optim.RMSprop, torch.optim.RMSprop,
                         dict(lr=0.01, centered=True, alpha=0.9)),
    "RMSprop centered+momentum": (optim.RMSprop, torch.optim.RMSprop,
                                  dict(lr=0.005, centered=True, momentum=0.5, eps=1e-4)),
}


@pytest.mark.parametrize("case", list(CASES))
def test_optimizer_equals_torch_over_several_steps(case):
    ours, theirs, kwargs = CASES[case]
    grads = gradient_sequence()
    weights, optimizer = train(lambda p: ours(p, **kwargs), grads)
    reference, _ = train(lambda p: theirs(p, **kwargs), grads)
    assert_same(weights, reference)
    assert isinstance(optimizer, theirs)  # a drop-in subclass of the torch optimizer
    initial = params()
    assert any(not torch.equal(w, i) for w, i in zip(weights, initial))  # it did train


@pytest.mark.parametrize("ours, theirs", [(optim.SGD, torch.optim.SGD),
                                          (optim.Adam, torch.optim.Adam),
                                          (optim.AdamW, torch.optim.AdamW),
                                          (optim.RMSprop, torch.optim.RMSprop)])
def test_training_a_model_equals_torch(ours, theirs):
    def run(cls):
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
        optimizer = cls(model.parameters(), lr=0.01)
        x, y = torch.randn(16, 5), torch.randn(16, 1)
        for _ in range(5):
            optimizer.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()
        return list(model.parameters())

    assert_same(run(ours), run(theirs))


def test_param_groups_with_their_own_momentum_equal_torch():
    groups = lambda p: [{"params": p[:1]}, {"params": p[1:], "momentum": 0.9, "lr": 0.05}]
    grads = gradient_sequence()
    weights, _ = train(lambda p: optim.SGD(groups(p), lr=0.1), grads)
    reference, _ = train(lambda p: torch.optim.SGD(groups(p), lr=0.1), grads)
    assert_same(weights, reference)
    rms_groups = lambda p: [{"params": p[:1]}, {"params": p[1:], "momentum": 0.5, "centered": True}]
    weights, _ = train(lambda p: optim.RMSprop(rms_groups(p), lr=0.01), grads)
    reference, _ = train(lambda p: torch.optim.RMSprop(rms_groups(p), lr=0.01), grads)
    assert_same(weights, reference)


def test_step_with_closure_returns_the_loss():
    w = torch.nn.Parameter(torch.tensor([1.0, -2.0]))
    optimizer = optim.SGD([w], lr=0.1)

    def closure():
        optimizer.zero_grad()
        loss = (w ** 2).sum()
        loss.backward()
        return loss

    loss = optimizer.step(closure)
    assert loss.item() == pytest.approx(5.0)
    assert torch.allclose(w, torch.tensor([0.8, -1.6]))


def test_half_weights_stay_half():
    w = torch.nn.Parameter(torch.ones(3, dtype=torch.float16))
    optimizer = optim.Adam([w], lr=0.1)
    w.grad = torch.ones(3, dtype=torch.float16)
    optimizer.step()
    assert w.dtype == torch.float16
    assert torch.allclose(w.float(), torch.full((3,), 0.9), atol=1e-3)


# --- LAMB against its documented rule ----------------------------------------------------------------
def lamb_reference(weights, grads_seq, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                   bias_correction=True, max_weight_norm=65500.0):
    """u = m_hat / (sqrt(v_hat) + eps) + wd * w; w -= lr * min(|w|, max_weight_norm) / |u| * u,
    the trust ratio being 1 when either norm is 0 (in float64)."""
    b1, b2 = betas
    ws = [w.detach().double().clone() for w in weights]
    ms = [torch.zeros_like(w) for w in ws]
    vs = [torch.zeros_like(w) for w in ws]
    for t, grads in enumerate(grads_seq, 1):
        for i, g in enumerate(grads):
            g = g.double()
            ms[i] = b1 * ms[i] + (1 - b1) * g
            vs[i] = b2 * vs[i] + (1 - b2) * g * g
            m_hat, v_hat = ((ms[i] / (1 - b1 ** t), vs[i] / (1 - b2 ** t)) if bias_correction
                            else (ms[i], vs[i]))
            u = m_hat / (v_hat.sqrt() + eps) + weight_decay * ws[i]
            w_norm, u_norm = ws[i].norm().item(), u.norm().item()
            trust = 1.0 if w_norm == 0 or u_norm == 0 else min(w_norm, max_weight_norm) / u_norm
            ws[i] = ws[i] - lr * trust * u
    return [w.float() for w in ws]


@pytest.mark.parametrize("kwargs", [
    {}, dict(lr=0.01, weight_decay=0.0), dict(lr=0.02, betas=(0.8, 0.99), eps=1e-6),
    dict(lr=0.01, bias_correction=False), dict(lr=0.05, max_weight_norm=0.5),
])
def test_lamb_follows_its_documented_rule(kwargs):
    grads = gradient_sequence()
    weights, _ = train(lambda p: optim.LAMB(p, **kwargs), grads)
    assert_same(weights, lamb_reference(params(), grads, **kwargs))


def test_lamb_trust_ratio_is_one_for_zero_weights():
    w = torch.nn.Parameter(torch.zeros(4))
    g = torch.tensor([1.0, -2.0, 3.0, -4.0])
    optimizer = optim.LAMB([w], lr=0.1, weight_decay=0.0)
    w.grad = g.clone()
    optimizer.step()
    # m_hat = g, v_hat = g^2, so u = sign(g) (eps aside) and the step is lr * u
    assert torch.allclose(w, -0.1 * torch.sign(g), atol=1e-6)


def test_lamb_defaults_follow_poptorch():
    optimizer = optim.LAMB(params())
    group = optimizer.param_groups[0]
    assert (group["lr"], group["betas"], group["eps"], group["weight_decay"]) == (
        1e-3, (0.9, 0.999), 1e-8, 1e-2)
    assert group["max_weight_norm"] == 65500.0
    assert optimizer.bias_correction is True and optimizer.loss_scaling == 1.0
    assert optim.LAMB(params(), max_weight_norm=None).param_groups[0]["max_weight_norm"] == 65500.0


@pytest.mark.parametrize("kwargs, message", [
    (dict(lr=-0.5), r"LAMB lr must be a non-negative number, got -0.5"),
    (dict(betas=(0.9, 1.0)), r"LAMB betas must be in \[0, 1\), got \(0.9, 1.0\)"),
    (dict(betas=(-0.1, 0.9)), r"LAMB betas must be in \[0, 1\)"),
])
def test_lamb_rejects_bad_hyperparameters(kwargs, message):
    with pytest.raises(ValueError, match=message):
        optim.LAMB(params(), **kwargs)


def test_lamb_takes_a_zero_learning_rate_as_torch_optimizers_do():
    assert optim.LAMB(params(), lr=0.0).param_groups[0]["lr"] == 0.0


# --- loss scaling, apply_gradients and clipping ----------------------------------------------------
ALL = [optim.SGD, optim.Adam, optim.AdamW, optim.RMSprop, optim.LAMB]


@pytest.mark.parametrize("cls", ALL)
def test_loss_scaling_is_undone_by_apply_gradients(cls):
    """The IPU hands over loss-scaled gradients with scale = 1 / loss_scaling: same training."""
    grads = gradient_sequence()
    reference, _ = train(lambda p: cls(p, lr=0.01), grads)
    weights = params()
    optimizer = cls(weights, lr=0.01, loss_scaling=1024.0)
    assert optimizer.loss_scaling == 1024.0
    for step_grads in grads:
        optimizer.apply_gradients({w: g * 1024.0 for w, g in zip(weights, step_grads)},
                                  scale=1 / 1024.0)
    assert_same(weights, reference)


@pytest.mark.parametrize("cls", ALL)
def test_loss_scaling_does_not_change_a_cpu_step(cls):
    grads = gradient_sequence(3)
    scaled, _ = train(lambda p: cls(p, lr=0.01, loss_scaling=64.0), grads)
    plain, _ = train(lambda p: cls(p, lr=0.01), grads)
    assert_same(scaled, plain)


@pytest.mark.parametrize("cls, theirs", [(optim.SGD, torch.optim.SGD), (optim.Adam, torch.optim.Adam),
                                         (optim.RMSprop, torch.optim.RMSprop)])
def test_apply_gradients_equals_setting_scaled_grads_and_stepping(cls, theirs):
    grads = gradient_sequence(4)
    weights = params()
    optimizer = cls(weights, lr=0.01, momentum=0.9) if cls is not optim.Adam else cls(weights)
    for step_grads in grads:
        optimizer.apply_gradients(dict(zip(weights, step_grads)), scale=0.25)
    assert all(w.grad is None for w in weights)  # .grad is neither read nor written
    reference = params()
    ref_opt = (theirs(reference, lr=0.01, momentum=0.9) if theirs is not torch.optim.Adam
               else theirs(reference))
    for step_grads in grads:
        for w, g in zip(reference, step_grads):
            w.grad = g * 0.25
        ref_opt.step()
    assert_same(weights, reference)


def test_apply_gradients_skips_weights_without_gradients():
    weights = params()
    optimizer = optim.SGD(weights, lr=0.1)
    before = [w.detach().clone() for w in weights]
    optimizer.apply_gradients({weights[0]: torch.ones(SHAPES[0])}, scale=1.0)
    assert torch.allclose(weights[0], before[0] - 0.1)
    assert torch.equal(weights[1], before[1]) and torch.equal(weights[2], before[2])


@pytest.mark.parametrize("cls, theirs", [(optim.SGD, torch.optim.SGD), (optim.Adam, torch.optim.Adam),
                                         (optim.AdamW, torch.optim.AdamW)])
@pytest.mark.parametrize("max_norm", [0.5, 2.0, 1e6])  # clips hard, a little, and not at all
def test_max_grad_norm_equals_clip_grad_norm_then_step(cls, theirs, max_norm):
    grads = gradient_sequence()
    weights, _ = train(lambda p: cls(p, lr=0.05, max_grad_norm=max_norm), grads)
    reference = params()
    ref_opt = theirs(reference, lr=0.05)
    for step_grads in grads:
        for w, g in zip(reference, step_grads):
            w.grad = g.clone()
        torch.nn.utils.clip_grad_norm_(reference, max_norm)
        ref_opt.step()
    assert_same(weights, reference)
    if max_norm < 1e6:  # clipping really happened
        unclipped, _ = train(lambda p: cls(p, lr=0.05), grads)
        assert not torch.allclose(weights[0], unclipped[0], atol=1e-4)


def test_max_grad_norm_must_be_a_number():
    with pytest.raises(ValueError, match=r"max_grad_norm must be a number \(math.inf disables "
                                         r"clipping\), got nan"):
        optim.SGD(params(), lr=0.1, max_grad_norm=math.nan)
    assert optim.Adam(params(), max_grad_norm=None).max_grad_norm == math.inf  # None: default
    assert optim.SGD(params(), lr=0.1).max_grad_norm == math.inf


# --- argument validation ------------------------------------------------------------------------------
@pytest.mark.parametrize("cls", ALL)
@pytest.mark.parametrize("value", [0, -1.0, "1", True])
def test_loss_scaling_must_be_positive(cls, value):
    with pytest.raises(ValueError, match=rf"loss_scaling must be a positive number, got {value!r}"):
        cls(params(), lr=0.01, loss_scaling=value)


ACCUM_ARGS = {
    optim.SGD: ["accum_type", "velocity_accum_type"],
    optim.Adam: ["accum_type", "first_order_momentum_accum_type", "second_order_momentum_accum_type"],
    optim.AdamW: ["accum_type", "first_order_momentum_accum_type",
                  "second_order_momentum_accum_type"],
    optim.RMSprop: ["accum_type", "first_order_momentum_accum_type",
                    "second_order_momentum_accum_type"],
    optim.LAMB: ["accum_type", "first_order_momentum_accum_type", "second_order_momentum_accum_type"],
}


@pytest.mark.parametrize("cls, arg", [(c, a) for c, args in ACCUM_ARGS.items() for a in args])
def test_accumulation_types_must_be_float32_or_float16(cls, arg):
    with pytest.raises(ValueError, match=rf"^{arg} must be torch.float32 or torch.float16, "
                                         rf"got torch.int32$"):
        cls(params(), lr=0.01, **{arg: torch.int32})
    with pytest.raises(ValueError, match=rf"{arg} must be .*, got torch.float64"):
        cls(params(), lr=0.01, **{arg: torch.float64})
    for ok in (torch.float32, torch.float16, None):
        cls(params(), lr=0.01, **{arg: ok})


@pytest.mark.parametrize("cls", [optim.Adam, optim.AdamW])
def test_amsgrad_is_refused(cls):
    with pytest.raises(ValueError, match=rf"{cls.__name__}\(amsgrad=True\) is not supported on the "
                                         rf"IPU; use amsgrad=False"):
        cls(params(), amsgrad=True)


def test_velocity_scaling_warns_unless_combined_accumulator():
    with pytest.warns(UserWarning, match=r"velocity_scaling is ignored unless "
                                         r"use_combined_accum=True"):
        optim.SGD(params(), lr=0.1, momentum=0.9, velocity_scaling=128.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        optim.SGD(params(), lr=0.1, momentum=0.9, velocity_scaling=128.0, use_combined_accum=True)
        optim.SGD(params(), lr=0.1, momentum=0.9)
    with pytest.raises(ValueError, match=r"velocity_scaling must be a positive number, got 0"):
        optim.SGD(params(), lr=0.1, velocity_scaling=0)


def test_velocity_scaling_stores_scaled_velocity_without_changing_training():
    grads = gradient_sequence()
    kwargs = dict(lr=0.05, momentum=0.9, use_combined_accum=True)
    scaled, optimizer = train(lambda p: optim.SGD(p, velocity_scaling=64.0, **kwargs), grads)
    plain, plain_opt = train(lambda p: optim.SGD(p, **kwargs), grads)
    assert_same(scaled, plain)
    for w_scaled, w_plain in zip(scaled, plain):
        assert torch.allclose(optimizer.state[w_scaled]["momentum_buffer"],
                              64.0 * plain_opt.state[w_plain]["momentum_buffer"], atol=1e-4)


# --- state in its declared type ----------------------------------------------------------------------
def state_dtypes(optimizer, weight):
    return {k: v.dtype for k, v in optimizer.state[weight].items() if isinstance(v, torch.Tensor)}


def test_state_is_float32_by_default():
    for cls, names in [(lambda p: optim.SGD(p, lr=0.1, momentum=0.9), {"momentum_buffer"}),
                       (optim.Adam, {"exp_avg", "exp_avg_sq"}), (optim.LAMB, {"exp_avg", "exp_avg_sq"}),
                       (lambda p: optim.RMSprop(p, momentum=0.5, centered=True),
                        {"square_avg", "momentum_buffer", "grad_avg"})]:
        weights, optimizer = train(cls, gradient_sequence(1))
        assert state_dtypes(optimizer, weights[0]) == {n: torch.float32 for n in names}


@pytest.mark.parametrize("make, expected", [
    (lambda p: optim.Adam(p, first_order_momentum_accum_type=torch.float16),
     {"exp_avg": torch.float16, "exp_avg_sq": torch.float32}),
    (lambda p: optim.AdamW(p, second_order_momentum_accum_type=torch.float16),
     {"exp_avg": torch.float32, "exp_avg_sq": torch.float16}),
    (lambda p: optim.LAMB(p, first_order_momentum_accum_type=torch.float16,
                          second_order_momentum_accum_type=torch.float16),
     {"exp_avg": torch.float16, "exp_avg_sq": torch.float16}),
    (lambda p: optim.SGD(p, lr=0.1, momentum=0.9, velocity_accum_type=torch.float16),
     {"momentum_buffer": torch.float16}),
    (lambda p: optim.RMSprop(p, momentum=0.5, centered=True,
                             first_order_momentum_accum_type=torch.float16),
     {"square_avg": torch.float32, "momentum_buffer": torch.float16, "grad_avg": torch.float16}),
])
def test_state_is_kept_in_the_declared_accumulation_type(make, expected):
    weights, optimizer = train(make, gradient_sequence(3))
    for w in weights:
        assert state_dtypes(optimizer, w) == expected
        assert w.dtype == torch.float32


def test_float16_first_moment_is_the_float32_value_rounded():
    grads = gradient_sequence(1)
    weights, optimizer = train(lambda p: optim.Adam(p, first_order_momentum_accum_type=torch.float16),
                               grads)
    for w, g in zip(weights, grads[0]):
        assert torch.equal(optimizer.state[w]["exp_avg"], (0.1 * g).half())
        assert torch.equal(optimizer.state[w]["exp_avg_sq"], 0.001 * g * g)
    reference, _ = train(optim.Adam, grads)
    assert_same(weights, reference, atol=1e-5, rtol=0)  # close: only the rounding differs


def test_state_size_reported_to_the_simulator():
    assert optim.SGD(params(), lr=0.1)._state_per_param == 0
    assert optim.SGD(params(), lr=0.1, momentum=0.9)._state_per_param == 1
    assert optim.Adam(params())._state_per_param == 2
    assert optim.RMSprop(params(), momentum=0.9, centered=True)._state_per_param == 3
    assert optim.Adam(params())._state_bytes == 4
    half = dict(first_order_momentum_accum_type=torch.float16,
                second_order_momentum_accum_type=torch.float16)
    assert optim.Adam(params(), **half)._state_bytes == 2
    assert optim.Adam(params(), first_order_momentum_accum_type=torch.float16)._state_bytes == 4
    assert (optim.SGD(params(), lr=0.1, momentum=0.9, accum_type=torch.float16).accum_type ==
            torch.float16)


def test_the_combined_sgd_accumulator_ignores_the_accumulation_types():
    # was wrong: use_combined_accum=True honoured velocity_accum_type, which PopTorch ignores for
    # the combined tensor (python/optim.py); it takes the weight's type, and is no extra state
    for weight_type, given in ((torch.float32, torch.float16), (torch.float16, torch.float32)):
        weights = [torch.nn.Parameter(torch.ones(3, dtype=weight_type))]
        sgd = optim.SGD(weights, lr=0.1, momentum=0.9, use_combined_accum=True,
                        accum_type=given, velocity_accum_type=given)
        sgd.apply_gradients({weights[0]: torch.ones(3, dtype=weight_type)}, 1.0)
        assert sgd.state[weights[0]]["momentum_buffer"].dtype == weight_type
        assert sgd.accum_type == given  # kept, as PopTorch keeps it
        assert sgd._accumulator_type is None and sgd._state_per_param == 0
    separate = optim.SGD(params(), lr=0.1, momentum=0.9, accum_type=torch.float16)
    assert separate._accumulator_type == torch.float16 and separate._state_per_param == 1


def test_the_combined_sgd_accumulator_is_the_gradient_accumulator_in_the_memory_plan():
    def first_ipu(**kwargs):
        net = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.Linear(64, 1))
        model = poptorch.trainingModel(_WithLoss(net),
                                       poptorch.Options().showCompilationProgressBar(False),
                                       optim.SGD(net.parameters(), lr=0.1, momentum=0.9, **kwargs))
        model.compile(torch.zeros(4, 64), torch.zeros(4, 1))
        return model.plan.memory[0]
    separate, combined = first_ipu(), first_ipu(use_combined_accum=True,
                                                velocity_accum_type=torch.float16)
    assert separate.optimizer == separate.weights and combined.optimizer == 0
    assert combined.gradients == separate.gradients == separate.weights  # float32, as the weights


class _WithLoss(torch.nn.Module):
    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x, y):
        out = self.net(x)
        return out, torch.nn.functional.mse_loss(out, y)


@pytest.mark.parametrize("cls", [poptorch.optim.AdamW, poptorch.optim.LAMB])
def test_an_optimizer_resumed_from_its_state_dict_takes_the_same_steps(cls):
    """torch's load_state_dict turns "step" into a float tensor; the bias correction must not change."""
    torch.manual_seed(0)
    weights = [torch.nn.Parameter(torch.randn(5)) for _ in range(2)]
    grads = [{w: torch.randn(5) for w in weights} for _ in range(4)]
    straight = cls(weights, lr=0.01)
    for step in grads[:2]:
        straight.apply_gradients(step, 1.0)
    saved, at_two = copy.deepcopy(straight.state_dict()), [w.detach().clone() for w in weights]
    for step in grads[2:]:
        straight.apply_gradients(step, 1.0)
    expected = [w.detach().clone() for w in weights]
    with torch.no_grad():
        for w, value in zip(weights, at_two):
            w.copy_(value)
    resumed = cls(weights, lr=0.01)
    resumed.load_state_dict(saved)
    for step in grads[2:]:
        resumed.apply_gradients(step, 1.0)
    assert all(torch.equal(w, e) for w, e in zip(weights, expected))


def test_every_constructor_argument_of_the_class_and_its_bases_may_be_marked_variable():
    weights = [torch.nn.Parameter(torch.ones(2))]

    class NoBias(poptorch.optim.LAMB):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, bias_correction=False, **kwargs)

    for optimizer in (poptorch.optim.AdamW(weights, lr=1.0), NoBias(weights, lr=1.0)):
        assert optimizer.variable_attrs.isConstant("loss_scaling")
        optimizer.variable_attrs.markAsVariable("loss_scaling")
        assert not optimizer.variable_attrs.isConstant("loss_scaling")
        assert optimizer.variable_attrs._variable_attributes == ["lr", "loss_scaling"]
    with pytest.raises(AssertionError, match="Unknown attribute kwargs"):
        NoBias(weights, lr=1.0).variable_attrs.markAsVariable("kwargs")


def test_sgd_with_a_variable_momentum_keeps_a_velocity_from_the_start():
    weight = torch.nn.Parameter(torch.zeros(2))
    optimizer = poptorch.optim.SGD([weight], lr=0.1, momentum=0.0)  # passed: variable
    grads = [torch.tensor([1.0, 2.0]), torch.tensor([3.0, 1.0])]
    for g in grads:
        optimizer.apply_gradients({weight: g}, 1.0)
    torch.testing.assert_close(optimizer.state[weight]["momentum_buffer"], grads[1])
    torch.testing.assert_close(weight.detach(), -0.1 * (grads[0] + grads[1]))
