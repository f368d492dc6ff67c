# %% [markdown]
# # Lesson 10: Replication and data parallelism
#
# A replica is a full copy of the model on its own IPUs. With R replicas, every weight update
# uses R times as many samples: each replica computes gradients on its own data, an all-reduce
# adds them up, and every replica applies the same update. On a Pod the replicas are driven by
# several host processes ("instances"), launched by `poprun` and written against
# `popdist`.<!-- claim: L10-poprun-instances -->
#
# **What you will learn**
# - `replicationFactor` in one process: batch sizes, IPU count, and identical numerics;
# - `ReductionType.Mean` against `ReductionType.Sum`;
# - where the gradient all-reduce sits on the timeline, and what it costs;
# - the same program under `poprun` with 2 instances, with `popdist`;
# - how to split a Pod16 between pipeline depth and replicas.
#
# **Time:** about 50 minutes.
#
# **Prerequisites:** lessons 3 and 4 (blocks, pipelining, gradient accumulation).
#
# **Coming from GPUs:** replication is `DistributedDataParallel`, and `poprun` is `torchrun`
# ([the GPU bridge](../docs/coming-from-gpus.md#replication-and-sharded-state)).

# %%
import os
import runpy
import subprocess
import sys
import tempfile

import matplotlib.pyplot as plt
import torch

from ipu_tutorials import poptorch, tutorial
from ipu_tutorials.tutorial.datasets import load_mnist
from ipu_tutorials.tutorial.models import Network, TrainingModelWithLoss
from ipu_tutorials.profiling import plot_timeline

torch.manual_seed(0)
train_set = load_mnist(train=True, source="embedded")

# %% [markdown]
# ## Replicas in one process
#
# Each replica is a whole copy of the program on its own IPUs, with its own share of the
# batch; the gradients are all-reduced before every update. Each replica also holds the whole
# optimizer state, unless replicated tensor sharding splits it (lesson 8; the picture is
# drawn from compiled memory plans):
#
# ![Memory per replica for 4 replicas: without sharding each holds its weights on chip and a full copy of the optimizer state off chip, 74.8 MiB; with replicated tensor sharding each holds a quarter of it, 18.7 MiB](../static/diagram_replication.png)
#
# Start from lesson 4's pipeline (B1..B4 on 4 IPUs) and add
# `replicationFactor(2)`.<!-- claim: L10-combined-batch --> The DataLoader's combined batch now
# holds a share for each replica, and the model takes twice the IPUs:

# %%
def replicated(replicas, accumulation=8, seed=0):
    torch.manual_seed(seed)
    opts = tutorial.training_options("pipelined", device_iterations=1,
                                     gradient_accumulation=accumulation, output_all=False)
    opts.replicationFactor(replicas).showCompilationProgressBar(False)
    net = Network()
    model = poptorch.trainingModel(TrainingModelWithLoss(net), opts,
                                   poptorch.optim.SGD(net.parameters(), lr=0.05))
    return net, model, opts


net, model, opts = replicated(2)
data = poptorch.DataLoader(opts, train_set, batch_size=10)
images, labels = next(iter(data))
model(images, labels)
print(f"combined batch {data.combinedBatchSize} = micro-batch 10 x accumulation 8 x 2 replicas")
print(f"IPUs: {model.plan.placement.ipus_per_replica} per replica x "  # simulator extra
      f"{model.plan.spec.pod_replicas} replicas = {model.plan.placement.ipus_acquired}")

# %% [markdown]
# ## The same weights as plain PyTorch
#
# Replication changes where the work runs, not the math: with `ReductionType.Mean` (the default)
# the update uses the mean gradient over every micro-batch of every
# replica.<!-- claim: L10-reduction-mean --> A plain PyTorch loop over the same 16 micro-batches
# gives the same weights:

# %%
def plain_step(seed, images, labels, micro_batches):
    torch.manual_seed(seed)
    net = Network()
    optimizer = torch.optim.SGD(net.parameters(), lr=0.05)
    for x, y in zip(images.chunk(micro_batches), labels.chunk(micro_batches)):
        (torch.nn.functional.cross_entropy(net(x), y) / micro_batches).backward()
    optimizer.step()
    return net


reference = plain_step(0, images, labels, micro_batches=16)
difference = max((p - q).abs().max().item() for p, q in zip(net.parameters(),
                                                              reference.parameters()))
print(f"simulator (2 replicas) == plain PyTorch within 1e-5: {difference < 1e-5}")

