"""Exercises of lesson 2: efficient data loading and batching."""
from __future__ import annotations

import torch

from ... import poptorch
from ...tutorial.datasets import embedded_digits
from ..explorers.data_loading import DigitClassifier, plan_call, share
from .base import Exercise, Feedback, Mistake, right, wrong

# Exercise 2.1: one host process feeds 2 replicas, micro-batch 32, an asynchronous loader.
MICRO_BATCH, REPLICAS, LIMIT = 32, 2, 0.10
# Exercise 2.2: the call whose losses come back summed per replica.
SUM_ITERATIONS, SUM_REPLICAS, SUM_MICRO_BATCH = 4, 2, 4


def lesson_namespace() -> dict:
    """The names the lesson defines before its exercises."""
    return {"plan_call": plan_call, "share": share, "DigitClassifier": DigitClassifier}


# --- 2.1: the smallest device-iteration count ------------------------------------------------
def host_io_at(options: poptorch.Options, device_iterations: int) -> float:
    """Host I/O's share of a call under `options` with another device-iteration count."""
    return share(plan_call(options.clone().deviceIterations(device_iterations), MICRO_BATCH))


def _check_counts(options) -> Feedback | None:
    """Feedback on options that do not describe the exercise's run, else None."""
    if not isinstance(options, poptorch.Options):
        return wrong(f"give the poptorch.Options of your answer, not {type(options).__name__}.")
    if options.replication_factor != REPLICAS:
        return wrong(f"replicationFactor is {options.replication_factor}, but the run has "
                     f"{REPLICAS} replicas. Replicas multiply the samples of every call (micro-"
                     f"batch x deviceIterations x replicationFactor): more images to stream and "
                     f"to prepare change how the call's time splits, so the count for one "
                     f"replica is not the count for {REPLICAS}. Search with "
                     f".replicationFactor({REPLICAS}).")
    if options.Training.gradient_accumulation != 1:
        return wrong("leave gradientAccumulation at 1: the question is how many device "
                     "iterations one call needs.")
    return None


def _check_smallest(options) -> Feedback:
    problem = _check_counts(options)
    if problem is not None:
        return problem
    d = options.device_iterations
    at_d = host_io_at(options, d)
    if at_d >= LIMIT:
        if host_io_at(options, d + 1) < LIMIT:
            return wrong(f"one too few: with deviceIterations({d}) host I/O is still {at_d:.2%} "
                         f"of a call; one more device iteration brings it under 10%.")
        return wrong(f"with deviceIterations({d}) host I/O is {at_d:.2%} of a call. More device "
                     f"iterations spread the call's fixed host cost over more steps.")
    if d > 1 and (below := host_io_at(options, d - 1)) < LIMIT:
        return wrong(f"deviceIterations({d}) works ({at_d:.2%}), but {d - 1} already gives "
                     f"{below:.2%}: it is not the smallest. Search upwards from 1.")
    before = f"; {d - 1} gives {host_io_at(options, d - 1):.2%}" if d > 1 else ""
    return right(f"deviceIterations({d}) is the smallest: host I/O is {at_d:.2%} of a call{before}.")


smallest_device_iterations = Exercise(
    "The smallest device-iteration count", _check_smallest,
    expects='a poptorch.Options',
    skill='size device iterations so host I/O stays under 10%',
    hint="Loop d = 1, 2, 3...: build poptorch.Options().deviceIterations(d)."
         "replicationFactor(2), plan it with plan_call(opts, micro_batch=32), and stop at the "
         "first d where share(plan) (host I/O's share) is under 0.10.",
    solution="""
my_options = None
for d in range(1, 65):
    opts = poptorch.Options().deviceIterations(d).replicationFactor(2)
    if share(plan_call(opts, micro_batch=32)) < 0.10:
        my_options = opts
        break
my_options""",
    mistakes=(Mistake("poptorch.Options().deviceIterations(12).replicationFactor(2)", "one too few"),
              Mistake("poptorch.Options().deviceIterations(4).replicationFactor(2)",
                      "More device iterations"),
              Mistake("poptorch.Options().deviceIterations(32).replicationFactor(2)",
                      "not the smallest"),
              Mistake("poptorch.Options().deviceIterations(31)", "Replicas multiply"),
              Mistake("poptorch.Options()", "replicationFactor is 1")),
    writes_code=True)


