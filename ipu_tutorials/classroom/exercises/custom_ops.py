"""Exercises of lesson 12: custom operations (a custom loss, a loop on the device)."""
from __future__ import annotations

import torch
import torch.nn as nn

from ... import poptorch
from .base import Exercise, Feedback, Mistake, right, wrong

PENALTY, LR = 0.01, 0.1


class Regressor(nn.Module):
    """A linear layer whose loss the learner writes: forward returns (output, loss)."""

    def __init__(self, loss_fn):
        super().__init__()
        self.fc = nn.Linear(8, 4)
        self.loss_fn = loss_fn

    def forward(self, x, target):
        out = self.fc(x)
        return out, self.loss_fn(out, target, self.fc.weight)


def reference_loss(out, target, weight):
    """Mean absolute error plus PENALTY x the sum of squared weights (plain PyTorch)."""
    return (out - target).abs().mean() + PENALTY * weight.pow(2).sum()


def _data():
    g = torch.Generator().manual_seed(0)
    return torch.randn(16, 8, generator=g), torch.randn(16, 4, generator=g)


def _weights_after_one_step(loss_fn, on_ipu: bool) -> torch.Tensor:
    torch.manual_seed(0)
    model = Regressor(loss_fn)
    x, target = _data()
    if on_ipu:
        opts = poptorch.Options().showCompilationProgressBar(False)
        training = poptorch.trainingModel(model, opts, poptorch.optim.SGD(model.parameters(),
                                                                          lr=LR))
        try:
            training(x, target)
        finally:
            training.destroy()
    else:
        optimizer = torch.optim.SGD(model.parameters(), lr=LR)
        model(x, target)[1].backward()
        optimizer.step()
    return model.fc.weight.detach().clone()


def _returns_the_reference(my_loss) -> bool:
    """Whether the function's value is the reference loss (whatever backward would start at)."""
    torch.manual_seed(0)
    model, (x, target) = Regressor(my_loss), _data()
    with torch.no_grad():
        out, value = model(x, target)
        return torch.allclose(value, reference_loss(out, target, model.fc.weight), atol=1e-6)


def _check_loss(my_loss) -> Feedback:
    if not callable(my_loss):
        return wrong("give the function itself: my_loss, without parentheses.")
    try:
        trained = _weights_after_one_step(my_loss, on_ipu=True)
    except (poptorch.Error, AssertionError) as error:
        if "Couldn't find a loss" in str(error):
            return wrong("the simulator found no loss: a hand-made loss is plain arithmetic to "
                         "PopTorch; wrap the total in poptorch.identity_loss(total, "
                         "reduction=\"mean\") so that backward starts there.")
        return wrong(f"the training model refused it: {error}")
    expected = _weights_after_one_step(reference_loss, on_ipu=False)
    start = _weights_after_one_step(lambda o, t, w: 0 * o.sum(), on_ipu=False)
    step, wanted = (trained - start).norm().item(), (expected - start).norm().item()
    if torch.allclose(trained, expected, atol=1e-5, rtol=1e-5):
        return right("one step through the simulator gives the same weights as plain PyTorch "
                     "with the reference loss: identity_loss started backward at your loss.")
    summed = _weights_after_one_step(
        lambda o, t, w: (o - t).abs().sum() + PENALTY * w.pow(2).sum(), on_ipu=False)
    if torch.allclose(trained, summed, atol=1e-5, rtol=1e-5):
        return wrong(f"your update is {step / wanted:.0f} times too large: the error is summed "
                     f"over the 64 outputs; average it (.mean(), or reduction=\"mean\" on the "
                     f"unreduced error) before adding the penalty.")
    penalty_free = _weights_after_one_step(lambda o, t, w: (o - t).abs().mean(), on_ipu=False)
    if torch.allclose(trained, penalty_free, atol=1e-5) and _returns_the_reference(my_loss):
        return wrong("identity_loss marks the loss backward starts at, and the penalty is added "
                     "after it, so it is not trained: wrap the final total (every term, the "
                     "penalty included) in identity_loss, once.")
    if torch.allclose(trained, penalty_free, atol=1e-5):
        return wrong(f"the weight penalty is missing: add {PENALTY} x the sum of the squared "
                     f"weights to the error before identity_loss.")
    return wrong(f"one step moved the weights by {step:.4g}, the reference by {wanted:.4g}: "
                 f"compare your loss with mean |out - target| + {PENALTY} x sum(weight^2).")


