# %% [markdown]
# # Lesson 5: Sharding
#
# `ShardedExecution` runs the same stages as lesson 4 one after another: a micro-batch goes
# through IPU 0, then IPU 1, and so on, and only then does the next one start. It is not a way
# to go faster; it is the simplest way to run a model that needs several IPUs, and the easiest
# to debug. This lesson puts the two strategies side by side.
#
# **What you will learn**
# - how to switch the tutorial network from pipelined to sharded execution;
# - what the sharded timeline looks like beside the pipelined one, and what it costs;
# - that the strategy changes time, never the numbers the model computes;
# - how to watch tensors and their gradients with `poptorch.ipu_print_tensor`;
# - when sharding is the right choice.
#
# **Time:** about 50 minutes.
#
# **Prerequisites:** lessons 3 and 4.
#
# **Coming from GPUs:** sharding is naive model parallelism, one device busy at a time; it is
# not tensor parallelism ([the GPU bridge](../docs/coming-from-gpus.md)).

# %%
import copy

import matplotlib.pyplot as plt
import torch

from ipu_tutorials import poptorch, tutorial
from ipu_tutorials.tutorial.datasets import load_mnist
from ipu_tutorials.tutorial.models import Network, TrainingModelWithLoss
from ipu_tutorials.profiling import plot_timeline

torch.manual_seed(0)
train_set = load_mnist(train=True, source="embedded")

# %% [markdown]
# ## Same model, same data, another strategy
#
# The options differ from lesson 4 in one line: the strategy. Sharding has no pipeline to
# fill, so it does not need `gradientAccumulation >= 2N-1`; we keep 10 to compare like with
# like.

# %%
def training_setup(strategy_name, seed=0):
    torch.manual_seed(seed)
    opts = tutorial.training_options(strategy_name, device_iterations=10, gradient_accumulation=10)
    model = Network()
    training_model = poptorch.trainingModel(
        TrainingModelWithLoss(model), opts, poptorch.optim.AdamW(model.parameters(), lr=0.001))
    data = poptorch.DataLoader(opts, train_set, batch_size=40, shuffle=True,
                               mode=poptorch.DataLoaderMode.Async)
    return model, training_model, data


for name in ("sharded", "pipelined"):
    opts = tutorial.training_options(name, device_iterations=10, gradient_accumulation=10)
    print(f"{name}: deviceIterations {opts.device_iterations}, "
          f"gradientAccumulation {opts.Training.gradient_accumulation}, "
          f"OutputMode.{poptorch.OutputMode(opts.output_mode).name}")

# %% [markdown]
# `tutorial.training_options` builds the options of Graphcore's pipelining tutorial for either
# strategy: 10 device iterations, gradient accumulation 10 and `OutputMode.All` (the
# tutorial's walkthrough asks for every micro-batch's outputs to report the training
# accuracy). Graphcore's `mnist_pipeline.py` script differs for sharding: it sets gradient
# accumulation only when it pipelines, and keeps the default output mode. Its data loader
# still batches for accumulation 10, so its sharded model, which PopTorch splits by device
# iterations alone, trains micro-batches of 400 images: the same 400 images per weight
# update as ours, in one micro-batch instead of ten.<!-- claim: L05-script-options -->
# Compile both and draw one device iteration of each on the same time axis:

# %%
models = {}
for name in ("pipelined", "sharded"):
    model, training_model, data = training_setup(name)
    training_model.compile(*next(iter(data)))
    models[name] = training_model

plans = {name: m.plan for name, m in models.items()}  # simulator extra: what each compiled into
work = {name: plan.timeline.device_span() for name, plan in plans.items()}
# alt: Two timelines of one training step on IPUs 0 to 3 on one time axis. Top, pipelined: the
#   micro-batches' forward and backward passes overlap across the four IPUs. Bottom, sharded: one
#   micro-batch at a time passes through the IPUs in turn, so each IPU works only now and then and
#   the step takes longer.
fig, axes = plt.subplots(2, 1, figsize=(11, 6.6), sharex=True)
for ax, (name, plan) in zip(axes, plans.items()):
    plot_timeline(plan.timeline.events, 4, ax=ax, steps=1, show_host=False,
                  title=f"{name}: the IPUs' part of one step, {work[name] * 1e6:,.0f} µs")