# --- 2.2: the sum of the losses ------------------------------------------------------------------
def _losses(options: poptorch.Options) -> torch.Tensor:
    """The losses one training call returns under `options`, from fixed weights and digits."""
    torch.manual_seed(0)
    model = DigitClassifier()
    opts = options.clone().showCompilationProgressBar(False)
    training = poptorch.trainingModel(model, opts, torch.optim.SGD(model.parameters(), lr=0.01))
    digits = embedded_digits(train=True)
    count = SUM_MICRO_BATCH * SUM_ITERATIONS * SUM_REPLICAS
    try:
        _, losses = training(digits.images[:count], digits.labels[:count])
    finally:
        training.destroy()
    return losses


def reference_sums() -> torch.Tensor:
    """Each replica's sum of its micro-batch losses, from every loss (OutputMode.All)."""
    everything = poptorch.Options().deviceIterations(SUM_ITERATIONS)
    everything.replicationFactor(SUM_REPLICAS).outputMode(poptorch.OutputMode.All)
    losses = _losses(everything)  # [D][R] order, one loss per micro-batch
    return losses.reshape(SUM_ITERATIONS, SUM_REPLICAS).sum(0)  # (R,)


def _check_sum(options) -> Feedback:
    if not isinstance(options, poptorch.Options):
        return wrong(f"give the poptorch.Options of your answer, not {type(options).__name__}.")
    counts = (options.device_iterations, options.replication_factor)
    if counts != (SUM_ITERATIONS, SUM_REPLICAS):
        return wrong(f"the call has deviceIterations({SUM_ITERATIONS}) and replicationFactor("
                     f"{SUM_REPLICAS}); yours has {counts[0]} and {counts[1]}.")
    losses, expected = _losses(options), reference_sums()
    if losses.shape != expected.shape:
        mode = poptorch.OutputMode(options.output_mode).name
        return wrong(f"OutputMode.{mode} returns {tuple(losses.shape)} losses, one per returned "
                     f"micro-batch; the host link should carry one per replica, "
                     f"{tuple(expected.shape)}: use OutputMode.Sum.")
    if not torch.allclose(losses, expected, rtol=1e-5, atol=1e-5):
        return wrong(f"the shape {tuple(losses.shape)} is right, but these are each replica's "
                     f"last loss (OutputMode.Final, the training default), not the sum of its "
                     f"{SUM_ITERATIONS} losses: use OutputMode.Sum.")
    return right(f"one value per replica, {[round(v, 3) for v in losses.tolist()]}: each the sum "
                 f"of its {SUM_ITERATIONS} micro-batch losses. Divide by {SUM_ITERATIONS} for "
                 f"the mean.")


summed_losses = Exercise(
    "Sum the losses on the device", _check_sum,
    expects='a poptorch.Options',
    skill='choose an OutputMode (sum per replica on the device)',
    hint="outputMode decides what comes back: All every micro-batch, Final the last, EveryN "
         "every N-th device iteration, Sum the sum over the call, per replica.",
    solution="""
my_options = poptorch.Options().deviceIterations(4).replicationFactor(2)
my_options = my_options.outputMode(poptorch.OutputMode.Sum)""",
    mistakes=(Mistake("poptorch.Options().deviceIterations(4).replicationFactor(2)",
                      "OutputMode.Final"),
              Mistake("poptorch.Options().deviceIterations(4).replicationFactor(2)"
                      ".outputMode(poptorch.OutputMode.All)", "OutputMode.All returns (8,)"),
              Mistake("poptorch.Options().deviceIterations(4).outputMode(poptorch.OutputMode.Sum)",
                      "yours has 4 and 1")),
    writes_code=True)