custom_loss = Exercise(
    "A custom loss with identity_loss", _check_loss,
    expects='a function my_loss(out, target, weight)',
    skill='mark a hand-written loss with identity_loss',
    hint="Compute the total as plain tensor arithmetic, then return "
         "poptorch.identity_loss(total, reduction=\"mean\") (the total is already a scalar).",
    solution="""
def my_loss(out, target, weight):
    total = (out - target).abs().mean() + 0.01 * weight.pow(2).sum()
    return poptorch.identity_loss(total, reduction="mean")""",
    mistakes=(
        Mistake("""
def my_loss(out, target, weight):
    return (out - target).abs().mean() + 0.01 * weight.pow(2).sum()""", "found no loss"),
        Mistake("""
def my_loss(out, target, weight):
    total = (out - target).abs().sum() + 0.01 * weight.pow(2).sum()
    return poptorch.identity_loss(total, reduction="mean")""", "times too large"),
        Mistake("""
def my_loss(out, target, weight):
    return poptorch.identity_loss((out - target).abs(), reduction="mean") + 0.01 * weight.pow(2).sum()""",
                "wrap the final total"),
        Mistake("""
def my_loss(out, target, weight):
    return poptorch.identity_loss((out - target).abs(), reduction="mean")""",
                "penalty is missing")),
    writes_code=True)


STEPS = 6  # Newton's iterations: from x0 = a, enough to reach float32 precision for a in [1, 100]


class NewtonSqrt(nn.Module):
    """sqrt(a) by Newton's method, the iterations in poptorch.for_loop around `body`."""

    def __init__(self, body):
        super().__init__()
        self.body = body

    def forward(self, a):
        x, _ = poptorch.for_loop(STEPS, self.body, [a.clone(), a])
        return x


def _one_step_gap(body) -> float | None:
    """How far one call of `body` is from one Newton step, at estimates x far from sqrt(a)
    (a converged loop alone would also pass a body that computes sqrt directly); None when
    its outputs are not (x_new, a)."""
    g = torch.Generator().manual_seed(0)
    a, x = 1 + 99 * torch.rand(16, generator=g), 0.5 + 20 * torch.rand(16, generator=g)
    out = body(x.clone(), a.clone())
    if (not isinstance(out, (tuple, list)) or len(out) != 2
            or not all(isinstance(t, torch.Tensor) for t in out) or not torch.equal(out[1], a)):
        return None
    return ((out[0] - (x + a / x) / 2).abs() / (x + a / x)).max().item()


def _check_body(body) -> Feedback:
    if not callable(body):
        return wrong("give the function itself: body, without parentheses.")
    a = torch.linspace(1.0, 100.0, 16)
    model = poptorch.inferenceModel(NewtonSqrt(body), poptorch.Options()
                                    .showCompilationProgressBar(False))
    try:
        x = model(a)
    except (poptorch.Error, AssertionError) as error:
        if "as many tensors" in str(error):
            return wrong("the body takes (x, a) and must return both: the loop feeds its "
                         "outputs back as the next iteration's inputs. Return (x_new, a).")
        return wrong(f"the loop failed: {error}")
    finally:
        model.destroy()
    gap = (x - a.sqrt()).abs().max().item()
    if torch.allclose(x, a):
        return wrong("x never changed: the body must return the new estimate as its first "
                     "output.")
    step = _one_step_gap(body)
    if step is None:
        return wrong("the body must return two tensors, (x_new, a), with `a` passed on "
                     "unchanged: the loop feeds them back as the next iteration's inputs.")
    if step > 1e-5:
        return wrong(f"one call of your body, at estimates x far from sqrt(a), is up to "
                     f"{step:.2g} (relative) away from one Newton step for x^2 = a: the body "
                     f"is one iteration of the method, not the answer; derive its update from "
                     f"x - f(x) / f'(x).")
    if gap < 1e-3:
        return right(f"{STEPS} iterations on the device give sqrt(a) within {gap:.1g} for a in "
                     f"1..100.")
    return wrong(f"after {STEPS} iterations x is up to {gap:.3g} away from sqrt(a).")


newton_body = Exercise(
    "A for_loop body", _check_body,
    expects='a function body(x, a) returning (x_new, a)',
    skill='write a poptorch.for_loop body',
    hint="def body(x, a): return (x + a / x) / 2, a",
    solution="""
def body(x, a):
    return (x + a / x) / 2, a""",
    mistakes=(Mistake("""
def body(x, a):
    return (x + a / x) / 2""", "must return both"),
              Mistake("""
def body(x, a):
    return x, a""", "x never changed"),
              Mistake("""
def body(x, a):
    return (x + a * x) / 2, a""", "away from one Newton step")),
    writes_code=True)
