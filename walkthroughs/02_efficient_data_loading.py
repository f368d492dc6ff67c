# %% [markdown]
# # Lesson 2: Efficient data loading and batching
#
# An IPU does not pull samples from Python one at a time. Each call of a PopTorch model sends
# the device a whole block of data, lets it run many steps, and brings results back. How big
# that block is, what comes back, and whether the host prepares the next block while the IPU
# works decide whether the IPU computes or waits. This lesson measures all three.
#
# **What you will learn**
# - `deviceIterations` and the combined batch: micro-batch x device iterations x replicas x
#   gradient accumulation, and how `poptorch.DataLoader` batches and the model splits it;
# - output modes (`OutputMode.All`, `Final`, `EveryN`, `Sum`): what shapes come back and what
#   the host link carries;
# - where a call's time goes (IPU compute, host I/O, waiting for the host's data), and why
#   more device iterations shrink the host's share;
# - `DataLoaderMode.Async` and `AsynchronousDataAccessor`: what they overlap;
# - how to read a host-bound run off the timeline.
#
# **Time:** about 45 minutes.
#
# **Prerequisites:** lesson 1 (PopTorch basics: `trainingModel`, the loss inside `forward`).
#
# **Coming from GPUs:** `deviceIterations` plays the part of CUDA Graphs replaying several
# steps per launch ([the GPU bridge](../docs/coming-from-gpus.md)).

# %%
import matplotlib.pyplot as plt
import torch

from ipu_tutorials import poptorch
from ipu_tutorials.classroom.explorers.data_loading import DigitClassifier, plan_call, share
from ipu_tutorials.profiling import plot_timeline
from ipu_tutorials.tutorial.datasets import load_mnist

_ = torch.manual_seed(0)  # the same numbers on every run
digits = load_mnist(train=True, source="embedded")
print(digits, "- first image", tuple(digits[0][0].shape))

# %% [markdown]
# The data are real MNIST digits shipped inside the package. `DigitClassifier` is a small
# convolutional network for them (three convolutions, two linear layers) whose `forward`
# returns `(logits, loss)` when given labels, as lesson 1 taught.
#
# ## One call, many samples
#
# `deviceIterations(D)` makes one call of the model run D training steps on the IPU before
# returning to the host. With R replicas and gradient accumulation A, one call consumes
# micro-batch x D x R x A samples: the **combined batch**. `poptorch.DataLoader` takes the
# micro-batch as its `batch_size` and hands out combined batches:<!-- claim: L02-combined-batch -->

# %%
opts = poptorch.Options().deviceIterations(4).replicationFactor(2)
opts.Training.gradientAccumulation(2)
loader = poptorch.DataLoader(opts, digits, batch_size=8, shuffle=True)
images, labels = next(iter(loader))
print(f"batch_size 8 x deviceIterations 4 x replicationFactor 2 x gradientAccumulation 2 = "
      f"{loader.combinedBatchSize}")
print(f"one batch: images {tuple(images.shape)}, labels {tuple(labels.shape)}; "
      f"{len(loader)} calls per epoch of {len(digits)} digits")

# %% [markdown]
# The model reads that batch as D x A x R micro-batches of 8: device iteration by device
# iteration, each one's A micro-batches, each one split between the replicas. The IPU's
# operations only ever see 8 samples at a time, so layers that depend on the batch (batch
# norm, for example) see the micro-batch, not the combined batch.<!-- claim: L02-micro-batch -->
# Give the model a batch of the wrong size and it says what
# it expects:<!-- claim: L02-batch-dimension -->

# %%
model = DigitClassifier()
training = poptorch.trainingModel(model, opts.clone().showCompilationProgressBar(False),
                                  torch.optim.SGD(model.parameters(), lr=0.01))
try:
    training(images[:100], labels[:100])
except poptorch.Error as error:
    print(error)

# %% [markdown]
# ## What comes back: output modes
#
# A training call computes an output and a loss for every micro-batch; `outputMode` decides
# which of them cross the host link back to Python. Here is one call of
# `deviceIterations(4)` on 2 replicas (micro-batch 4) under each mode, from the same weights:

# %%
def one_call(mode, period=None):
    torch.manual_seed(0)
    model = DigitClassifier()
    call_opts = poptorch.Options().deviceIterations(4).replicationFactor(2)
    call_opts.outputMode(mode, period).showCompilationProgressBar(False)
    training = poptorch.trainingModel(model, call_opts,
                                      torch.optim.SGD(model.parameters(), lr=0.01))
    return training(digits.images[:32], digits.labels[:32])  # 4 x 2 micro-batches of 4


