# %% [markdown]
# # Lesson 16: The same ideas with PyTorch's own engines
#
# Everything the course taught has a counterpart in PyTorch's own distributed engines, the
# ones a GPU cluster runs: pipelining with its fill and drain, sharded optimizer state (and
# sharded weights), 16-bit arithmetic with a loss scale, replicas and their all-reduce. This
# lesson takes lesson 4's network and its split into four blocks and runs it for real with
# `torch.distributed`: four processes on your CPU, talking over the gloo backend, beside the
# simulated IPU, with the same numbers.
#
# **Measured or simulated.** Times marked *host time* are wall time measured on this
# machine: four processes sharing your CPU's cores, starting included; not what a GPU would
# take. Idle shares and IPU figures marked *simulated* come from the simulator or from
# schedules timed with equal stage times. Losses, weights and bytes are computed, and the same
# on every machine.
#
# **What you will learn**
# - how to train lesson 4's split with `torch.distributed.pipelining` (`PipelineStage`,
#   `ScheduleGPipe`, `Schedule1F1B`) over four processes, with the simulator's own losses;
# - torch's order of forwards and backwards on each stage beside the IPU's pipeline, and what
#   each keeps in memory;
# - how `ZeroRedundancyOptimizer` and FSDP2's `fully_shard` shard AdamW's state (and FSDP2
#   the weights), beside replicated tensor sharding;
# - `torch.autocast` in bfloat16 with a `GradScaler`, beside float16 with loss scaling;
# - `DistributedDataParallel` beside `replicationFactor`: the all-reduce, Mean and Sum.
#
# **Time:** about 60 minutes.
#
# **Prerequisites:** lessons 4, 8, 9 and 10.
#
# **Coming from GPUs:** this lesson is the runnable side of
# [the GPU bridge](../docs/coming-from-gpus.md): the rows this lesson runs link to the cells
# here that run them.

# %%
import inspect

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F

from ipu_tutorials import poptorch, tutorial
from ipu_tutorials.classroom.explorers.schedules import (TIME_AXIS, recomputing_stages,
                                                         step_length)
from ipu_tutorials.profiling.diagrams import unit_stages
from ipu_tutorials import torch_engines as engines
from ipu_tutorials.tutorial.datasets import embedded_digits
from ipu_tutorials.tutorial.models import Network, TrainingModelWithLoss
from ipu_tutorials.torch_engines import jobs
from ipu_tutorials.torch_engines.figures import draw_schedules

DEVICE = "cpu"  # "cuda": the same cells on 4 CUDA GPUs, one per process, over nccl
digits = embedded_digits(train=True)
order = torch.randperm(len(digits.labels), generator=torch.Generator().manual_seed(0))[:1200]
images, labels = digits.images[order], digits.labels[order]  # 3 steps of 10 micro-batches of 40
print(f"{len(images):,} digits of every class: {labels.bincount().tolist()}")

# %% [markdown]
# ## Pipelining over four processes
#
# Lesson 4 put blocks `B1` to `B4` on IPUs 0 to 3. With `torch.distributed.pipelining`, each
# block becomes a `PipelineStage` in a process of its own; the processes send activations
# forward and gradients back, and a schedule (`ScheduleGPipe` or `Schedule1F1B`) decides the
# order in which each stage runs its micro-batches. A process imports the code it runs, and
# cannot import a function written in a notebook, so each process's part lives in the
# package. Here it is, as it runs:

# %%
print(inspect.getsource(jobs.pipeline))

# %% [markdown]
# The example tensors give torch the shapes between the stages up front, so no process has to
# send another a description of its tensors.<!-- claim: L16-torch-pipelining-static-shapes -->
# `run_pipeline` starts four processes that meet over gloo on 127.0.0.1 (a free port, or one
# you pass), runs that function in each, collects what they return (plain numbers, sent as
# JSON) and stops them, also on an error or Ctrl-C. The first run also starts the server the
# processes are forked from, which imports torch once, so it takes longest. Lesson 4's
# micro-batches, 10 of 40 images per step, for three steps:

