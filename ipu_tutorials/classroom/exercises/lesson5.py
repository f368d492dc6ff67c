"""Exercises of lesson 5: half precision."""
import torch

from ... import poptorch
from ...errors import Error
from .base import Exercise, Feedback, right, wrong
from ..explorers.pipeline import tutorial_plan
from ..explorers.precision import survival


def _check_loss_scale(scale) -> Feedback:
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or scale <= 0:
        return wrong(f"a loss scale is a positive number, got {scale!r}.")
    result = survival(float(scale), torch.float16)
    kept = result["survived"] / result["total"]
    if result["overflowed"]:
        return wrong(f"{result['overflowed']:,} gradients overflow at {scale:,}: scale down.")
    if kept < 0.99:
        return wrong(f"only {kept:.1%} of the gradients survive at {scale:,}: scale up.")
    return right(f"{kept:.2%} survive and none overflow at loss scale {scale:,}.")


loss_scale = Exercise(
    "Choose a loss scale", _check_loss_scale,
    hint="move the precision explorer's slider until the histogram sits between the red and the "
         "purple regions; powers of two are exact to undo.",
    solution="1024  # anything from about 2**8 to 2**13 works for this network")


def _check_partials(options) -> Feedback:
    if not isinstance(options, poptorch.Options):
        return wrong(f"expected a poptorch.Options, got {type(options).__name__}.")
    blocks = poptorch.PipelinedExecution("B1", "B2", "B3", "B4")
    try:
        base = tutorial_plan(blocks, options=poptorch.Options())
        mine = tutorial_plan(blocks, options=options)
    except Error as error:
        return wrong(f"these options do not compile the tutorial model: {error}")
    before = sum(m.temporaries for m in base.memory.ipus)
    after = sum(m.temporaries for m in mine.memory.ipus)
    if after >= before:
        return wrong(f"the temporaries did not shrink ({after:,} bytes against {before:,}).")
    return right(f"half partials cut the matmul temporaries from {before:,} to {after:,} bytes.")


half_partials = Exercise(
    "Smaller partials", _check_partials,
    hint="the option lives in opts.Precision.",
    solution="""
my_options = poptorch.Options()
my_options.Precision.setPartialsType(torch.half)
my_options""")