for mode, period in ((poptorch.OutputMode.All, None), (poptorch.OutputMode.Final, None),
                     (poptorch.OutputMode.EveryN, 2), (poptorch.OutputMode.Sum, None)):
    logits, loss = one_call(mode, period)
    carried = logits.nelement() * logits.element_size() + loss.nelement() * loss.element_size()
    print(f"{mode.name:>6}: logits {tuple(logits.shape)}, loss {tuple(loss.shape)}, "
          f"{carried:,} bytes back to the host, losses {[round(x, 3) for x in loss.tolist()]}")

# %% [markdown]
# The cell above shows the rules. `All` returns every micro-batch (D x A x R of them, in
# device-iteration order, replicas interleaved). `Final`, the training default, returns the last
# micro-batch of each replica. `EveryN` returns every N-th device iteration's micro-batches.
# `Sum` returns one value per replica: the sum over the call, as many bytes as `Final`, but
# every loss counts. Divide it by D x A for the mean loss of the
# call.<!-- claim: L02-output-modes -->
#
# Inference models default to `All`, because you usually want every
# prediction.<!-- claim: L02-output-defaults -->
#
# ## Where a call's time goes
#
# The simulator plans each call: the IPU's compute, the host I/O (a synchronisation at each
# end of the call and a stream transfer per micro-batch) and the host's own work preparing the
# samples. `plan_call` compiles `DigitClassifier` under some options and returns the plan;
# with one device iteration, most of the call is host I/O:

# %%
one_step = plan_call(poptorch.Options().deviceIterations(1), micro_batch=32, loader="Async")
print(one_step.breakdown_text())
print(f"host I/O: {share(one_step):.0%} of the call")

# %% [markdown]
# The host I/O cost is mostly paid once per call, whatever D is. More device iterations
# spread it over more steps, so the IPU spends a larger share of the call computing:

# %%
print("  D   images/call  host I/O  waiting for data  IPU compute  images/s (simulated)")
for d in (1, 2, 4, 8, 16, 32, 64):
    plan = plan_call(poptorch.Options().deviceIterations(d), micro_batch=32, loader="Async")
    print(f"{d:>3}  {plan.spec.samples_per_call:>11,}  {share(plan):>8.0%}  "
          f"{share(plan, 'waiting for host data'):>16.0%}  {share(plan, 'IPU compute'):>11.0%}"
          f"  {plan.samples_per_second:>10,.0f}")

# %% [markdown]
# How far to trust a simulated throughput: on eleven published Graphcore runs it was not
# calibrated on, the simulator lands between 0.80x and 1.56x of the published figure, nine
# of them within 1.25x (docs/cost-model.md, "Validation against runs it was not calibrated on").

# %% [markdown]
# Throughput climbs steeply at first and then flattens: once the fixed cost is spread thin,
# what is left is the IPU's own work and the host's preparation of every sample. This is why
# real training scripts set `deviceIterations` above 1 (Graphcore's pipelining tutorial: 10
# for training, 100 for inference).<!-- claim: L02-device-iterations-practice -->
#
# ## Sync or Async: who waits for whom
#
# The host must also *prepare* every sample: read it, transform it, collate it. A plain
# (`DataLoaderMode.Sync`) loader without worker processes does that between calls, while the
# IPU waits. `DataLoaderMode.Async` runs the loader in the background (an
# `AsynchronousDataAccessor`), so the next call's data is prepared while the IPU runs the
# current one. PopTorch runs that loader in a separate worker process that fills a ring
# buffer in shared memory (its user guide calls it a separate thread; its source starts a
# process); the simulator runs it on a background thread. Either way the preparation
# overlaps the IPU's work, which is what this lesson measures.<!-- claim: L04-async-loader -->
# The same options, compiled on the first batch of each kind of DataLoader:

# %%
def first_call(mode):
    opts = poptorch.Options().deviceIterations(16).showCompilationProgressBar(False)
    torch.manual_seed(0)
    model = DigitClassifier()
    training = poptorch.trainingModel(model, opts, torch.optim.SGD(model.parameters(), lr=0.01))
    loader = poptorch.DataLoader(opts, digits, batch_size=8, mode=mode)
    training.compile(*next(iter(loader)))  # the plan needs one batch, not a whole call
    loader.terminate()
    return training.plan  # simulator extra; on IPUs: getPerfCounters(), PopVision


