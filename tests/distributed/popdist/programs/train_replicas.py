"""A popdist program for the tests: train a small model on fixed global batches, save weights.

    poprun --num-instances 2 --num-replicas 4 python train_replicas.py OUT_DIR [--die-at STEP]

Every instance feeds the rows of the global batch that belong to its replicas (the replica
index offset), so the run sees the same global batch whatever the number of instances.
"""
import os
import sys

import torch
import torch.distributed

from ipu_tutorials import popdist, poptorch
import ipu_tutorials.popdist.poptorch as popdist_poptorch

D, A, MICRO, FEATURES, STEPS = 2, 2, 3, 5, 3


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(FEATURES, 8), torch.nn.Tanh(),
                                       torch.nn.Linear(8, 2))
        self.loss = torch.nn.CrossEntropyLoss()

    def forward(self, x, y):
        out = self.net(x)
        return out, self.loss(out, y)


def global_batches(total_replicas: int):
    """STEPS calls' worth of data in [D][A][R][micro] order, the same in every process."""
    g = torch.Generator().manual_seed(1)
    rows = D * A * total_replicas * MICRO
    return [(torch.randn(rows, FEATURES, generator=g), torch.randint(0, 2, (rows,), generator=g))
            for _ in range(STEPS)]


def local_rows(t: torch.Tensor, total: int, offset: int, local: int) -> torch.Tensor:
    shaped = t.reshape(D, A, total, MICRO, *t.shape[1:])
    return shaped[:, :, offset:offset + local].reshape(-1, *t.shape[1:])


def placement(replicas: int) -> tuple[int, int, int]:
    """(instance index, instances, local replicas): from poprun, MANUAL_INSTANCE or alone."""
    if popdist.isPopdistEnvSet():
        return popdist.getInstanceIndex(), popdist.getNumInstances(), popdist.getNumLocalReplicas()
    manual = os.environ.get("MANUAL_INSTANCE")  # "index count": configureProcessId, no poprun
    index, count = map(int, manual.split()) if manual else (0, 1)
    return index, count, replicas


def main(out_dir: str, die_at: int | None, replicas: int, reduction: str) -> None:
    index, count, local = placement(replicas)
    if popdist.isPopdistEnvSet():
        popdist.init()
        opts = popdist_poptorch.Options()
    else:
        opts = poptorch.Options().replicationFactor(local)
        opts.Distributed.configureProcessId(index, count)
        if os.environ.get("OWN_INIT"):  # the program sets up torch.distributed itself
            torch.distributed.init_process_group("gloo", rank=index, world_size=count)
    opts.deviceIterations(D)
    opts.Training.gradientAccumulation(A + 1 if os.environ.get("MISMATCH") and index == 1 else A)
    opts.Training.accumulationAndReplicationReductionType(getattr(poptorch.ReductionType,
                                                                  reduction))
    torch.manual_seed(index)  # different weights on purpose: compile shares instance 0's
    model = Model()
    optimizer = poptorch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    training = poptorch.trainingModel(model, opts, optimizer)
    total, offset = local * count, index * local
    for step, (x, y) in enumerate(global_batches(total)):
        if step == die_at and index == 1:
            os.kill(os.getpid(), 9)
        training(local_rows(x, total, offset, local), local_rows(y, total, offset, local))
        print(f"step {step} done", flush=True)
    torch.save(model.state_dict(), os.path.join(out_dir, f"weights-{index}.pt"))
    print("saved", flush=True)
    if os.environ.get("OWN_INIT"):
        # a program that set up torch.distributed tears it down, as torch asks: left to the
        # interpreter's exit, gloo can abort (SIGABRT) when the other instance has already gone
        torch.distributed.barrier()
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    arguments = sys.argv[1:]
    die = int(arguments[arguments.index("--die-at") + 1]) if "--die-at" in arguments else None
    count = int(arguments[arguments.index("--replicas") + 1]) if "--replicas" in arguments else 1
    mode = arguments[arguments.index("--reduction") + 1] if "--reduction" in arguments else "Mean"
    main(arguments[0], die, count, mode)