# %% [markdown]
# ## Mean or Sum
#
# `opts.Training.accumulationAndReplicationReductionType(poptorch.ReductionType.Sum)` adds the
# gradients instead of averaging them. The update is then replicas x accumulation times larger,
# so a plain SGD step needs a learning rate that much smaller to land in the same place:

# %%
def one_update(reduction, lr):
    torch.manual_seed(0)
    opts = poptorch.Options().replicationFactor(2).showCompilationProgressBar(False)
    opts.setExecutionStrategy(tutorial.strategy("pipelined"))
    opts.Training.gradientAccumulation(8).accumulationAndReplicationReductionType(reduction)
    net = Network()
    poptorch.trainingModel(TrainingModelWithLoss(net), opts,
                           poptorch.optim.SGD(net.parameters(), lr=lr))(images, labels)
    return net


mean_net = one_update(poptorch.ReductionType.Mean, lr=0.05)
sum_net = one_update(poptorch.ReductionType.Sum, lr=0.05 / (2 * 8))
gap = max((p - q).abs().max().item() for p, q in zip(mean_net.parameters(), sum_net.parameters()))
print(f"Sum with lr 0.05 / 16 == Mean with lr 0.05 (within 1e-5): {gap < 1e-5}")

# %% [markdown]
# Sum is what you want when the loss is already a sum over the samples, or to keep the
# gradients larger in float16; Mean keeps the learning rate independent of the replica count.
#
# ## The all-reduce on the timeline
#
# Before each update the replicas exchange gradients. The simulator costs it as a ring
# all-reduce (Graphcore does not publish how its collectives library lays out its rings),
# which sends 2 (R - 1) / R of each IPU's gradient bytes over the IPU-Links: its cost grows
# with R towards twice the gradient size, and it is paid once per update, however long the
# accumulation:

# %%
for replicas in (1, 2, 4):
    _, m, _ = replicated(replicas)
    m.compile(torch.zeros(10 * 8 * replicas, 1, 28, 28), torch.zeros(10 * 8 * replicas,
                                                                    dtype=torch.long))
    plan = m.plan  # simulator extra
    reduce = [e for e in plan.timeline.events if e.kind == "allreduce"]
    cost = max((e.duration for e in reduce), default=0.0)
    print(f"{replicas} replica(s): all-reduce {cost * 1e6:6.2f} µs of a "
          f"{plan.call_seconds * 1e6:,.0f} µs step, {plan.samples_per_second:,.0f} images/s")

# %% [markdown]
# How far to trust a simulated throughput: on eleven published Graphcore runs it was not
# calibrated on, the simulator lands between 0.80x and 1.56x of the published figure, nine
# of them within 1.25x (docs/cost-model.md, "Validation against runs it was not calibrated on").

# %% [markdown]
# The blue boxes at the end of the step are the all-reduce, on every IPU of the replica at the
# same time, just before the weight update:

# %%
# alt: Timeline of one device iteration of one replica, one row for each of IPUs 0 to 3: pipelined
#   forward and backward passes, then a short all-reduce of the gradients across the 4 replicas and
#   the weight update at the end.
fig, ax = plt.subplots(figsize=(11, 3))
plot_timeline(plan.timeline.events, 4, ax=ax, steps=1, show_host=False,
              title=f"{plan.spec.replication_factor} replicas: one device iteration of one replica")
plt.show()

# %% [markdown]
# ## The same program under poprun
#
# On a Pod, one host process cannot feed every replica: `poprun` starts several instances and
# each drives its share. The program asks `popdist` which share is its own, and
# `popdist.poptorch.Options()` sets the local replication factor and the process
# id.<!-- claim: L10-popdist-options --> Here is a small program that trains on fixed data; each
# instance feeds only its replicas' rows:

# %%
PROGRAM = '''
import os, sys
import torch
from ipu_tutorials import popdist, poptorch
import ipu_tutorials.popdist.poptorch as popdist_poptorch

D, A, MICRO, STEPS = 1, 4, 5, 4

def train(out_dir, replicas=4):
    if popdist.isPopdistEnvSet():
        opts = popdist_poptorch.Options()          # local replicas + process id
    else:
        opts = poptorch.Options().replicationFactor(replicas)
    opts.Training.gradientAccumulation(A)
    opts.showCompilationProgressBar(False)
    torch.manual_seed(popdist.getInstanceIndex())   # differs: compile shares instance 0's
    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(784, 32),
                              torch.nn.ReLU(), torch.nn.Linear(32, 10))
    class WithLoss(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.net = net
        def forward(self, x, y):
            out = self.net(x)
            return out, torch.nn.functional.cross_entropy(out, y)
    model = poptorch.trainingModel(WithLoss(), opts, poptorch.optim.SGD(net.parameters(), lr=0.1))
    total = popdist.getNumTotalReplicas() if popdist.isPopdistEnvSet() else replicas
    local, offset = opts.replication_factor, popdist.getReplicaIndexOffset()
    g = torch.Generator().manual_seed(0)
    for step in range(STEPS):
        x = torch.randn(D, A, total, MICRO, 1, 28, 28, generator=g)
        y = torch.randint(0, 10, (D, A, total, MICRO), generator=g)
        mine = slice(offset, offset + local)        # this instance's replicas
        model(x[:, :, mine].reshape(-1, 1, 28, 28), y[:, :, mine].reshape(-1))
    print(f"instance {popdist.getInstanceIndex()} of {popdist.getNumInstances()}: replicas "
          f"{offset}..{offset + local - 1} of {total}, trained {STEPS} steps")
    torch.save(net.state_dict(), os.path.join(out_dir, f"weights-{popdist.getInstanceIndex()}.pt"))

if __name__ == "__main__":
    train(sys.argv[1])
'''
workdir = tempfile.mkdtemp()
program = os.path.join(workdir, "train.py")
with open(program, "w") as f:
    f.write(PROGRAM)
print(f"{len(PROGRAM.splitlines())} lines written")

# %% [markdown]
# Launch it with 2 instances of 2 replicas each (`--num-replicas` counts them all; poprun
# divides them evenly among the instances). `poprun` is a console script (here run as
# `python -m ipu_tutorials.poprun`); here every line an instance prints comes back with the
# prefix `[1,<instance>]`. The two instances print in whatever order they finish, so we sort
# them:

# %%
command = [sys.executable, "-m", "ipu_tutorials.poprun", "--num-instances", "2",
           "--num-replicas", "4", "python", program, workdir]
result = subprocess.run(command, capture_output=True, text=True, timeout=600)
print("exit status", result.returncode)
print("\n".join(sorted(line for line in result.stdout.splitlines() if "instance" in line)))

# %% [markdown]
# Each instance computed 2 replicas; `torch.distributed.all_reduce` added their gradients to
# the other instance's before every update. So both instances hold the same weights, and they
# are the weights of one process with all 4 replicas:

# %%
two_instances = [torch.load(os.path.join(workdir, f"weights-{i}.pt"), weights_only=True)
                 for i in (0, 1)]
runpy.run_path(program)["train"](workdir, replicas=4)  # overwrites weights-0.pt
one_process = torch.load(os.path.join(workdir, "weights-0.pt"), weights_only=True)
same = all(torch.allclose(two_instances[i][k], one_process[k], atol=1e-5)
           for i in (0, 1) for k in one_process)
print(f"2 instances x 2 replicas == 1 process x 4 replicas (within 1e-5): {same}")

# %% [markdown]
# On the simulated timeline the IPUs' part does not change: the Pod has 4 replicas either
# way, and their all-reduce runs over the IPU-Links whichever host feeds them. What the
# instances change is the host side: each one prepares and sends only its replicas' data.
#
# ## Pipeline depth x replicas on a Pod16
#
# Sixteen IPUs can run one 16-stage pipeline, sixteen one-IPU replicas, or anything between.
# Deeper pipelines need less memory per IPU; more replicas go faster, while they fit. Here is
# the explorer's "40M" transformer trained with AdamW at one global batch (the first line
# prints it):

# %%
from ipu_tutorials.classroom.explorers.replication import DEPTHS, GLOBAL_BATCH, pod_split

print(f"global batch: {GLOBAL_BATCH} sequences per weight update")
for depth in DEPTHS:
    s = pod_split("40M", depth)
    verdict = f"{s.samples_per_second:7,.0f} seq/s" if s.fits else "  out of memory"
    print(f"{s.replicas:2d} replicas x {depth:2d} IPUs, accumulation {s.accumulation:3d}: "
          f"fullest IPU {s.fullest_bytes / 2**20:6,.0f} MiB, {verdict}")

# %% [markdown]
# The fastest configuration is the shallowest pipeline that fits. Try the other model sizes
# and the offload switch:

# %%
from ipu_tutorials.classroom.explorers.replication import replication_explorer

# alt: Two bar charts over the ways to split 16 IPUs, from 16 replicas of 1 IPU to 1 replica of 16.
#   Left: memory of the fullest IPU against the IPU memory line, which only 16x1 passes. Right:
#   simulated sequences per second: 16x1 does not fit, 8x2 is the fastest, and the chosen 4x4
#   (highlighted) comes second.
replication_explorer("40M", depth=4)

