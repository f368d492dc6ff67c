"""Exercises of lesson 11: observing and profiling (the NaN hunt, reading a report, and what
an anchored gradient holds)."""
from __future__ import annotations

import functools

import torch

from ... import poptorch
from ...tutorial.datasets import load_mnist
from ...tutorial.models import Network, TrainingModelWithLoss
from ...tutorial.overflow import HandWrittenLogSoftmax, replay, train_until_not_finite
from .base import Exercise, Feedback, Mistake, check_number, right, wrong

STEPS, SEED = 60, 0
# Logits 80 apart, as a sharper model reaches later in training: exp(40) overflows float16
# (past 11.09) and exp(-40) underflows it, while float32 holds both.
HARD_LOGITS = torch.tensor([[40.0, 0.0, -40.0, 10.0, -10.0, 0.0, 5.0, -5.0, 20.0, -20.0]])
# The rows a fix is judged on: the hard row, where the maximum dominates the sum; equal logits
# and a tie at the top, where it does not (so z - max(z) alone is caught); moderate rows.
CHECKED_LOGITS = torch.cat([
    HARD_LOGITS, torch.zeros(1, 10), torch.tensor([[6.0, 6.0] + [0.0] * 8]),
    4 * torch.randn(4, 10, generator=torch.Generator().manual_seed(0))])


@functools.lru_cache(maxsize=1)
def failing_step() -> dict:
    """The lesson's run: SharpClassifier in float16 until its loss is not finite."""
    torch.manual_seed(SEED)
    from ...tutorial.overflow import SharpClassifier

    run = train_until_not_finite(SharpClassifier(), load_mnist(train=True, source="embedded"),
                                 STEPS)
    if run["failed_step"] is None:
        raise RuntimeError("the float16 run stayed finite: the exercise needs its NaN")
    return run


@functools.lru_cache(maxsize=1)
def first_exception() -> poptorch.Error:
    """What enableFloatingPointExceptions reports when the failing step is replayed."""
    run = failing_step()
    try:
        replay(HandWrittenLogSoftmax(), run["weights_before"], run["batch"])
    except (poptorch.Error, AssertionError) as error:
        return error
    raise RuntimeError("the replayed step raised no floating-point exception")


def _check_op(answer) -> Feedback:
    error = first_exception()
    if not isinstance(answer, str) or not answer.strip():
        return wrong("name the op as a string, e.g. \"mul\" (the name the exception gives).")
    name = answer.strip().lower().removeprefix("torch.").removeprefix("aten.").split(".")[0]
    name = name.removesuffix("()")  # "exp()" or "torch.exp()" name the same op
    if name == error.op:
        return right(f"{error.op} in module '{error.module}' is the first op whose result is "
                     f"infinite; everything after it (the division, the log, the loss) only "
                     f"passes the infinity on and turns it into NaN.")
    if name in ("div", "log", "nll_loss", "nan"):
        return wrong(f"{name!r} is where the NaN shows, but its inputs were already infinite: "
                     f"replay the step with opts.Precision.enableFloatingPointExceptions(True) "
                     f"to stop at the first op that produces an infinity.")
    if name == error.module:
        return wrong(f"{name!r} is the module the exception names; give the op inside it that "
                     f"first produced an infinity.")
    if name in ("addmm", "linear", "mm", "relu", "classifier", "features"):
        return wrong(f"{name!r} still produces finite values at the failing step; the infinity "
                     f"appears later, inside module '{error.module}'.")
    return wrong(f"{answer!r} is not the op the exception names: enable floating-point "
                 f"exceptions, replay the failing step and read the error.")


find_the_op = Exercise(
    "The op that overflows", _check_op,
    expects="the op's name as a string",
    skill='find the first op that overflows with floating-point exceptions',
    hint="Replay the failing step (weights before it, its batch) with "
         "opts.Precision.enableFloatingPointExceptions(True); the error names the op.",
    solution='my_op = "exp"  # the exception: exp in the forward pass of module \'log_softmax\'',
    mistakes=(Mistake('"div"', "where the NaN shows"), Mistake('"addmm"', "still produces finite"),
              Mistake('"sum"', "is not the op the exception names")))


def _hard_logits_error(log_softmax):
    """Run the answer on CHECKED_LOGITS in float16 with exceptions on; the error or the output."""
    class Wrapped(torch.nn.Module):
        def forward(self, z):
            return log_softmax(z)

    opts = poptorch.Options().showCompilationProgressBar(False)
    opts.Precision.enableFloatingPointExceptions(True)
    model = poptorch.inferenceModel(Wrapped(), opts)
    try:
        return None, model(CHECKED_LOGITS.half())
    except (poptorch.Error, AssertionError) as error:
        return error, None
    finally:
        model.destroy()


def _explain(error) -> Feedback:
    if error.op == "exp":
        return wrong(f"exp still overflows float16 (its largest value is 65504, exp(11.09)): "
                     f"subtract each row's maximum before exp, so the largest exponent is 0 "
                     f"(subtracting the mean does not bound it). The simulator: {error}")
    if error.op == "log":
        return wrong("a probability rounds to 0 in float16 and its log is -inf: never take the "
                     "log of a ratio; compute z - m - log(sum(exp(z - m))) with m the row's "
                     "maximum, so the log only sees a sum of at least 1.")
    return wrong(f"your function stops at {error.op} in float16: {error}")