# %%
gpipe = engines.run_pipeline("GPipe", images, labels, micro_batches=10, steps=3, device=DEVICE)
one_f_one_b = engines.run_pipeline("1F1B", images, labels, micro_batches=10, steps=3,
                                   device=DEVICE)
for run in (gpipe, one_f_one_b):
    print(f"{run.schedule:>5}: {len(run.losses)} micro-batch losses, the first {run.losses[0]:.3f}, "
          f"the last {run.losses[-1]:.3f}; measured: {run.seconds:.1f} s of host time")

# %% [markdown]
# ## The same losses
#
# The maths is the same wherever it runs: each micro-batch's forward and backward, the gradients
# averaged over the 10 micro-batches (torch's schedules divide by the micro-batch count by
# default, as PopTorch's `ReductionType.Mean` does), then one AdamW
# step.<!-- claim: L16-torch-pipelining-mean-gradients --> The simulator runs lesson 4's
# pipelined options on the same digits, and a plain PyTorch loop accumulates the same gradients:

# %%
def simulated_losses():
    torch.manual_seed(0)
    net = Network()
    opts = tutorial.training_options("pipelined", device_iterations=1, gradient_accumulation=10)
    model = poptorch.trainingModel(TrainingModelWithLoss(net), opts.showCompilationProgressBar(False),
                                   poptorch.optim.AdamW(net.parameters(), lr=0.001))
    return [loss for x, y in zip(images.chunk(3), labels.chunk(3))
            for loss in model(x, y)[1].tolist()]  # OutputMode.All: one loss per micro-batch


def plain_losses():
    torch.manual_seed(0)
    net = Network()
    optimizer = torch.optim.AdamW(net.parameters(), lr=0.001)
    losses = []
    for x, y in zip(images.chunk(3), labels.chunk(3)):
        optimizer.zero_grad()
        for micro_x, micro_y in zip(x.chunk(10), y.chunk(10)):
            loss = F.cross_entropy(net(micro_x), micro_y)
            (loss / 10).backward()
            losses.append(loss.item())
        optimizer.step()
    return losses

# %%
reference = plain_losses()
for name, losses in (("simulated IPU", simulated_losses()), ("torch GPipe", gpipe.losses),
                     ("torch 1F1B", one_f_one_b.losses)):
    gap = max(abs(a - b) for a, b in zip(losses, reference))
    print(f"{name:>13}: {len(losses)} losses, within 1e-5 of plain PyTorch's: {gap < 1e-5}")

# %% [markdown]
# ## The order of work on each stage
#
# Each process recorded the order in which its stage ran forwards (`F3`: micro-batch 3) and
# backwards (`B3`) in the first step. `torch_orders` writes torch's rule for each schedule down
# as data, and predicts exactly what the processes
# did:<!-- claim: L16-torch-pipelining-orders --> (torch's own dry run of a schedule, its
# `pipeline_order`, numbers 1F1B's forwards on the last stage one too high in torch 2.14, so the
# order here is recorded from the processes, not read from
# it.)<!-- claim: L16-torch-1f1b-dry-run -->

# %%
for run in (gpipe, one_f_one_b):
    print(f"torch {run.schedule}:\n{engines.order_text(run.orders)}")
    print(f"what torch_orders predicts: {run.orders == engines.torch_orders(run.schedule, 4, 10)}\n")

# %% [markdown]
# GPipe runs every forward, then every backward. 1F1B runs `P - stage` forwards (4 on stage
# 0, 1 on the last), then a backward and a forward in turn, then the backwards left over.
# The IPU runs neither: PopTorch's pipeline is a grid of cycles with 2N-1 pipeline stages
# (lesson 4), and once it is full each IPU runs a forward and a backward of different
# micro-batches in the same cycle:<!-- claim: L16-poptorch-pipeline-stages -->

# %%
times = unit_stages(4)  # every stage alike: forward 1 unit, backward 2 units
ipu_times = recomputing_stages(4)  # the IPU's backward recomputes the forward first: 1 + 2
ipu = engines.ipu_step(ipu_times, 10)  # the simulator's own pipelined step, A = 10
print(f"simulated IPU:\n{engines.order_text(engines.orders_of(ipu, 4), 'IPU')}")

