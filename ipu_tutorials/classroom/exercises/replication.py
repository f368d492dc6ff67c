"""Exercises of lesson 10: replication and data parallelism."""
from __future__ import annotations

import torch

from ... import poptorch
from .base import Exercise, Feedback, check_number, right, wrong

INSTANCES, LOCAL_REPLICAS, MICRO_BATCH, ACCUMULATION = 2, 2, 8, 3


def _check_samples(answer) -> Feedback:
    expected = INSTANCES * LOCAL_REPLICAS * MICRO_BATCH * ACCUMULATION
    mistakes = {
        LOCAL_REPLICAS * MICRO_BATCH * ACCUMULATION:
            "that is one instance's share: the all-reduce also adds the other instance's "
            "replicas.",
        INSTANCES * LOCAL_REPLICAS * MICRO_BATCH:
            "each replica also accumulates gradients over several micro-batches before the update.",
        MICRO_BATCH * ACCUMULATION: "that is a single replica; count every replica of every "
                                    "instance.",
    }
    if answer in mistakes:
        return wrong(f"{answer}: {mistakes[answer]}")
    return check_number(answer, expected, "the samples per weight update",
                        f"{INSTANCES} instances x {LOCAL_REPLICAS} replicas x micro-batch "
                        f"{MICRO_BATCH} x accumulation {ACCUMULATION}: every replica's "
                        f"gradients go into one update.")


samples_per_update = Exercise(
    "Samples per weight update", _check_samples,
    hint="poprun --num-instances 2 --num-replicas 4: each update reduces the gradients of all "
         "4 replicas, each of which accumulated several micro-batches.",
    solution=f"{INSTANCES} * {LOCAL_REPLICAS} * {MICRO_BATCH} * {ACCUMULATION}  # = "
             f"{INSTANCES * LOCAL_REPLICAS * MICRO_BATCH * ACCUMULATION}")


def _check_learning_rate(answer) -> Feedback:
    replicas, accumulation, mean_lr = 4, 8, 0.1
    expected = mean_lr / (replicas * accumulation)
    if isinstance(answer, (int, float)) and not isinstance(answer, bool):
        if abs(answer - mean_lr / replicas) < 1e-12:
            return wrong("Sum also adds the gradient-accumulation micro-batches, not only the "
                         "replicas.")
        if abs(answer - mean_lr / accumulation) < 1e-12:
            return wrong("Sum also adds the replicas' gradients, not only the micro-batches.")
        if answer > mean_lr:
            return wrong(f"{answer} is larger than the Mean learning rate, but summed gradients "
                         f"are larger than averaged ones: divide instead.")
    return check_number(answer, expected, "the learning rate with ReductionType.Sum",
                        "summed gradients are 32 times the mean, so the step must be 32 times "
                        "smaller.", tolerance=1e-6)


sum_learning_rate = Exercise(
    "Mean or Sum", _check_learning_rate,
    hint="ReductionType.Sum adds the gradients of replicas x accumulation micro-batches; Mean "
         "divides that sum by their number.",
    solution="0.1 / (4 * 8)")


def _shares(options_for) -> list[list[int]]:
    dataset = torch.utils.data.TensorDataset(torch.arange(64))
    shares = []
    for instance in range(2):
        loader = poptorch.DataLoader(options_for(instance), dataset, batch_size=2, shuffle=True)
        shares.append([i for (batch,) in loader for i in batch.tolist()])
    return shares


def _check_options(options_for) -> Feedback:
    if not callable(options_for):
        return wrong("give the function itself: options_for, with no parentheses.")
    for instance in range(2):
        opts = options_for(instance)
        if not isinstance(opts, poptorch.Options):
            return wrong(f"options_for({instance}) returned {type(opts).__name__}, not "
                         f"poptorch.Options.")
        if opts.replication_factor == 4:
            return wrong("replicationFactor is the replicas of THIS process: 4 in total over 2 "
                         "instances is 2 each.")
        if opts.replication_factor != 2:
            return wrong(f"replicationFactor is {opts.replication_factor}; each of the 2 "
                         f"instances drives 2 of the 4 replicas.")
        given = (opts.Distributed.processId, opts.Distributed.numProcesses)
        if given != (instance, 2):
            return wrong(f"options_for({instance}) says process {given[0]} of {given[1]}: call "
                         f"opts.Distributed.configureProcessId(instance, 2).")
    try:
        shares = _shares(options_for)
    except ValueError as error:
        return wrong(f"the shuffling DataLoader refused the options: {error}.")
    if set(shares[0]) & set(shares[1]):
        return wrong("the two instances read the same samples: give every instance the same "
                     "randomSeed so that they split one permutation.")
    return right(f"the two instances read disjoint shares of {len(shares[0])} samples from one "
                 f"shuffled order, and compile as 4 replicas of one Pod.")


instance_options = Exercise(
    "Options for one instance", _check_options,
    hint="replicationFactor counts local replicas; Distributed.configureProcessId says which "
         "process this is; a shuffling DataLoader needs the same randomSeed everywhere.",
    solution="""
def options_for(instance):
    opts = poptorch.Options().replicationFactor(2).randomSeed(42)
    opts.Distributed.configureProcessId(instance, 2)
    return opts""")
