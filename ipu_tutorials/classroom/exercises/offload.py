"""Exercises of lesson 8: optimizer state offload."""
import functools

import torch

from ... import poptorch
from ...errors import Error, OutOfMemoryError
from ...simulator.rules import min_gradient_accumulation
from ...simulator.units import format_bytes
from ...tutorial.models import Network, TransformerLM, parameter_count, split_layers
from .base import Exercise, Feedback, Mistake, check_number, right, wrong
from ..explorers.memory import MICRO_BATCH, CONTEXT, PRESETS, even_split, plan_memory_for
from ..plans import plan_on_meta

SIZE, IPUS = "1.3B", 16


def lesson_namespace() -> dict:
    """What the lesson defines before its exercises: the tutorial `model` and `exercises`."""
    import sys
    return {"model": Network(), "Network": Network, "exercises": sys.modules[__name__]}


def _check_state_bytes(answer) -> Feedback:
    weights = parameter_count(Network())
    return check_number(
        answer, 2 * 4 * weights, "AdamW's state in bytes",
        f"two float32 moments per weight: 2 x 4 x {weights:,} = {2 * 4 * weights:,} bytes.",
        typical={4 * weights: "that is one moment; AdamW keeps two per weight (the running mean "
                              "of the gradient and of its square).",
                 2 * weights: "that counts elements, not bytes: a float32 takes 4 bytes.",
                 3 * 4 * weights: "that includes the weights themselves; the question asks for "
                                  "the optimizer's state only."})


adamw_state_bytes = Exercise(
    "AdamW's state", _check_state_bytes,
    expects='a number',
    skill="count an optimizer's state in bytes",
    hint="AdamW keeps two tensors per weight (first and second moments), each float32 by default.",
    solution="my_state_bytes = 2 * 4 * sum(p.numel() for p in Network().parameters())",
    mistakes=(Mistake("4 * sum(p.numel() for p in model.parameters())", "that is one moment"),
              Mistake("2 * sum(p.numel() for p in model.parameters())", "counts elements"),
              Mistake("3 * 4 * sum(p.numel() for p in model.parameters())",
                      "includes the weights themselves")))


def _over(memory) -> str:
    worst = max((m for m in memory.ipus if not m.fits), key=lambda m: m.total - m.capacity)
    return (f"IPU {worst.ipu} is still {format_bytes(worst.total - worst.capacity)} over "
            f"(weights {format_bytes(worst.weights)}, gradients {format_bytes(worst.gradients)}, "
            f"optimizer {format_bytes(worst.optimizer)})")


def _check_fit(offload: bool = False, half: bool = False) -> Feedback:
    memory = plan_memory_for(SIZE, IPUS, "AdamW", offload=offload, half=half)
    if any(not m.fits for m in memory.ipus):
        advice = {(False, False): "neither switch is on: start with the optimizer state.",
                  (True, False): "offloading alone leaves float32 weights and gradients: "
                                 "float16 halves them.",
                  (False, True): "float16 alone leaves AdamW's float32 moments on chip: move "
                                 "them to streaming memory."}[(bool(offload), bool(half))]
        return wrong(f"{_over(memory)}; {advice}")
    fullest = max(memory.ipus, key=lambda m: m.utilisation)
    return right(f"every IPU fits; the fullest, IPU {fullest.ipu}, is at "
                 f"{fullest.utilisation:.0%}. It takes both: float16 halves weights and "
                 f"gradients, and the optimizer state moves to streaming memory.")


make_it_fit = Exercise(
    "Fit 1.3B parameters on 16 IPUs", _check_fit,
    expects='the two switches offload= and half=, True or False',
    skill='combine offloading and float16 to fit',
    hint="try the two switches one at a time in the memory planner and watch which category "
         "shrinks: offload removes the optimizer bar, float16 halves weights and gradients.",
    solution="my_offload, my_half = True, True",
    mistakes=(Mistake("exercises.make_it_fit.check(offload=True, half=False)",
                      "offloading alone leaves float32 weights"),
              Mistake("exercises.make_it_fit.check(offload=False, half=True)",
                      "float16 alone leaves AdamW's float32 moments on chip")))