# %% [markdown]
# To see them in time, give every stage the same work: a forward takes one unit and a
# backward two (the course's pipeline diagram does the same). PopTorch's pipeline also
# recomputes each stage's forward before its backward (on by default; lesson 7), and the
# simulator charges that as a second forward, so the IPU's backwards take 3 units. The IPU's
# panel is the simulator's pipelined step; torch's panels time the orders the processes ran,
# without recomputation (as they ran), each action starting as soon as its stage is free and
# its input has arrived.

# %%
panels = [("simulated IPU pipeline: 4 IPUs, gradientAccumulation(10), backward = recompute "
           "+ backward", "IPU", ipu)]
panels += [(f"torch Schedule{run.schedule}: the order its 4 processes ran", "stage",
            engines.replay(run.orders, times)) for run in (gpipe, one_f_one_b)]
# alt: Three schedules of micro-batches 0 to 9 over 4 rows on one time axis, forwards blue and
#   backwards orange. Top, the simulated IPU pipeline, whose backwards are half as long again
#   as torch's (they recompute the forward): forwards fill a staircase, then each IPU
#   alternates forward and backward, and backwards drain last; it ends last. Middle, torch's
#   GPipe: all ten forwards on every stage, then all ten backwards. Bottom, torch's 1F1B: a few
#   forwards per stage, then one forward and one backward in turn, then the last backwards.
draw_schedules(panels, 4, xlabel=TIME_AXIS)
plt.show()
for title, _, events in panels:
    held = engines.peak_in_flight(engines.orders_of(events, 4)[0])
    step, idle = step_length(events), engines.bubble(events, 4)
    print(f"{title.split(':')[0]:>23}: a step of {step:.0f} units, idle {idle:.0%} of the time "
          f"(simulated), {held} micro-batches in flight on stage 0")
for run in (gpipe, one_f_one_b):  # the same work on both sides: torch recomputing too
    recomputed = step_length(engines.replay(run.orders, ipu_times))
    print(f"{'torch ' + run.schedule:>23}, each stage's forward recomputed in its backward: "
          f"a step of {recomputed:.0f} units")

# %% [markdown]
# With equal stages all three are idle for (P-1)/(M+P-1) = 3/13 = 23% of the time, with P the
# stages of work on each side (4: torch's processes, the IPUs) and M the micro-batches: the
# bubble is set by the number of micro-batches, not by the schedule. Only the IPU's first N-1 = 3
# of its A + 2N - 2 = 16 cycles run forwards alone and its last 3 backwards alone; in every
# other cycle, lesson 4's fill and flush included, some IPU runs both a forward and a backward.
# The IPU's step is nevertheless longer, 52 units against torch's 39, because it does more
# work: its backwards recompute their forward, which PopTorch turns on by default for a
# pipeline over several IPUs (lesson 7).<!-- claim: L16-poptorch-pipeline-recomputes --> Counted
# on the same work, with each torch stage recomputing too (its forward under
# `torch.utils.checkpoint`, which reruns it during the backward), torch's steps take the same
# 52 units.<!-- claim: L16-torch-checkpoint-recomputes --> What the recomputation buys is
# memory: GPipe keeps the activations of all 10 micro-batches on stage 0 until the backwards
# start, 1F1B keeps 4 (one per stage), and IPU 0 keeps 7 micro-batches in flight but stashes
# only their inputs. One more difference the equal stages hide:
# the IPU's cycles are synchronous, each ending with the copies between IPUs, so the slowest
# stage sets every cycle (lesson 4's timeline);<!-- claim: L16-ipu-pipeline-sync --> a torch
# process starts as soon as its input has arrived.<!-- claim: L16-torch-pipelining-receive -->
#
# ## Sharded optimizer state
#
# Lesson 8 moved AdamW's state off chip and, with replicas, split it between them: replicated
# tensor sharding (RTS). RTS splits any tensor that holds the same values on every replica: in
# PopTorch, `useReplicatedTensorSharding` is "relevant for weights and optimiser states", set
# per kind of tensor (`setWeightLocation`, `setOptimizerLocation`), and an RTS weight is
# gathered whole where it is used.<!-- claim: L16-rts-weights-and-state --> Lessons 8, 15 and
# this one set it for the optimizer state only, the configuration Graphcore's BERT uses. On GPUs
# the idea is ZeRO (Rajbhandari et al. 2020), and torch has two forms of it.
# `ZeroRedundancyOptimizer` shards the optimizer state only (ZeRO stage 1, as the lessons'
# state-only RTS does): weights and gradients stay whole on every process and DDP's all-reduce
# is unchanged. FSDP2's `fully_shard` shards weights and gradients too (ZeRO stage 3) and
# gathers each layer's weights when it
# runs.<!-- claim: L16-zero-stages --><!-- claim: L16-torch-zero-shards-state --><!-- claim: L16-torch-fsdp2-dim0 -->
# Both run on the CPU with gloo here, so the lesson runs both: lesson 4's network, data parallel
# over four processes, two steps of 160 digits (40 per process):

