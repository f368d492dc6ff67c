"""Exercises of lesson 9: half precision."""
import torch

from ... import poptorch
from ...errors import Error
from .base import Exercise, Feedback, Mistake, as_number, right, wrong
from ..explorers.precision import survival


def lesson_namespace() -> dict:
    """The names the lesson defines before its exercises."""
    return {"survival": survival}


def _check_loss_scale(answer) -> Feedback:
    scale = as_number(answer)  # an int, a float, a NumPy number or a one-element tensor
    if scale is None or not scale > 0:
        return wrong(f"a loss scale is a positive number, got {answer!r}.")
    if not float(scale).is_integer() or int(scale) & (int(scale) - 1):
        return wrong(f"{scale:,} is not a power of two: powers of two scale and unscale without "
                     f"rounding; try 2 ** k.")
    result = survival(float(scale), torch.float16)
    largest = torch.finfo(torch.float16).max
    if result["scale_overflows"]:
        return wrong(f"a loss scale of {scale:,} is itself past float16's largest number, "
                     f"{largest:,.0f}: the backward pass starts from inf and all "
                     f"{result['overflowed']:,} gradients overflow; scale down.")
    if result["overflowed"]:
        return wrong(f"{result['overflowed']:,} gradients overflow at {scale:,}; scale down.")
    if result["lost"]:
        return wrong(f"{result['lost']:,} gradient(s) still underflow to zero at {scale:,}: "
                     f"scale up.")
    if not survival(scale / 2, torch.float16)["lost"]:
        return wrong(f"every gradient survives at {scale:,}, but also at {scale // 2:,}: find the "
                     f"smallest such power of two.")
    return right(f"at {scale:,} every one of the {result['total']:,} gradients survives and none "
                 f"overflow, while at {scale // 2:,} {survival(scale / 2, torch.float16)['lost']:,} "
                 f"still underflow.")


loss_scale = Exercise(
    "The smallest loss scale that saves every gradient", _check_loss_scale,
    expects='a positive number',
    skill='choose a loss scale from a gradient histogram',
    hint="the table above shows 1,024 loses one gradient and 8,192 none: set the precision "
         "explorer's slider to the powers of two between them and watch the underflow count.",
    solution="""
my_loss_scale = next(2 ** k for k in range(16)
                     if survival(2.0 ** k, torch.float16)["lost"] == 0)  # 2,048""",
    mistakes=(Mistake("1", "still underflow"),
              Mistake("1024", "still underflow"),
              Mistake("8192", "but also at 4,096"),
              Mistake("2 ** 16", "is itself past float16's largest number"),
              Mistake("3000", "not a power of two")))


def first_ipu_temporaries(options: poptorch.Options) -> int:
    """IPU 0's temporaries for the lesson's configuration: the tutorial network in float16,
    sharded over 4 IPUs, micro-batch 40, AdamW, under the partials type of `options`."""
    from ...tutorial.loops import strategy
    from ...tutorial.models import Network, TrainingModelWithLoss

    with torch.device("meta"):
        net = TrainingModelWithLoss(Network().half())
    opts = options.clone().setExecutionStrategy(strategy("sharded"))
    training = poptorch.trainingModel(net, opts.showCompilationProgressBar(False),
                                      poptorch.optim.AdamW(net.parameters()))
    try:
        training.compile(torch.empty(40, 1, 28, 28, dtype=torch.half, device="meta"),
                         torch.empty(40, dtype=torch.long, device="meta"))
        return training.plan.memory[0].temporaries
    finally:
        training.destroy()


def _check_partials(options) -> Feedback:
    if not isinstance(options, poptorch.Options):
        return wrong(f"expected a poptorch.Options, got {type(options).__name__}.")
    try:
        before = first_ipu_temporaries(poptorch.Options())
        after = first_ipu_temporaries(options)
    except (Error, AssertionError) as error:
        return wrong(f"these options do not compile the tutorial model: {error}")
    if after >= before:
        partials = options.Precision._value("partials_type")
        return wrong(f"the temporaries on IPU 0 did not shrink ({after:,} bytes against "
                     f"{before:,}): the partials type is still {partials}, the default. The "
                     f"partials hold the matmuls' running sums: a smaller type for them shrinks the "
                     f"temporaries.")
    return right(f"half partials cut IPU 0's matmul temporaries from {before:,} to {after:,} "
                 f"bytes, as in the lesson's table.")


half_partials = Exercise(
    "Smaller partials", _check_partials,
    expects='a poptorch.Options',
    skill='set the partials type to save temporaries',
    hint="the option lives in opts.Precision.",
    solution="""
my_options = poptorch.Options()
my_options.Precision.setPartialsType(torch.half)
my_options""",
    mistakes=(Mistake("poptorch.Options()", "the partials type is still torch.float32"),
              Mistake("my_options = poptorch.Options()\n"
                      "my_options.Precision.enableStochasticRounding(True)\nmy_options",
                      "a smaller type for them"),
              Mistake("torch.half", "expected a poptorch.Options")),
    writes_code=True)