plans = {mode.name: first_call(mode) for mode in (poptorch.DataLoaderMode.Sync,
                                                  poptorch.DataLoaderMode.Async)}
for name, plan in plans.items():
    print(f"{name:>5}: {plan.samples_per_second:,.0f} images/s; {plan.breakdown_text()}")

# %% [markdown]
# The cell above shows the same IPU work and the same host I/O in both plans; only the
# preparation moves. Synchronously it comes first and the whole of it is waiting; with the
# asynchronous loader it runs alongside the IPU, and the call waits for it only if the
# preparation takes longer than the IPU's work. What waiting is left in the Async row is the
# host handing each micro-batch's inputs over before the device starts (a fixed cost per
# micro-batch in the cost model, calibrated on BERT-Large's published Pod16 and Pod64 runs:
# [docs/cost-model.md](../docs/cost-model.md)); no loader overlaps it, and the Sync row pays
# it too. The timelines show it: the "host data" row holds the loader's preparation and that
# hand-over, side by side when they overlap (Async) and one after the other when they do not
# (Sync).

# %%
# alt: Two timelines of one training call on IPU 0 on the same millisecond axis, with rows for the
#   IPU, the host's I/O and the host's data. Top, the synchronous loader: the IPU's forward,
#   backward and weight-update steps start only when the host has prepared the call's data. Bottom,
#   the asynchronous loader: the data was prepared ahead, so the IPU starts sooner and the call
#   ends earlier.
figure, axes = plt.subplots(2, 1, figsize=(11, 5.2))
longest_ms = max(plan.call_seconds for plan in plans.values()) * 1e3
for ax, (name, plan) in zip(axes, plans.items()):
    plot_timeline(plan.timeline.events, 1, ax=ax, title=f"{name} loader: one call",
                  label_micro_batches=False)
    ax.set_xlim(0, longest_ms)  # one scale for both calls (milliseconds)
plt.show()

# %% [markdown]
# You can also wrap any iterable yourself: `poptorch.AsynchronousDataAccessor(loader)` reads
# it in the background and yields the same batches in the same order. It is what `mode=Async`
# does for you.<!-- claim: L02-accessor -->

# %%
accessor = poptorch.AsynchronousDataAccessor(poptorch.DataLoader(opts, digits, batch_size=8))
first = next(iter(accessor))
same = next(iter(poptorch.DataLoader(opts, digits, batch_size=8)))
print("same first batch:", all(torch.equal(a, b) for a, b in zip(first, same)))
accessor.terminate()

# %% [markdown]
# ## Diagnosing a host-bound run
#
# A run is **host-bound** when the IPU waits for the host's data: the breakdown's "waiting for
# host data" is large, and on the timeline the "host data" bar is longer than the IPU's work.
# One host process feeding more replicas is the classic case: the replicas compute in
# parallel, but one process prepares every sample.

# %%
for replicas in (1, 2, 4):
    plan = plan_call(poptorch.Options().deviceIterations(16).replicationFactor(replicas),
                     micro_batch=32, loader="Async")
    print(f"{replicas} replica(s): {plan.samples_per_second:>7,.0f} images/s, waiting for host "
          f"data {share(plan, 'waiting for host data'):.0%}")

# %% [markdown]
# The cell above shows the throughput growing far less than the replica count, because the
# host's preparation, not the IPUs, sets the pace. The cures move work off the critical path:
# an asynchronous loader (so preparation overlaps the IPU), worker processes
# (`num_workers`), lighter per-sample transforms, and several host processes, one per group
# of replicas (`poprun`, lesson 10).<!-- claim: L02-poprun-hosts -->
#
# ## Explore data loading
#
# Change the device iterations, micro-batch, loader mode and replicas. The text gives the
# call's breakdown and throughput; the figure shows the call's timeline and how its time
# splits. Try 1 against 16 device iterations, then Sync against Async, then 4 replicas.

# %%
from ipu_tutorials.classroom import data_loading_explorer