plt.show()

# %% [markdown]
# In the sharded picture only one IPU works at any moment; the others wait their turn, and
# its step is the longer bar. Both panels start where the first step's IPU work does, well
# into the call: before it, the host synchronises and hands the call's micro-batches over
# (the notes under the panels give the times). The conceptual version,
# drawn from the same schedule functions with a forward of 1 time unit and a backward of 2
# on every IPU:
#
# ![Two schedules of 4 micro-batches on 4 IPUs on one time axis: sharded, each micro-batch goes forward through IPUs 0 to 3 and back before the next starts, 48 time units; pipelined, forward and backward passes overlap across the IPUs, 21 time units](../static/diagram_sharding_vs_pipelining.png)
#
# The simulator's timeline says so directly:

# %%
step = {name: plan.device_seconds / 10 for name, plan in plans.items()}  # a call: 10 steps
for name, plan in plans.items():
    busy = sum(plan.timeline.busy(ipu) for ipu in range(4)) / (4 * plan.device_seconds)
    print(f"{name:>9}: at most {plan.timeline.max_concurrency()} IPU(s) busy at once, "
          f"device utilisation {busy:.0%}, {plan.device_samples_per_second:,.0f} images/s "
          f"on the IPUs and the host link, {plan.samples_per_second:,.0f} images/s fed by "
          f"the host")
link = step["pipelined"] - work["pipelined"]
print(f"the IPUs' part of a step (the figure): pipelining is "
      f"{work['sharded'] / work['pipelined']:.2f}x faster")
print(f"with the host link's {link * 1e6:,.0f} µs per step (the same for both: inputs, outputs "
      f"and the call's synchronisations): {step['pipelined'] * 1e6:,.0f} against "
      f"{step['sharded'] * 1e6:,.0f} µs per step, {step['sharded'] / step['pipelined']:.2f}x")

# %% [markdown]
# ## Why both are fed at the same rate: the host
#
# The last column of the cell above is the same for both strategies although the IPUs run
# the pipelined step faster. The throughput is set by the host, not the IPUs: per step, the
# host prepares the next 400 images (the data loader's work, at a cost per image that the
# cost model calibrates on the pipelining tutorial's published run) while the IPUs compute:

# %%
print(f"{'':>9}  host prepares  IPUs and host link  bound by")
for name, plan in plans.items():
    host, ipus = plan.host_data_seconds / 10, plan.device_seconds / 10
    print(f"{name:>9}  {host * 1e6:10,.0f} µs  {ipus * 1e6:15,.0f} µs  "
          f"{'the host' if host > ipus else 'the IPUs'}")
per_image = plans["sharded"].host_data_seconds / plans["sharded"].spec.samples_per_call
print(f"host: {per_image * 1e6:.1f} µs per image; {plans['sharded'].breakdown_text()}")

# %% [markdown]
# On hardware, Graphcore's efficient-data-loading tutorial diagnoses this the same way: time the
# data loader alone, then the model with `opts.enableSyntheticData(True)` (no host data, an
# upper bound of the IPUs' throughput); a loader slower than that bounds the
# run.<!-- claim: L05-diagnose-host --> The plan's `device_samples_per_second` is the nearest
# simulated figure to a synthetic-data run: it leaves out the wait for the host's data, not the
# host link's transfers ([docs/differences.md](../docs/differences.md)). What moves the
# bottleneck back to the IPUs is a host that prepares data faster (on hardware: more loader
# worker processes, `poptorch.DataLoader(..., num_workers=...)`, on more CPU cores; the
# simulator does not model that speed-up: [docs/differences.md](../docs/differences.md)), or
# more IPU work per image (a bigger model). How much faster the host must be, and what
# pipelining is worth once it is:

# %%
pipelined, sharded = plans["pipelined"], plans["sharded"]
needed = pipelined.host_data_seconds / pipelined.device_seconds
print(f"the host must prepare images {needed:.1f}x faster for the pipelined IPUs to be the "
      f"bottleneck; then pipelined {pipelined.device_samples_per_second:,.0f} images/s against "
      f"sharded {sharded.device_samples_per_second:,.0f}")

# %% [markdown]
# How far to trust a simulated throughput: on eleven published Graphcore runs it was not
# calibrated on, the simulator lands between 0.80x and 1.56x of the published figure, nine
# of them within 1.25x (docs/cost-model.md, "Validation against runs it was not calibrated on").

# %% [markdown]
# ## Identical numerics
#
# Strategies change where and when the work happens, not the arithmetic. Train the network
# twice from the same initial weights, once with each strategy, and compare the weights:

# %%
trained = {}
for name in ("pipelined", "sharded"):
    model, training_model, data = training_setup(name, seed=1)
    torch.manual_seed(2)  # the same shuffles for both runs
    tutorial.train(training_model, data, epochs=2, progress=False, log=None)
    trained[name] = model
difference = max((p - q).abs().max().item() for p, q in
                 zip(trained["pipelined"].parameters(), trained["sharded"].parameters()))
print(f"largest weight difference after 2 epochs: {difference}")

# %% [markdown]
# Zero, to the last bit. (The tests of this package check the same for phased execution and
# replication against a plain PyTorch loop.)
#
# ## Looking inside: ipu_print_tensor
#
# On an IPU you cannot set a breakpoint inside the model. `poptorch.ipu_print_tensor` prints a
# tensor each time the IPU computes it, and its gradient during the backward pass. It returns
# the tensor: use the result, or the compiler removes the print.<!-- claim: L05-print-tensor -->
# Sharded execution with one micro-batch keeps the output
# short and in order.

# %%
class Watched(Network):
    def forward(self, x):
        logits = super().forward(x)
        with poptorch.Block("B4"):  # the print is an op too: it needs a block
            return poptorch.ipu_print_tensor(logits, "logits")


torch.manual_seed(0)
watched = Watched()
opts = poptorch.Options().setExecutionStrategy(tutorial.strategy("sharded"))
debug_model = poptorch.trainingModel(TrainingModelWithLoss(watched), opts)
images, labels = train_set.images[:2], train_set.labels[:2]
_ = debug_model(images, labels)

# %% [markdown]
# The forward pass printed the logits of two images; the backward pass printed their gradient.
# Each row of the gradient sums to zero: that is what cross-entropy's gradient does. Both were
# written to stderr, as on an IPU (PopTorch's own test of `ipu_print_tensor` reads them
# there),<!-- claim: L05-print-tensor-stderr --> so the notebook shows them in the pale red box
# it keeps for stderr: the box holds the print, not an error.
#
# ## When sharding is the right choice
#
# - **Debugging** a model split over IPUs: one micro-batch at a time, in model order, with the
#   same placement as the pipeline you will run later.
# - **A single sample, or a latency-bound service**: a pipelined inference model needs at
#   least N micro-batches per call to fill, while a sharded one answers one micro-batch at a
#   time.<!-- claim: L05-when-to-shard -->
# - **A model that must be split but whose throughput does not matter**, for example during
#   development.
#
# For training throughput, pipelining wins as soon as there are micro-batches to overlap. The
# single-sample case is easy to check:

# %%
for name in ("pipelined", "sharded"):
    opts = poptorch.Options().setExecutionStrategy(tutorial.strategy(name))
    single = poptorch.inferenceModel(Network(), opts.showCompilationProgressBar(False))
    try:
        single.compile(torch.randn(1, 1, 28, 28))
        plan = single.plan  # simulator extra
        host = plan.breakdown()["host I/O"]
        print(f"{name}: one image in {plan.call_seconds * 1e6:.1f} µs, of which "
              f"{host * 1e6:.1f} µs is the host's synchronisation and transfer")
    except poptorch.Error as error:
        print(f"{name}: {error}")