# %%
batch = images[:320], labels[:320]
sharded = {kind: engines.run_sharded_state(kind, *batch, steps=2, device=DEVICE)
           for kind in ("zero", "fsdp")}
torch.manual_seed(0)
net = Network()
optimizer = torch.optim.AdamW(net.parameters(), lr=0.001)
for x, y in zip(batch[0].chunk(2), batch[1].chunk(2)):  # plain PyTorch, the whole 160 at once
    optimizer.zero_grad()
    F.cross_entropy(net(x), y).backward()
    optimizer.step()
for kind, run in sharded.items():
    same = (run.weights - engines.flat_weights(net)).abs().max().item() < 1e-5
    print(f"{kind}: weights within 1e-5 of plain PyTorch's: {same}; "
          f"measured: {run.seconds:.1f} s of host time")

# %% [markdown]
# What each process held after a step, beside lesson 8's plan of the same network on 4
# replicas of one IPU each, AdamW's state off chip and sharded, the weights whole (the plan is
# simulated; every figure here is a count of bytes):

# %%
from ipu_tutorials.classroom.plans import tutorial_plan

opts = poptorch.Options().replicationFactor(4)
opts.TensorLocations.setOptimizerLocation(
    poptorch.TensorLocationSettings().useOnChipStorage(False).useReplicatedTensorSharding(True)
    .minElementsForReplicatedTensorSharding(8192))  # PopART's default; the simulator's is 0
rts = tutorial_plan(poptorch.ShardedExecution(poptorch.Stage(*tutorial.BLOCKS).ipu(0)),
                    accumulation=1, options=opts).memory[0]  # one IPU per replica
rows = {"ZeroRedundancyOptimizer": sharded["zero"].bytes, "fully_shard (FSDP2)": sharded["fsdp"].bytes,
        "IPU replicas, RTS (simulated)": [{"weights": rts.weights,
                                           "optimizer": rts.off_chip["optimizer"]}] * 4}
for what, key in (("AdamW state", "optimizer"), ("weights", "weights")):
    print(f"{what + ' (bytes)':<30}" + "".join(f"{f'rank {r}':>10}" for r in range(4)))
    for name, held in rows.items():
        print(f"  {name:<28}" + "".join(f"{h[key]:>10,}" for h in held))

# %% [markdown]
# RTS splits a tensor over the replicas when it has at least 8,192 elements,
# PopART's default `minElementsForReplicatedTensorSharding` (written out above: the simulator's
# own default splits every tensor,
# [docs/differences.md](../docs/differences.md)).<!-- claim: L16-rts-splits-every-tensor -->
# Here only layer 3's weight is that large, so each IPU holds a quarter of its state and the
# whole state of the seven small tensors. `fully_shard` splits every tensor, row by row (its
# last process gets the rows left over), and holds a quarter of the weights too.
# `ZeroRedundancyOptimizer` gives each parameter's state, whole, to one process, largest first,
# each to the process with the fewest elements so far. Layer 3's weight is most of this network,
# so one process holds most of the state:<!-- claim: L16-torch-zero-partition -->

# %%
from ipu_tutorials.torch_engines.partition import parameter_sizes, zero_partition

for rank, held in enumerate(sharded["zero"].holds):
    print(f"rank {rank}: {', '.join(held)}")