# alt: Top: a timeline of one call on replica 0, with rows for IPU 0, the host's I/O and the host's
#   data: host I/O and data preparation come first, then four micro-batches of forward, backward
#   and weight update on the IPU. Bottom: one bar splitting the call into IPU compute, host I/O and
#   waiting for host data, with their percentages.
data_loading_explorer(device_iterations=4, micro_batch=32, loader="Async")

# %% [markdown]
# ## What a real IPU would do
#
# On hardware the same rules hold: the combined batch, the output shapes and the benefit of
# more device iterations. The durations are the simulator's estimates: the per-call
# synchronisation, the stream latency per micro-batch and the host's preparation time per
# sample are calibrated on Graphcore's published pipelining and efficient-data-loading runs,
# and real hosts differ widely (CPU, transforms, NUMA placement). Real PopTorch also overlaps
# host transfers with compute when asked (`set_overlap_for_input`, I/O tiles), which the
# simulator does not model.<!-- claim: L02-overlapped-io --> Its asynchronous loader is a
# separate process with shared-memory buffers (clone a tensor to keep it past one
# iteration); here it is a background thread.<!-- claim: L04-async-loader --> The
# simulator treats a loader with `num_workers > 0` as preparing ahead, but not as faster; real
# workers also split the preparation between processes. On hardware, compare a run on
# synthetic data (PopTorch's `enableSyntheticData`, which generates the inputs on the IPU and
# disables host I/O) with a run on real data: the gap is the host's cost, which the simulator
# can only estimate.<!-- claim: L02-synthetic-data -->
#
# **On a Bow Pod.** A faster IPU does not help a host-bound run: the Bow's higher clock
# shortens only the IPU compute of the breakdown above, so the waiting for host data grows.
#
# ## Summary
#
# - One call consumes micro-batch x deviceIterations x replicationFactor x
#   gradientAccumulation samples; `poptorch.DataLoader` batches that way and the model splits
#   it into micro-batches.
# - `OutputMode.All` returns every micro-batch, `Final` (training default) the last of each
#   replica, `EveryN` every N-th device iteration, `Sum` one sum per replica.
# - Host I/O is mostly a per-call cost: more device iterations shrink its share.
# - `DataLoaderMode.Async` (an `AsynchronousDataAccessor`) prepares the next call's data while
#   the IPU runs; a run is host-bound when the IPU waits for that data.
#
# ## Exercises

# %%
from ipu_tutorials.classroom.exercises import data_loading as exercises

# %% [markdown]
# ### Exercise 2.1: the smallest device-iteration count
#
# One host process feeds 2 replicas with micro-batch 32 through an asynchronous loader. Find
# the smallest `deviceIterations` at which host I/O is under 10% of a call, and give its
# `poptorch.Options` as `my_options`. Write a search: `plan_call(opts, micro_batch=32)` plans
# a call and `share(plan)` is host I/O's share. The check plans your options, and one device
# iteration fewer.

# %% tags=["answer"]
# starting code: exercises.smallest_device_iterations.starting_code

# %%
exercises.smallest_device_iterations.check(my_options)

# %% [markdown]
# ### Exercise 2.2: sum the losses on the device
#
# Write `my_options` for a training call with `deviceIterations(4)` on 2 replicas that brings
# back one loss per replica: the sum of all its micro-batch losses, so that the host link
# carries as little as `Final` but no loss is lost. The check trains a call with your options
# and compares the losses with every loss of the same call, summed.

# %% tags=["answer"]
# starting code: exercises.summed_losses.starting_code

# %%
exercises.summed_losses.check(my_options)

# %% [markdown]
# **Next:** lesson 3 (blocks and stages) splits a model over several IPUs.
#
# ## References
#
# - PopTorch user guide (SDK 3.4), "Efficient data batching" (`poptorch.DataLoader`,
#   `AsynchronousDataAccessor`, `deviceIterations`, `outputMode`):
#   https://docs.graphcore.ai/projects/poptorch-user-guide/en/latest/batching.html
# - PopTorch user guide, "Efficient IPU I/O" (prefetch, overlapping I/O):
#   https://docs.graphcore.ai/projects/poptorch-user-guide/en/latest/hostio_optimisation.html
# - Graphcore tutorial "Efficient data loading with PopTorch" (the throughputs this lesson's
#   host model is calibrated on): graphcore/examples (https://github.com/graphcore/examples),
#   `tutorials/tutorials/pytorch/efficient_data_loading`.
# - Coming from GPUs: [docs/coming-from-gpus.md](../docs/coming-from-gpus.md).