# %% [markdown]
# ## Explore
#
# Switch the strategy between pipelined and sharded, then change the gradient accumulation:
# sharded time grows in proportion, pipelined time grows more slowly once the pipeline is full.

# %%
from ipu_tutorials.classroom import pipeline_explorer

# alt: Timeline of one sharded step on 4 IPUs with 8 micro-batches: each micro-batch's forward pass
#   runs on IPU 0, 1, 2 and 3 in turn and its backward pass returns before the next micro-batch
#   starts, so only one IPU works at a time; the host's I/O and data preparation come first, the
#   weight update last.
pipeline_explorer(ipus=4, accumulation=8, strategy="sharded")

# %% [markdown]
# ## What a real IPU would do, and where the simulator differs
#
# PopART runs sharded stages in model order, one IPU at a time, and merges neighbouring
# stages that share an IPU, as the simulator does.<!-- claim: L05-sharded -->
# On hardware `ipu_print_tensor` copies the tensor to the host and Poplar formats it; the
# simulator prints it from PyTorch during the
# numerics, once per micro-batch, in the same order. Timing differences between the two
# strategies come from the simulator's cost model; their direction, and the one-IPU-at-a-time
# pattern, are what a PopVision trace of real hardware shows too.
#
# **On a Bow Pod.** Sharding keeps one IPU busy at a time on any IPU; a faster chip shortens
# each shard's turn but not the idle time of the others.
#
# ## Exercises

# %%
from ipu_tutorials.classroom.exercises import sharding as exercises

# %% [markdown]
# ### Exercise 5.1: IPUs at work
#
# Under `ShardedExecution` on four IPUs, how many IPUs compute at the same time?

# %% tags=["answer"]
# starting code: exercises.busy_ipus.starting_code

# %%
exercises.busy_ipus.check(my_busy_ipus)

# %% [markdown]
# ### Exercise 5.2: measure the speedup
#
# With `gradientAccumulation(10)`, how many times faster is a pipelined step than a sharded
# one for this network? Compute it from the two plans in `plans`
# (`plans[name].device_seconds`: the time the IPUs and the host link take per call).

# %% tags=["answer"]
# starting code: exercises.speedup.starting_code

# %%
exercises.speedup.check(my_speedup)

# %% [markdown]
# ### Exercise 5.3: shard with the smallest accumulation
#
# Write the `poptorch.Options` that train the network sharded over four IPUs (`B1` to `B4` on
# IPUs 0 to 3) with `deviceIterations(10)` and the smallest gradient accumulation PopTorch
# accepts for this strategy. The check compiles the network with your options.

# %% tags=["answer"]
# starting code: exercises.sharded_options.starting_code

# %%
exercises.sharded_options.check(my_options)

# %% [markdown]
# ## Summary
#
# - `ShardedExecution` takes the same stages as `PipelinedExecution` and runs them one after
#   another: one IPU busy at a time, and no gradient-accumulation rule: accumulation 1 is
#   legal.<!-- claim: L05-no-accumulation-rule -->
# - The strategy never changes the numbers: pipelined and sharded training give identical
#   weights.
# - `ipu_print_tensor` prints a tensor and its gradient from inside the model.
# - Shard to debug and for single samples; pipeline for throughput.
#
# **Next:** lesson 6 (phased execution) runs a model too big for the IPUs in phases,
# streaming weights in and out.
#
# ## References
#
# - PopTorch user guide (SDK 3.4), "Multi-IPU execution strategies", "Sharded execution", and
#   "PopTorch ops", "poptorch.ipu_print_tensor":
#   https://docs.graphcore.ai/projects/poptorch-user-guide/en/latest/overview.html
# - Graphcore tutorial "PopTorch Parallel Execution Using Pipelining" (its sharded section):
#   graphcore/examples (https://github.com/graphcore/examples),
#   `tutorials/tutorials/pytorch/pipelining`.
# - Coming from GPUs: [docs/coming-from-gpus.md](../docs/coming-from-gpus.md).