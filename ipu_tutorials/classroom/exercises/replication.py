"""Exercises of lesson 10: replication and data parallelism."""
from __future__ import annotations

import torch

from ... import poptorch
from .base import Exercise, Feedback, Mistake, check_number, right, wrong

INSTANCES, LOCAL_REPLICAS, MICRO_BATCH, ACCUMULATION = 2, 2, 8, 3


def _check_samples(answer) -> Feedback:
    expected = INSTANCES * LOCAL_REPLICAS * MICRO_BATCH * ACCUMULATION
    return check_number(
        answer, expected, "the samples per weight update",
        f"{INSTANCES} instances x {LOCAL_REPLICAS} replicas x micro-batch {MICRO_BATCH} x "
        f"accumulation {ACCUMULATION}: every replica's gradients go into one update.",
        typical={
            LOCAL_REPLICAS * MICRO_BATCH * ACCUMULATION:
                "that is one instance's share: the all-reduce also adds the other instance's "
                "replicas.",
            INSTANCES * LOCAL_REPLICAS * MICRO_BATCH:
                "each replica also accumulates gradients over several micro-batches before the "
                "update.",
            MICRO_BATCH * ACCUMULATION:
                "that is a single replica; count every replica of every instance.",
            INSTANCES * INSTANCES * LOCAL_REPLICAS * MICRO_BATCH * ACCUMULATION:
                "--num-replicas 4 already counts the replicas of both instances: each instance "
                "runs 2, so do not multiply by the instances again.",
        })


samples_per_update = Exercise(
    "Samples per weight update", _check_samples,
    expects='a number',
    skill='count samples per update across instances and replicas',
    hint="poprun --num-instances 2 --num-replicas 4: each update reduces the gradients of all "
         "4 replicas, each of which accumulated several micro-batches.",
    solution=f"my_samples = {INSTANCES} * {LOCAL_REPLICAS} * {MICRO_BATCH} * {ACCUMULATION}  # = "
             f"{INSTANCES * LOCAL_REPLICAS * MICRO_BATCH * ACCUMULATION}",
    mistakes=(Mistake("2 * 8 * 3", "that is one instance's share"),
              Mistake("2 * 2 * 8", "accumulates gradients over several micro-batches"),
              Mistake("8 * 3", "that is a single replica"),
              Mistake("2 * 4 * 8 * 3", "already counts the replicas of both instances")))


REPLICAS, ACCUMULATED, MEAN_LR = 4, 8, 0.1


def _check_learning_rate(answer) -> Feedback:
    summed = REPLICAS * ACCUMULATED
    return check_number(
        answer, MEAN_LR / summed, "the learning rate with ReductionType.Sum",
        f"summed gradients are {summed} times the mean, so the step must be {summed} times "
        f"smaller.", tolerance=1e-6,
        typical={
            MEAN_LR / REPLICAS: "Sum also adds the gradient-accumulation micro-batches, not only "
                                "the replicas.",
            MEAN_LR / ACCUMULATED: "Sum also adds the replicas' gradients, not only the "
                                   "micro-batches.",
            MEAN_LR * summed: "summed gradients are larger than averaged ones, so the same "
                              "step needs a smaller learning rate: divide instead.",
            MEAN_LR: "with Sum the gradients are the sum, not the mean, of "
                     f"{summed} micro-batch gradients: the same rate takes steps {summed} times "
                     f"larger.",
        })


sum_learning_rate = Exercise(
    "Mean or Sum", _check_learning_rate,
    expects='a number',
    skill='adapt the learning rate to ReductionType.Sum',
    hint="ReductionType.Sum adds the gradients of replicas x accumulation micro-batches; Mean "
         "divides that sum by their number.",
    solution="my_learning_rate = 0.1 / (4 * 8)",
    mistakes=(Mistake("0.1 / 4", "not only the replicas"),
              Mistake("0.1 / 8", "not only the micro-batches"),
              Mistake("0.1 * 4 * 8", "divide instead"),
              Mistake("0.1", "the same rate takes steps 32 times larger")))


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
    expects='a function options_for(instance) returning poptorch.Options',
    skill='configure one instance of a multi-instance run',
    hint="replicationFactor counts local replicas; Distributed.configureProcessId says which "
         "process this is; a shuffling DataLoader needs the same randomSeed everywhere.",
    solution="""
def options_for(instance):
    opts = poptorch.Options().replicationFactor(2).randomSeed(42)
    opts.Distributed.configureProcessId(instance, 2)
    return opts""",
    mistakes=(
        Mistake("def options_for(instance):\n"
                "    opts = poptorch.Options().replicationFactor(4).randomSeed(42)\n"
                "    opts.Distributed.configureProcessId(instance, 2)\n    return opts",
                "replicationFactor is the replicas of THIS process"),
        Mistake("def options_for(instance):\n"
                "    return poptorch.Options().replicationFactor(2).randomSeed(42)",
                "call opts.Distributed.configureProcessId(instance, 2)"),
        Mistake("def options_for(instance):\n"
                "    opts = poptorch.Options().replicationFactor(2)\n"
                "    opts.Distributed.configureProcessId(instance, 2)\n    return opts",
                "randomSeed"),
        Mistake("def options_for(instance):\n"
                "    opts = poptorch.Options().replicationFactor(2).randomSeed(42)\n"
                "    opts.Distributed.configureProcessId(instance, 2)\n    return opts\n"
                "options_for(0)", "give the function itself"),
    ),
    writes_code=True)