def _check_fix(log_softmax) -> Feedback:
    if not callable(log_softmax):
        return wrong("give the function itself (stable_log_softmax, without parentheses).")
    run = failing_step()
    try:
        replay(log_softmax, run["weights_before"], run["batch"])
    except (poptorch.Error, AssertionError) as error:
        return _explain(error)
    error, out = _hard_logits_error(log_softmax)
    if error is not None:
        return _explain(error)
    expected = torch.log_softmax(CHECKED_LOGITS, dim=-1)
    if not isinstance(out, torch.Tensor) or out.shape != expected.shape:
        return wrong(f"your function returned {type(out).__name__} of shape "
                     f"{tuple(getattr(out, 'shape', ()))}; log-softmax keeps the logits' shape, "
                     f"{tuple(expected.shape)} here.")
    # float16 keeps about 3 significant digits: at |values| up to 80 that is 0.06.
    gap = (out.float() - expected).abs()
    if not bool((gap <= 0.02 + 1e-3 * expected.abs()).all()):
        row = int(gap.max(dim=-1).values.argmax())
        return wrong(f"your function is not log-softmax: on row {row} of the checked logits "
                     f"({CHECKED_LOGITS[row, :3].tolist()}...) it is {gap[row].max():.3g} away "
                     f"from torch.log_softmax. Check it where no logit dominates (all equal) "
                     f"and along the last dimension.")
    return right(f"the failing step now trains in float16 with exceptions on, and on "
                 f"{len(CHECKED_LOGITS)} rows of logits (80 apart, all equal, tied, random) your "
                 f"function matches torch.log_softmax within {gap.max():.2g}.")


STARTING_CODE = """
def stable_log_softmax(z):
    e = torch.exp(z)
    return torch.log(e / e.sum(dim=-1, keepdim=True))"""

fix_the_softmax = Exercise(
    "Fix the log-softmax", _check_fix,
    expects='a function stable_log_softmax(z)',
    skill='write a numerically stable log-softmax for float16',
    starting_code=STARTING_CODE,
    hint="Subtract m = z.max(dim=-1, keepdim=True).values first, then take the log of the sum: "
         "z - m - log(sum(exp(z - m))).",
    solution="""
def stable_log_softmax(z):
    m = z.max(dim=-1, keepdim=True).values
    shifted = z - m
    return shifted - torch.log(torch.exp(shifted).sum(dim=-1, keepdim=True))""",
    mistakes=(
        Mistake(STARTING_CODE, "subtract each row's maximum"),
        Mistake("""
def stable_log_softmax(z):
    e = torch.exp(z - z.mean(dim=-1, keepdim=True))
    return torch.log(e / e.sum(dim=-1, keepdim=True))""", "does not bound it"),
        Mistake("""
def stable_log_softmax(z):
    e = torch.exp(z - z.max(dim=-1, keepdim=True).values)
    return torch.log(e / e.sum(dim=-1, keepdim=True))""", "rounds to 0 in float16"),
        Mistake("""
def stable_log_softmax(z):
    return torch.log(torch.softmax(z, dim=-1))""", "rounds to 0 in float16"),
        Mistake("""
def stable_log_softmax(z):
    return z""", "is not log-softmax")),
    writes_code=True)


@functools.lru_cache(maxsize=1)
def lesson_report():
    """The report exercise 11.3 reads: the tutorial's network sharded over 4 IPUs."""
    from ...tutorial import training_options

    torch.manual_seed(SEED)
    opts = training_options("sharded", device_iterations=4, gradient_accumulation=1)
    opts.showCompilationProgressBar(False)
    net = Network()
    model = poptorch.trainingModel(TrainingModelWithLoss(net), opts,
                                   poptorch.optim.SGD(net.parameters(), lr=0.01))
    model.compile(torch.zeros(4 * 16, 1, 28, 28), torch.zeros(4 * 16, dtype=torch.long))
    report = model.report()
    model.destroy()
    return report


def lesson_namespace() -> dict:
    """The names the lesson defines before its exercises."""
    return {"report": lesson_report()}


def _check_compute_share(answer) -> Feedback:
    schedule = lesson_report().summary["schedule"]
    parts, call = schedule["breakdown"], schedule["call_seconds"]
    expected = parts["IPU compute"] / call
    if isinstance(answer, (int, float)) and not isinstance(answer, bool):
        if 1 < answer <= 100 and abs(answer / 100 - expected) < 1e-3:
            return wrong(f"{answer} looks like a percentage: give the share as a fraction "
                         f"between 0 and 1.")
        if any(abs(answer - u) < 1e-9 for u in schedule["utilisation"]):
            return wrong("that is one IPU's busy share; the breakdown counts the time in which "
                         "any IPU computes, out of the whole call.")
        device = parts["IPU compute"] + parts["exchange and sync"]
        if abs(answer - parts["IPU compute"] / device) < 1e-9:
            return wrong("you divided by the device time only: the call also holds host I/O "
                         "and waiting for host data; divide by call_seconds.")
    return check_number(answer, expected, "the share of the call spent computing",
                        f"IPU compute is {expected:.1%} of the {call * 1e3:.3f} ms call: the rest "
                        f"is exchange, host I/O and waiting for data.", tolerance=1e-3)