sizes = parameter_sizes(Network())
print(f"layer3.weight is {sizes['layer3.weight'] / sum(sizes.values()):.0%} of the parameters")
print("what zero_partition predicts:",
      [sorted(names) for names in zero_partition(sizes, 4)] == [sorted(h) for h in sharded["zero"].holds])

# %% [markdown]
# Which one to use: `ZeroRedundancyOptimizer` shards what the lessons' state-only RTS shards
# (weights whole), in whole tensors, and drops into a DDP program unchanged; `fully_shard`
# divides evenly whatever the layers' sizes and saves the weights and gradients too, at the price of gathering
# each layer's weights for every forward and backward. On a model of many similar layers ZeRO's
# whole tensors even out; on this one they cannot. Lesson 8's other half, state off the device,
# has its counterpart too: `fully_shard(..., offload_policy=CPUOffloadPolicy())` keeps the
# shards in host memory and runs the optimizer step
# there.<!-- claim: L16-torch-fsdp2-cpu-offload -->
#
# ## Mixed precision
#
# Lesson 9 trained in float16 with a fixed loss scale, because float16 cannot hold small
# gradients. torch's mixed precision also offers bfloat16 (`torch.autocast`'s default type on
# the CPU): 16 bits with float32's exponent, and fewer significant
# bits.<!-- claim: L16-torch-autocast-cpu-bfloat16 --> The three types' ranges, from
# `torch.finfo`:

# %%
print(f"{'':>15}{'smallest subnormal':>20}{'smallest normal':>17}{'largest':>11}{'bits':>6}")
for dtype in (torch.float16, torch.bfloat16, torch.float32):
    info = torch.finfo(dtype)
    bits = round(-torch.log2(torch.tensor(info.eps)).item()) + 1  # significant bits
    print(f"{str(dtype):>15}{info.smallest_normal * info.eps:>20.3g}{info.smallest_normal:>17.3g}"
          f"{info.max:>11.3g}{bits:>6}")

# %% [markdown]
# Lesson 9's small-loss network has nearly fitted its batch: its loss (printed first) is
# tiny, and so are its gradients. How many of its gradients become zero: rounded from the
# exact (float64) ones, in a backward pass run wholly in the type (lesson 9's count), and
# under `torch.autocast` in bfloat16:

# %%
import copy

from ipu_tutorials.classroom.explorers.precision import (gradients, small_loss,
                                                         small_loss_network, survival)

print(f"loss {small_loss():.2g}")
exact = gradients(torch.float64)  # every weight gradient of one float64 backward pass
kept = exact != 0
print(f"of its {int(kept.sum()):,} gradients, how many become zero:")
print(f"{'':>15}{'rounded':>9}{'a whole pass':>14}")
for dtype in (torch.float16, torch.bfloat16):
    rounded = int(((exact.to(dtype) == 0) & kept).sum())
    print(f"{str(dtype):>15}{rounded:>9,}{survival(1.0, dtype)['lost']:>14,}")
model, x, y = copy.deepcopy(small_loss_network())  # the float32 network and its batch
with torch.autocast("cpu", dtype=torch.bfloat16):
    loss = model(x, y)[1]
loss.backward()
autocast = torch.cat([p.grad.flatten() for p in model.parameters()])
print(f"under autocast in bfloat16, the loss in {str(loss.dtype).replace('torch.', '')}: "
      f"{int(((autocast == 0) & kept).sum()):,}")