@functools.lru_cache(maxsize=1)
def _half_model() -> TransformerLM:
    """The planner's 1.3B transformer in float16, split evenly over 16 IPUs, on meta tensors."""
    width, depth, heads = PRESETS[SIZE]
    with torch.device("meta"):
        model = TransformerLM(width=width, depth=depth, heads=heads, context=CONTEXT,
                              recompute_checkpoint_every_layer=True).half()
    return split_layers(model, even_split(depth, IPUS))


def plan_half_model(options: poptorch.Options):
    """The memory plan of the float16 1.3B model under `options` (AdamW, float16 accumulators).

    Raises:
        poptorch.Error: the options break a rule. OutOfMemoryError: the plan does not fit.
    """
    model = _half_model()
    samples = (MICRO_BATCH * options.Training.gradient_accumulation
               * options.device_iterations * options.replication_factor)
    tokens = torch.zeros(samples, CONTEXT, dtype=torch.long, device="meta")
    optimizer = poptorch.optim.AdamW(model.parameters(), accum_type=torch.float16)
    return plan_on_meta(model, options.clone(), optimizer, tokens, tokens).memory


def _check_options(options) -> Feedback:
    if not isinstance(options, poptorch.Options):
        return wrong(f"expected a poptorch.Options, got {type(options).__name__}.")
    least = min_gradient_accumulation(IPUS)
    given = options.Training.gradient_accumulation
    if given < least:
        return wrong(f"gradientAccumulation is {given}: training pipelined over {IPUS} IPUs "
                     f"needs at least 2N-1 = {least} micro-batches (lesson 4).")
    try:
        memory = plan_half_model(options)
    except OutOfMemoryError as error:
        on_chip = error.plan.ipus[0].optimizer
        if on_chip:
            return wrong(f"{_over(error.plan)}: AdamW's {format_bytes(on_chip)} of state per "
                         f"IPU is still on chip; opts.TensorLocations decides where the "
                         f"optimizer state lives.")
        return wrong(f"{_over(error.plan)}.")
    except (Error, AssertionError) as error:
        return wrong(f"these options do not compile the model: {error}")
    fullest = max(memory.ipus, key=lambda m: m.utilisation)
    streamed = sum(m.off_chip.get("optimizer", 0) for m in memory.ipus)
    return right(f"every IPU fits (the fullest, IPU {fullest.ipu}, at {fullest.utilisation:.0%}), "
                 f"with {format_bytes(streamed)} of optimizer state in streaming memory.")


OFF_CHIP = "poptorch.TensorLocationSettings().useOnChipStorage(False)"

offload_options = Exercise(
    "Options that fit 1.3B on 16 IPUs", _check_options,
    expects='a poptorch.Options',
    skill='offload optimizer state with TensorLocations',
    hint="two settings: a gradient accumulation the 16-IPU pipeline accepts (lesson 4's rule), "
         "and where the optimizer state lives (opts.TensorLocations).",
    solution=f"""
my_options = poptorch.Options()
my_options.Training.gradientAccumulation(2 * 16 - 1)  # 2N-1 for N = 16 pipelined IPUs
my_options.TensorLocations.setOptimizerLocation({OFF_CHIP})
my_options""",
    mistakes=(
        Mistake(f"my_options = poptorch.Options()\n"
                f"my_options.TensorLocations.setOptimizerLocation({OFF_CHIP})\nmy_options",
                "needs at least 2N-1 = 31"),
        Mistake("my_options = poptorch.Options()\nmy_options.Training.gradientAccumulation(31)\n"
                "my_options", "is still on chip"),
        Mistake(f"my_options = poptorch.Options()\n"
                f"my_options.Training.gradientAccumulation(31)\n"
                f"my_options.TensorLocations.setAccumulatorLocation({OFF_CHIP})\nmy_options",
                "is still on chip"),
    ),
    writes_code=True)