# %% [markdown]
# ## What a real IPU would do, and where the simulator differs
#
# Real `poprun` starts the instances through MPI (`mpirun`) on the hosts of a Pod, with a
# V-IPU partition of IPUs for the run;<!-- claim: L10-poprun-mpi --> here `poprun` starts
# them itself and they meet over gloo on the loopback interface (or, with a shared secret, at
# a store on the first host listed in `--host`). On hardware the gradients of all replicas
# are reduced by the IPUs themselves; here the IPU time of that all-reduce is simulated and
# the numbers are added by `torch.distributed.all_reduce` between the host processes. The
# simulator gives every instance instance 0's weights at compile; on hardware, seed the model
# the same way in every instance.
#
# **On a Bow Pod.** IPU-Links join the IPUs of a Pod: a Bow Pod16's four Bow-2000s, and the
# sixteen of a Bow Pod64 rack. GW-Links, two 100 Gbit/s ports per machine, join Pod64 racks
# into a Pod128 or larger.<!-- claim: L10-gw-links --> The simulator's all-reduce models both
# (`simulator/collectives.py`): a ring over the IPU-Links among the replicas of each group of
# 16 IPUs, then the GW-Links between the groups. It starts the GW-Link stage at 16 IPUs, not
# at 64, so its Pod64 all-reduce is slower than a Pod64's IPU-Links would make it
# ([docs/differences.md](../docs/differences.md)); the Pod16s of this lesson use IPU-Links
# only.
#
# ## Summary
#
# - R replicas multiply the samples per update by R and the IPUs by R; with Mean the math is
#   the same as one big batch.
# - Sum instead of Mean scales the gradients by replicas x accumulation: scale the learning
#   rate down to match.
# - The all-reduce costs about twice the gradient bytes over the links, once per update.
# - Under `poprun`, each instance drives its share of the replicas; the program stays the same.
# - On a Pod, choose the shallowest pipeline that fits, and replicate it.
#
# ## Exercises

# %%
from ipu_tutorials.classroom.exercises import replication as exercises

# %% [markdown]
# ### Exercise 10.1: samples per update
#
# `poprun --num-instances 2 --num-replicas 4` runs a model with micro-batch 8 and
# `gradientAccumulation(3)`. How many samples contribute to each weight update?

# %% tags=["answer"]
# starting code: exercises.samples_per_update.starting_code

# %%
exercises.samples_per_update.check(my_samples)

# %% [markdown]
# ### Exercise 10.2: Mean or Sum
#
# A run with 4 replicas and `gradientAccumulation(8)` trains well with `ReductionType.Mean`
# and SGD at learning rate 0.1. What learning rate gives the same updates with
# `ReductionType.Sum`?

# %% tags=["answer"]
# starting code: exercises.sum_learning_rate.starting_code

# %%
exercises.sum_learning_rate.check(my_learning_rate)

# %% [markdown]
# ### Exercise 10.3: options for one instance, without poprun
#
# Write `options_for(instance)` returning the `poptorch.Options` of instance 0 or 1 of a run
# with 4 replicas in total, ready for a shuffling `poptorch.DataLoader`. The check builds both
# instances' DataLoaders from your options and compares what they read.

# %% tags=["answer"]
# starting code: exercises.instance_options.starting_code

# %%
exercises.instance_options.check(options_for)

# %% [markdown]
# **Next:** lesson 11 (observing and profiling) looks inside a run: anchored tensors, printed
# tensors, and the report's memory and timeline.
#
# ## References
#
# - PopTorch user guide (SDK 3.4), "Efficient data batching",
#   "poptorch.Options.replicationFactor", and "Distributed execution without PopRun":
#   https://docs.graphcore.ai/projects/poptorch-user-guide/en/latest/batching.html and
#   https://docs.graphcore.ai/projects/poptorch-user-guide/en/latest/experimental.html
# - PopRun and PopDist user guide: https://docs.graphcore.ai/projects/poprun-user-guide/
# - GW-Links: Graphcore, "Switched GW-Links in large scale Pod systems",
#   https://docs.graphcore.ai/projects/switched-gwlinks/, and the IPU-POD128 datasheet,
#   https://docs.graphcore.ai/projects/ipu-pod128-datasheet/en/latest/product-description.html
# - Graphcore example "Distributed Training using PopDist Example",
#   `tutorials/feature_examples/pytorch/popdist` in graphcore/examples
#   (https://github.com/graphcore/examples).
# - Coming from GPUs: [docs/coming-from-gpus.md](../docs/coming-from-gpus.md).