# %% [markdown]
# That is why an IPU needed a loss scale: its 16-bit type is float16, the GC200 and Bow IPUs
# computing in float32 and IEEE float16 (no bfloat16; PopTorch's IPU version 21, the C600's
# Mk2 IPU, adds FP8)<!-- claim: L16-ipu-float-types --> (PyTorch Lightning's IPU
# precision plugin offers no bfloat16 either<!-- claim: L16-lightning-ipu-no-bf16 -->), and
# float16 loses small gradients unless the loss is scaled up first. bfloat16 reaches down to
# 1e-38, so no gradient here is too small for it; what it gives up is precision, 8
# significant bits against float16's 11. A whole backward pass in bfloat16 still loses some
# (lesson 9's explorer): the correct class's probability, 1 - 3e-5, rounds to exactly 1 in
# 8 bits, and the gradient through it is exactly 0. No loss scale undoes rounding; autocast
# avoids it by computing the loss in float32, and loses none.
#
# torch's mixed precision is `torch.autocast`: the weights stay float32, and each op on its list
# for lower precision (convolutions, matmuls) runs in bfloat16 on bfloat16 copies of its inputs,
# while precision-sensitive ops such as the loss run in
# float32.<!-- claim: L16-torch-autocast-float32-weights --> `GradScaler` scales the loss as
# PopTorch's `loss_scaling` does, but chooses the scale itself: it starts at 65,536, halves it
# and skips the step when a gradient overflows, and doubles it after 2,000 steps without
# one.<!-- claim: L16-torch-gradscaler-dynamic --> Ten steps of lesson 4's network, both ways:

# %%
def train_mixed(low_precision):
    torch.manual_seed(0)
    net = Network().to(DEVICE)
    optimizer = torch.optim.AdamW(net.parameters(), lr=0.001)
    scaler = torch.amp.GradScaler(DEVICE, enabled=low_precision)
    losses, dtypes = [], {"weights": net.layer1.conv.weight.dtype}
    net.layer1.register_forward_hook(lambda module, args, out: dtypes.update(activations=out.dtype))
    for x, y in zip(images[:400].chunk(10), labels[:400].chunk(10)):
        with torch.autocast(DEVICE, dtype=torch.bfloat16, enabled=low_precision):
            loss = F.cross_entropy(net(x.to(DEVICE)), y.to(DEVICE))
        scaler.scale(loss).backward()
        dtypes.update(loss=loss.dtype, gradients=net.layer1.conv.weight.grad.dtype)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()
        losses.append(loss.item())
    dtypes["AdamW state"] = optimizer.state[net.layer1.conv.weight]["exp_avg"].dtype
    return losses, dtypes, scaler.get_scale() if low_precision else None

# %%
mixed, dtypes, scale = train_mixed(True)
full, _, _ = train_mixed(False)
print("under autocast:", ", ".join(f"{k} {str(v).replace('torch.', '')}" for k, v in dtypes.items()))
print(f"loss scale after 10 steps: {scale:,.0f}; bfloat16 losses within 0.05 of float32's: "
      f"{max(abs(a - b) for a, b in zip(mixed, full)) < 0.05}")

# %% [markdown]
# So the two keep different things in 16 bits. Under autocast only the activations (and the
# matmuls and convolutions that make them) are bfloat16; weights, gradients, the loss and
# AdamW's state stay float32, and the scale never had to move. On the IPU you chose what is
# float16 yourself (`model.half()` makes the weights float16 too), and the loss scale was a
# fixed optimizer argument, or automatic loss scaling, a preview feature (lesson
# 9).<!-- claim: L16-poptorch-loss-scaling -->
#
# ## Replicas and the all-reduce
#
# Lesson 10's replicas are DDP's processes: each computes gradients on its own share of the
# batch, and an all-reduce combines them before every step. DDP all-reduces during the backward,
# bucket by bucket, and divides by the number of processes: the mean, PopTorch's default
# `ReductionType.Mean`.<!-- claim: L16-torch-ddp-averages --> A communication hook replaces that
# all-reduce; this one sums, as `ReductionType.Sum` does:<!-- claim: L16-torch-ddp-comm-hook -->

# %%
print(inspect.getsource(jobs.sum_hook))

# %% [markdown]
# Lesson 10's setup, with 4 replicas where lesson 10 has 2: micro-batch 10, 8 micro-batches
# accumulated per replica (inside DDP's `no_sync`, forward included, until the last), SGD with
# learning rate 0.05, one step; the simulator replicates lesson 4's pipeline 4
# times:<!-- claim: L16-torch-ddp-averages -->

# %%
batch = images[:320], labels[:320]  # 4 replicas x 8 micro-batches x 10 digits
ddp = {r: engines.run_data_parallel(r, *batch, accumulation=8, lr=0.05, device=DEVICE)
       for r in ("mean", "sum")}


