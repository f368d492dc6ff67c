"""Exercises of lesson 8: optimizer state offload."""
from ...tutorial.models import Network, parameter_count
from ...simulator.units import format_bytes
from .base import Exercise, Feedback, check_number, right, wrong
from ..explorers.memory import plan_memory_for

adamw_state_bytes = Exercise(
    "AdamW's state",
    lambda answer: check_number(
        answer, 2 * 4 * parameter_count(Network()), "AdamW's state in bytes",
        f"two float32 moments per weight: 2 x 4 x {parameter_count(Network()):,} = "
        f"{2 * 4 * parameter_count(Network()):,} bytes."),
    hint="AdamW keeps two tensors per weight (first and second moments), each float32 by default.",
    solution="2 * 4 * sum(p.numel() for p in model.parameters())")


def _check_fit(offload: bool = False, half: bool = False) -> Feedback:
    memory = plan_memory_for("1.3B", 16, "AdamW", offload=offload, half=half)
    over = [m for m in memory.ipus if not m.fits]
    if over:
        worst = max(over, key=lambda m: m.total - m.capacity)
        return wrong(f"IPU {worst.ipu} is still {format_bytes(worst.total - worst.capacity)} over "
                     f"(weights {format_bytes(worst.weights)}, gradients "
                     f"{format_bytes(worst.gradients)}, optimizer {format_bytes(worst.optimizer)}).")
    fullest = max(memory.ipus, key=lambda m: m.utilisation)
    return right(f"every IPU fits; the fullest, IPU {fullest.ipu}, is at "
                 f"{fullest.utilisation:.0%}. It takes both: float16 halves weights and "
                 f"gradients, and the optimizer state moves to streaming memory.")


make_it_fit = Exercise(
    "Fit 1.3B parameters on 16 IPUs", _check_fit,
    hint="try the two switches one at a time in the memory planner and watch which category "
         "shrinks: offload removes the optimizer bar, float16 halves weights and gradients.",
    solution="exercises.make_it_fit.check(offload=True, half=True)")