compute_share = Exercise(
    "Read the report", _check_compute_share,
    expects='a number between 0 and 1',
    skill='read a profiling report',
    hint='report.summary["schedule"] holds "breakdown" (seconds per part) and "call_seconds".',
    solution='my_share = report.summary["schedule"]["breakdown"]["IPU compute"] / \\\n'
             '    report.summary["schedule"]["call_seconds"]',
    mistakes=(Mistake('100 * report.summary["schedule"]["breakdown"]["IPU compute"] / '
                      'report.summary["schedule"]["call_seconds"]', "percentage"),
              Mistake('report.summary["schedule"]["utilisation"][0]', "one IPU's busy share"),
              Mistake('0.5', "for the share of the call")))


LR = 0.05  # the lesson's SGD


@functools.lru_cache(maxsize=1)
def anchored_step() -> tuple[torch.Tensor, torch.Tensor]:
    """Lesson 11's pipelined step on 8 different micro-batches of 16 digits: the All anchor of
    layer 4's bias gradient, and the gradient its SGD update used, (before - after) / lr."""
    from ...tutorial import training_options

    torch.manual_seed(SEED)
    digits = load_mnist(train=True, source="embedded")
    images = torch.stack([digits[i][0] for i in range(128)])
    labels = torch.stack([digits[i][1] for i in range(128)])
    opts = training_options("pipelined", device_iterations=1, gradient_accumulation=8,
                            output_all=False).showCompilationProgressBar(False)
    opts.anchorTensor("each", "Gradient___model.layer4.bias", poptorch.OutputMode.All)
    net = Network()
    before = net.layer4.bias.detach().clone()
    model = poptorch.trainingModel(TrainingModelWithLoss(net), opts,
                                   poptorch.optim.SGD(net.parameters(), lr=LR))
    model(images, labels)
    each = model.getAnchoredTensor("each")
    model.destroy()
    return each, (before - net.layer4.bias.detach()) / LR


def _check_update_gradient(update_gradient) -> Feedback:
    if not callable(update_gradient):
        return wrong("give the function itself (update_gradient, without parentheses).")
    each, used = anchored_step()
    per_micro_batch = each.view(8, -1)
    answer = update_gradient(each.clone())
    if not isinstance(answer, torch.Tensor) or answer.shape != used.shape:
        return wrong(f"your function returned {type(answer).__name__} of shape "
                     f"{tuple(getattr(answer, 'shape', ()))}; the update used one gradient per "
                     f"bias, shape {tuple(used.shape)}.")
    answer = answer.float()
    if torch.allclose(answer, used, atol=1e-5):  # the last micro-batch's is 6e-4 away
        return right("the All anchor holds the 8 micro-batches' gradients one after another "
                     "(8 x 10 numbers); the update used their mean (ReductionType.Mean), "
                     "which no single micro-batch's gradient equals.")
    if torch.allclose(answer, per_micro_batch[-1], atol=1e-6):
        return wrong("that is the last micro-batch's gradient, what a Final anchor holds; the "
                     "update used all 8 micro-batches' gradients.")
    if torch.allclose(answer, per_micro_batch.sum(dim=0), atol=1e-5):
        return wrong("that is the sum of the 8 gradients; the default ReductionType.Mean "
                     "divides it by the 8 micro-batches.")
    if torch.allclose(answer, each.view(-1, 8).mean(dim=1), atol=1e-6):
        return wrong("the 80 numbers are 8 micro-batches of 10, one micro-batch after the "
                     "other: view them as (8, 10), not (10, 8).")
    return wrong("that is not the gradient the update used: average the 8 micro-batches' "
                 "gradients the All anchor holds.")


update_gradient = Exercise(
    "The gradient the update used", _check_update_gradient,
    expects="a function update_gradient(each)",
    skill="read what an anchored gradient holds",
    starting_code="""
def update_gradient(each):
    return each""",
    hint="The All anchor lays the 8 micro-batches' gradients of the (10,) bias one after "
         "another: each.view(8, 10) has a row per micro-batch.",
    solution="""
def update_gradient(each):
    return each.view(8, -1).mean(dim=0)""",
    mistakes=(Mistake("""
def update_gradient(each):
    return each[-10:]""", "what a Final anchor holds"),
              Mistake("""
def update_gradient(each):
    return each.view(8, -1).sum(dim=0)""", "divides it by the 8"),
              Mistake("""
def update_gradient(each):
    return each.view(-1, 8).mean(dim=1)""", "not (10, 8)"),
              Mistake("""
def update_gradient(each):
    return each.view(8, -1)[0]""", "not the gradient the update used")),
    writes_code=True)