def simulated_replicas(reduction):
    torch.manual_seed(0)
    net = Network()
    opts = tutorial.training_options("pipelined", 1, 8, output_all=False).replicationFactor(4)
    opts.Training.accumulationAndReplicationReductionType(reduction)
    model = poptorch.trainingModel(TrainingModelWithLoss(net), opts.showCompilationProgressBar(False),
                                   poptorch.optim.SGD(net.parameters(), lr=0.05))
    model(*batch)
    return engines.flat_weights(net), model.plan  # simulator extra: the plan


for reduction in (poptorch.ReductionType.Mean, poptorch.ReductionType.Sum):
    weights, plan = simulated_replicas(reduction)
    run = ddp[reduction.name.lower()]
    print(f"DDP {run.reduction:>4} == simulated ReductionType.{reduction.name} (within 1e-5): "
          f"{(run.weights - weights).abs().max().item() < 1e-5}; "
          f"measured: {run.seconds:.1f} s of host time")

# %% [markdown]
# What the all-reduce moves, counted on both sides, and how long the IPUs would take over
# their IPU-Links (simulated; on this CPU it is part of the host time above). A DDP process
# holds the whole network; each IPU of a replica holds one block, so the IPUs all-reduce four
# smaller tensors side by side:

# %%
reduced = ddp["mean"].reduced_bytes
print(f"each process all-reduces {reduced:,} bytes of gradients once per step; a ring "
      f"all-reduce sends 2(R-1)/R of them, {2 * 3 * reduced // 4:,} bytes, from each")
held = [m.gradients for m in plan.memory]  # simulator extra: each IPU's accumulated gradients
allreduce = max(e.duration for e in plan.timeline.of_kind("allreduce"))
print(f"a replica's IPUs 0-3 all-reduce their own block's gradients side by side, "
      f"{', '.join(f'{b:,}' for b in held)} bytes; the largest, IPU {held.index(max(held))}'s, "
      f"takes {allreduce * 1e6:.2f} µs per step (simulated)")

# %% [markdown]
# ## Explore the schedules
#
# Change the number of stages and micro-batches, and torch's schedule. Every stage takes the
# same time, so the idle share follows (P-1)/(M+P-1) on both sides; watch instead where the
# backwards start, what stage 0 keeps, and the step's length, the IPU's backwards recomputing
# their forward. Try fewer micro-batches than stages with 1F1B, and fewer than 2N-1 on the
# IPU.

# %%
from ipu_tutorials.classroom.explorers.schedules import schedule_explorer

# alt: The schedule explorer at 4 stages and 10 micro-batches: the simulated IPU pipeline above
#   torch's 1F1B, micro-batches 0 to 9 as forward (blue) and backward (orange) boxes per stage,
#   both filling a staircase, alternating forward and backward, then draining; the IPU's
#   backwards, which recompute their forward, are longer, so its step ends later.
schedule_explorer(stages=4, micro_batches=10, schedule="1F1B")

# %% [markdown]
# ## What a real IPU would do, and where the simulator differs
#
# The torch side of this lesson is real: four processes train, send tensors and all-reduce,
# and the losses and bytes are what they computed. The IPU side is the simulator of lessons
# 4, 8, 9 and 10, with their caveats: times from a cost model, memory added up per IPU. The
# figure's torch panels are a model too: the recorded orders timed with equal stage times and
# free sends. On your CPU the processes share its cores and wait on each other, so the host
# times say nothing about a GPU's.
#
# **On a GPU.** Set `DEVICE = "cuda"` in the first cell on a machine with 4 GPUs: each
# process takes its own GPU, the group uses nccl, and the same cells run (the mixed-precision
# cell needs a GPU with bfloat16 arithmetic). Expect the losses to
# match plain PyTorch on the GPU to float tolerance; the GPU's convolutions may sum in another
# order than the CPU's.
#
# ## Exercises

# %%
from ipu_tutorials.classroom.exercises import torch_engines as exercises
from torch.distributed.pipelining import Schedule1F1B, ScheduleGPipe

# %% [markdown]
# ### Exercise 16.1: pick a schedule on both sides
#
# Lesson 4's network runs over 4 stages, every stage alike (forward 1 unit, backward 2). On
# both sides at most 20% of the stages' time may be idle, and on the GPU side stage 0 can keep
# the activations of at most 4 micro-batches (IPU 0 stashes the inputs of 2N-1 = 7
# micro-batches whatever the accumulation and recomputes the rest, so memory sets no limit
# there).
# Choose torch's schedule class and its micro-batch count, and write the `poptorch.Options`
# the IPUs need. The check compiles your options on lesson 4's model and explains the bubble
# on each side.

# %% tags=["answer"]
# starting code: exercises.pick_a_schedule.starting_code

# %%
exercises.pick_a_schedule.check(my_schedule, my_micro_batches, my_options)

# %% [markdown]
# ### Exercise 16.2: the fullest rank with SGD
#
# The table above shows what `ZeroRedundancyOptimizer` over 4 processes held of AdamW's state.
# Wrap `torch.optim.SGD(..., momentum=0.9)` instead, which keeps one float32 momentum buffer
# per parameter element (a copy of the gradient's shape).<!-- claim: L16-torch-sgd-momentum-buffer -->
# How many bytes of optimizer state does the fullest process hold for lesson 4's network?
# Work it out without running anything.

# %% tags=["answer"]
# starting code: exercises.zero_fullest_rank.starting_code

# %%
exercises.zero_fullest_rank.check(my_bytes)

# %% [markdown]
# ## Summary
#
# - `torch.distributed.pipelining` runs lesson 4's split over four processes with the same
#   losses as the simulator and plain PyTorch; the schedule changes the order, not the maths.
# - With equal stages GPipe, 1F1B and the IPU's pipeline are all idle (P-1)/(M+P-1) of the
#   time (P stages of work, M micro-batches); they differ in what they keep: M micro-batches'
#   activations (GPipe), P (1F1B), or 2N-1 stashed inputs (the IPU), which the IPU pays for
#   by recomputing each forward: a third more time here, as torch would with checkpointing.
# - `ZeroRedundancyOptimizer` is the counterpart of RTS on the optimizer state (as the lessons
#   set it), but gives each tensor whole to one rank where RTS splits each large one;
#   `fully_shard` splits every tensor, weights and gradients included, as RTS on the weights
#   too would split the weights.
# - bfloat16 has float32's range: autocast keeps float32 weights and rarely needs its
#   `GradScaler`; float16 on an IPU needed a loss scale.
# - DDP is replication with `ReductionType.Mean`; a communication hook gives `Sum`.
#
# **Next:** the course ends here. Lesson 15 says how to take your own model through the
# course; this lesson, which of PyTorch's engines does each step on a GPU.
#
# ## References
#
# - PyTorch 2.14 source: `torch/distributed/pipelining/` (`stage.py`, `schedules.py`),
#   `torch/distributed/optim/zero_redundancy_optimizer.py`,
#   `torch/distributed/fsdp/_fully_shard/`, `torch/nn/parallel/distributed.py`,
#   `torch/amp/`: https://github.com/pytorch/pytorch (tag v2.14.1); documentation:
#   https://pytorch.org/docs/stable/distributed.pipelining.html,
#   https://pytorch.org/docs/stable/amp.html and https://pytorch.org/docs/stable/ddp_comm_hooks.html
# - Y. Huang et al., "GPipe: Efficient Training of Giant Neural Networks using Pipeline
#   Parallelism", NeurIPS 2019 (arXiv:1811.06965): the bubble fraction (P-1)/(M+P-1).
# - S. Rajbhandari et al., "ZeRO: Memory Optimizations Toward Training Trillion Parameter
#   Models", SC 2020 (arXiv:1910.02054).
# - P. Micikevicius et al., "Mixed Precision Training", ICLR 2018 (arXiv:1710.03740); D. Kalamkar
#   et al., "A Study of BFLOAT16 for Deep Learning Training", 2019 (arXiv:1905.12322).
# - PopTorch user guide (SDK 3.4), "Pipelined execution" and "Optimizers" (loss scaling):
#   https://docs.graphcore.ai/projects/poptorch-user-guide/en/latest/overview.html
# - Coming from GPUs: [docs/coming-from-gpus.md](../docs/coming-from-gpus.md).
