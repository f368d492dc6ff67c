# %% [markdown]
# # Lesson 4: Pipelining
#
# Lesson 3 put the four blocks of an MNIST network on four IPUs. Placed like that, each IPU
# would wait for the one before it. Pipelining keeps them all busy: while IPU 3 works on one
# micro-batch, IPU 2 works on the next, and so on. This lesson shows the schedule PopTorch
# runs, what it costs to fill and drain it, and how to keep the stages in balance, then trains
# the network with it.
#
# **What you will learn**
# - the pipeline's clock: which micro-batch each stage works on in each cycle;
# - what `PipelinedExecution` does in training: 2N-1 pipeline stages, fill, main and flush;
# - how gradient accumulation and device iterations set the work of one call, and the
#   combined batch size;
# - how utilisation grows with gradient accumulation, and why the slowest stage sets the pace;
# - how to train the tutorial's network with `OutputMode.All`.
#
# **Time:** about 60 minutes.
#
# **Prerequisites:** lesson 3 (blocks and stages).
#
# **Coming from GPUs:** this is pipeline parallelism (GPipe, `torch.distributed.pipelining`),
# with each stage's weights on chip and gradient accumulation as the micro-batch count
# ([the GPU bridge](../docs/coming-from-gpus.md#pipeline-parallelism)).

# %%
import matplotlib.pyplot as plt
import torch

from ipu_tutorials import poptorch, tutorial
from ipu_tutorials.tutorial.datasets import load_mnist
from ipu_tutorials.tutorial.models import Network, TrainingModelWithLoss

_ = torch.manual_seed(0)  # the same numbers on every run

# %% [markdown]
# `Network` is lesson 3's model with blocks `B1` to `B4`; `TrainingModelWithLoss` adds the
# cross-entropy loss in block `B4` and returns `(output, loss)`, as PopTorch training models
# must.
#
# ## One call, many micro-batches
#
# A pipeline needs several micro-batches in flight, so a training call does not process one
# batch: it runs `deviceIterations` weight updates, and each update accumulates the gradients of
# `gradientAccumulation` micro-batches. Every call therefore consumes
# `micro-batch x deviceIterations x gradientAccumulation x replicationFactor` samples: the
# combined batch size, which `poptorch.DataLoader` uses as its
# batch.<!-- claim: L02-combined-batch --> As in Graphcore's tutorial, the loader runs in
# `DataLoaderMode.Async` and prepares the next call's data in the background while the IPUs
# work: PopTorch in a separate worker process, the simulator on a thread (lesson 2 shows what
# that overlap is worth).<!-- claim: L04-async-loader -->

# %%
opts = poptorch.Options().deviceIterations(10)
opts.Training.gradientAccumulation(10)
opts.setExecutionStrategy(poptorch.PipelinedExecution("B1", "B2", "B3", "B4"))

train_set = load_mnist(train=True, source="embedded")
training_data = poptorch.DataLoader(opts, train_set, batch_size=40, shuffle=True,
                                    mode=poptorch.DataLoaderMode.Async)
print(f"{train_set}: combined batch size {training_data.combinedBatchSize}, "
      f"{len(training_data)} call(s) per epoch")

# %% [markdown]
# The data are real MNIST digits shipped inside the package (the cell above prints how many
# and the calls they make), so the lesson needs no download. Full MNIST works the same way
# with `source="mnist"`.
#
# ## The pipeline's clock
#
# A pipeline moves in clock cycles. In cycle k, stage s works on micro-batch k - s, if there is
# one: micro-batch 0 enters stage 0 in cycle 0 and moves one stage on per cycle, and each
# micro-batch follows one cycle behind the one before it. The simulator builds its schedule on
# this one function, which lists the (micro-batch, stage) pairs of every cycle:

# %%
# show: ipu_tutorials.simulator.schedule.clock_cycles

# %% [markdown]
# Here it is for 4 micro-batches on 4 IPUs, one stage each, with only forward passes: a row per
# IPU, a column per cycle, `F2` meaning the forward pass of micro-batch 2.

# %%
ipus, micro_batches = 4, 4
cycles = clock_cycles(micro_batches, ipus)
for ipu in range(ipus):
    cells = [next((f"F{m}" for m, stage in cycle if stage == ipu), ". ") for cycle in cycles]
    print(f"IPU {ipu}  " + "  ".join(cells))
full = sum(len(cycle) == ipus for cycle in cycles)
print(f"{len(cycles)} cycles (M + S - 1); every IPU busy in {full} of them")

# %% [markdown]
# The staircase fills the pipeline one IPU per cycle and drains it the same way; only the
# cycles in between keep every IPU busy. More micro-batches lengthen that middle part, while
# the fill and the drain stay as long as they are.
#
# ## The schedule of one step
#
# Training runs the same clock over more stages. On N = 4 IPUs it has 2N-1 = 7 pipeline
# stages: forward on IPUs 0 to 3, where the last forward runs together with the first
# backward, then backward on IPUs 2, 1 and 0.<!-- claim: L04-2n-1-stages --> In each cycle
# every pipeline stage works on a different micro-batch. The simulator compiles the model and
# prints one step as a grid, as above: a row per IPU, a column per cycle.
#
# The same staircase as a picture, drawn by `ipu_tutorials.profiling.diagrams` from the
# simulator's own schedule (4 IPUs, 8 micro-batches): the *fill* cycles start one more stage
# per cycle, the *main* cycles keep every IPU busy, the *drain* empties the pipeline.
#
# ![Diagram of one pipelined training step on 4 IPUs with 8 micro-batches: forward passes F0 to F7 step down from IPU 0 to IPU 3 in a staircase and backward passes B0 to B7 climb back; fill 6 cycles, main 2, drain (the flush) 6](../static/diagram_pipeline.png)

# %%
model = Network()
training_model = poptorch.trainingModel(
    TrainingModelWithLoss(model), opts, poptorch.optim.AdamW(model.parameters(), lr=0.001))
images, labels = next(iter(training_data))
training_model.compile(images, labels)
print(training_model.plan.grid())  # simulator extra; on IPUs: a PopVision System Analyser trace

# %% [markdown]
# Reading down a column shows the IPUs at work in that cycle. The first 2N-2 = 6 cycles **fill**
# the pipeline, the last 6 **flush** it, and in the **main** part in between every IPU has a
# forward and a backward to do. One step takes A + 2N - 2 cycles for A micro-batches (PopTorch's
# user guide calls fill and flush the "ramp-up" and
# "ramp-down"):<!-- claim: L04-fill-main-flush -->

# %%
from ipu_tutorials.simulator import pipeline_cycles

n, a = 4, opts.Training.gradient_accumulation
print(f"N = {n}, A = {a}: A + 2N - 2 = {a + 2 * n - 2} cycles; the schedule has "
      f"{len(pipeline_cycles(n, a, training=True))}")

# %% [markdown]
# The same step on a timeline, with the simulator's cost model supplying the durations.
# Forward passes are green, backward passes red; grey boxes are the copies between IPUs at the
# end of each cycle, purple the weight update after the flush, and the bar above marks the
# fill, main and flush.<!-- claim: L04-cycle-copies --> The axis starts where the step does:
# before it the host synchronises with the device and hands the whole call's inputs over,
# which takes far longer than the step itself; the note under the figure gives both times,
# and the host row shows the step's own input transfer.

# %%
report = training_model.report()  # simulator extra; on IPUs: POPLAR_ENGINE_OPTIONS autoReport
# alt: Timeline of one pipelined training step on IPUs 0 to 3, one row each, and the host: the
#   micro-batches' forward and backward passes move from IPU to IPU in a staircase, the pipeline
#   filling, running with every IPU busy, then flushing, and each IPU ends the step with its weight
#   update.
report.plot_timeline(steps=1)
plt.show()

# %% [markdown]
# Graphcore's tutorial draws the start of this schedule with forward and backward passes in
# separate columns, and reads "full utilisation after 2N+1 steps" off it (9 for N =
# 4).<!-- claim: L04-tutorial-2n-plus-1 --> Both pictures show the same thing: all IPUs are busy
# only once the first micro-batch has gone all the way forward and started back.
#
# ## Utilisation grows with gradient accumulation
#
# Fill and flush cost 2N-2 cycles whatever A is, so the more micro-batches a step holds, the
# smaller their share. GPipe's formula for the idle fraction of P stages and M micro-batches
# is (P-1)/(M+P-1).<!-- claim: L04-gpipe-bubble --> Compiling only needs shapes, so we can
# try several values quickly:

# %%
def plan_for(accumulation, strategy=poptorch.PipelinedExecution("B1", "B2", "B3", "B4")):
    """The tutorial's options (D 10, OutputMode.All) with another accumulation or strategy."""
    from ipu_tutorials.classroom.plans import lesson_plan
    return lesson_plan(strategy, accumulation=accumulation)


print(" A   cycles  device utilisation  device throughput  fed by the host (samples/s)")
for accumulation in (7, 10, 20, 40, 80):
    plan = plan_for(accumulation)
    busy = sum(plan.timeline.busy(ipu) for ipu in range(4)) / (4 * plan.device_seconds)
    print(f"{accumulation:>2}  {accumulation + 6:>6}  {busy:>17.0%}  "
          f"{plan.device_samples_per_second:>17,.0f}  {plan.samples_per_second:>15,.0f}")

# %% [markdown]
# How far to trust a simulated throughput: on eleven published Graphcore runs it was not
# calibrated on, the simulator lands between 0.80x and 1.56x of the published figure, nine
# of them within 1.25x (docs/cost-model.md, "Validation against runs it was not calibrated on").

# %% [markdown]
# Device utilisation (the time the IPUs compute, over the time the IPUs and the host link
# take) rises with A but stays well below 100%: this model's stages are small and unequal,
# and every cycle also pays for the copies between IPUs. The last column is what a training
# loop would see: the host prepares each image (at a cost per image calibrated on Graphcore's
# published run of this tutorial), so this small model is bound by the host whatever A is;
# lesson 5 shows the host-against-IPU breakdown per step.
#
# ## The slowest stage sets the pace
#
# A cycle ends when its slowest IPU finishes. The plan holds each stage's simulated time for one
# micro-batch; the backward includes recomputing the forward, which PopTorch turns on by default
# for a pipeline over several IPUs, to save memory (lesson
# 7).<!-- claim: L07-recompute-default -->

# %%
plan = training_model.plan  # simulator extra
for stage, cost in zip(plan.placement.stages, plan.stage_costs):
    print(f"stage {stage.index} on IPU {stage.ipu} ({', '.join(stage.blocks)}): forward "
          f"{cost.forward * 1e6:5.1f} µs, backward {cost.backward * 1e6:5.1f} µs, "
          f"{cost.flops / 1e6:6.2f} MFLOP")

# %% [markdown]
# On two IPUs the choice of where to cut matters. Here are the three ways to split four
# blocks in order:

# %%
stage = poptorch.Stage
times = {}
for first, second in ((["B1"], ["B2", "B3", "B4"]), (["B1", "B2"], ["B3", "B4"]),
                      (["B1", "B2", "B3"], ["B4"])):
    split = poptorch.PipelinedExecution(stage(*first).ipu(0), stage(*second).ipu(1))
    name = f"{'+'.join(first)} | {'+'.join(second)}"
    times[name] = plan_for(10, split).device_seconds / 10  # a call holds 10 steps
    print(f"{name:>17}  {times[name] * 1e6:6.1f} µs per step on the IPUs")
print("fastest:", min(times, key=times.get))

# %% [markdown]
# The cut between `B2` and `B3` is fastest: it leaves the two IPUs with the most similar work.
# Moving blocks between stages is how you balance a real pipeline too; Graphcore's tutorial
# points to the PopVision execution trace to find unbalanced
# stages.<!-- claim: L04-popvision-imbalance -->
#
# ## Training with OutputMode.All
#
# By default a training call returns only the last micro-batch's outputs
# (`OutputMode.Final`).<!-- claim: L02-output-defaults --> To compute the accuracy over every
# image, the tutorial asks for all of them, at the cost of more data sent back to the
# host.<!-- claim: L04-tutorial-output-all -->

# %%
opts = opts.clone().outputMode(poptorch.OutputMode.All)
model = Network()
training_model = poptorch.trainingModel(
    TrainingModelWithLoss(model), opts, poptorch.optim.AdamW(model.parameters(), lr=0.001))
training_data = poptorch.DataLoader(opts, train_set, batch_size=40, shuffle=True,
                                    mode=poptorch.DataLoaderMode.Async)
preds, losses = training_model(*next(iter(training_data)))
print(f"predictions {tuple(preds.shape)}, losses {tuple(losses.shape)}: one loss per micro-batch")

# %% [markdown]
# Now the tutorial's loop, for six epochs (about half a second each on a laptop). The
# simulated throughput is what four GC200 IPUs fed by one host process would sustain.

# %%
history = tutorial.train(training_model, training_data, epochs=6, progress=False)

# %%
test_set = load_mnist(train=False, source="embedded")
inference_opts = tutorial.inference_options(opts, device_iterations=25)
inference_model = poptorch.inferenceModel(model, inference_opts)
test_data = poptorch.DataLoader(inference_opts, test_set, batch_size=8)
print(f"Accuracy on test set: {tutorial.test(inference_model, test_data, progress=False):.1f}%")
plan = training_model.plan  # simulator extra
print(f"Simulated training throughput: {plan.samples_per_second:,.0f} images/s")
print(plan.breakdown_text())

# %% [markdown]
# The inference model reuses the training options with gradient accumulation 1, as PopTorch
# requires<!-- claim: L04-inference-accumulation -->, and more device iterations to keep its own
# pipeline full (a pipelined inference model needs at least as many as it has
# stages).<!-- claim: L04-inference-device-iterations --> It picks up the trained weights by
# itself: PopTorch keeps the host model and the device copies in
# sync.<!-- claim: L01-implicit-copies -->
#
# The throughput is bound by the host. Graphcore's published run of this tutorial trained at
# about 15 calls of 4,000 images per second (about 60,000 images/s, some 66 ms a call), while
# the PopVision trace the tutorial shows puts one pipeline cycle at about 47 µs: the IPUs' share
# of a call is a few milliseconds, so the host set the pace there
# too.<!-- claim: L04-published-run --> The calibration table of
# [docs/cost-model.md](../docs/cost-model.md) compares the simulator with that run.
#
# ## Explore the pipeline
#
# Change the number of IPUs, the gradient accumulation, the device iterations, how much extra
# work one stage has, and the strategy. The explorer uses its own model, not the tutorial's
# network: a stack of 512-wide linear layers per IPU, heavy enough that the IPUs' work shows,
# so its figures differ from the ones above. Try gradient accumulation below 2N-1, and an imbalance
# of 1 or more.

# %%
from ipu_tutorials.classroom import pipeline_explorer

# alt: Timeline of one pipelined step on 4 IPUs with 8 micro-batches: forward passes fill the
#   pipeline in a staircase from IPU 0 to IPU 3, the backward passes of micro-batches 0 to 7 follow
#   on every IPU, and a weight update ends the step; rows below show the host's I/O and the host
#   preparing the data before the IPUs start.
pipeline_explorer(ipus=4, accumulation=8)

# %% [markdown]
# ## What a real IPU would do, and where the simulator differs
#
# PopART builds the same 2N-1-stage schedule: in every cycle each active stage does its work,
# and then all the copies between IPUs run.<!-- claim: L04-cycle-copies --> The simulator
# reproduces that structure, but its durations
# come from a cost model: matmuls and convolutions at a fixed fraction of peak arithmetic
# (calibrated on a published BERT-Large figure), a fixed cost per compute step, and link and
# host transfers at their published bandwidths with fixed latencies. Host transfers do not
# overlap compute here, and nothing contends for links, so absolute times are estimates;
# the shape of the schedule and the comparisons between options are what to take away.
#
# **On a Bow Pod.** The schedule is the same; each stage computes faster (a Bow-2000's four
# IPUs give 1.4 petaFLOPS of FP16.16, about 350 TFLOPS each, against a GC200's 250), so the
# host's share of a call grows.<!-- claim: L04-bow-peak -->
#
# ## Exercises

# %%
from ipu_tutorials.classroom.exercises import pipelining as exercises

# %% [markdown]
# ### Exercise 4.1: the smallest gradient accumulation
#
# What is the smallest `gradientAccumulation` PopTorch accepts for training pipelined over 4
# IPUs?

# %% tags=["answer"]
# starting code: exercises.smallest_accumulation.starting_code

# %%
exercises.smallest_accumulation.check(my_accumulation)

# %% [markdown]
# ### Exercise 4.2: images per call
#
# With a micro-batch of 40, `deviceIterations(10)`, `gradientAccumulation(10)` and
# `replicationFactor(2)`, how many images does one call of the training model consume?

# %% tags=["answer"]
# starting code: exercises.combined_batch.starting_code

# %%
exercises.combined_batch.check(my_images_per_call)

# %% [markdown]
# ### Exercise 4.3: balance the pipeline
#
# Write a two-stage `PipelinedExecution` (IPUs 0 and 1) for the network that gives the
# shortest simulated step. The check compiles your split and compares it with the best.

# %% tags=["answer"]
# starting code: exercises.balance_two_ipus.starting_code

# %%
exercises.balance_two_ipus.check(my_split)

# %% [markdown]
# ## Summary
#
# - Pipelined training on N IPUs runs 2N-1 pipeline stages; a step of A micro-batches takes A +
#   2N - 2 cycles: fill, main and flush. PopTorch needs A >=
#   2N-1.<!-- claim: L04-accumulation-rule -->
# - One call consumes micro-batch x deviceIterations x gradientAccumulation x replicationFactor
#   samples; `poptorch.DataLoader` batches data that way.
# - More micro-batches per step shrink the fill and flush share; balanced stages shorten every
#   cycle.
# - `OutputMode.All` returns every micro-batch's outputs; the default returns the last.
#
# **Next:** lesson 5 (sharding) runs the same model one IPU at a time with `ShardedExecution`.
#
# ## References
#
# - PopTorch user guide (SDK 3.4), "Multi-IPU execution strategies", "Pipelined execution", and
#   "Efficient data batching" (gradient accumulation, device iterations):
#   https://docs.graphcore.ai/projects/poptorch-user-guide/en/latest/overview.html and
#   https://docs.graphcore.ai/projects/poptorch-user-guide/en/latest/batching.html
# - Graphcore tutorial "PopTorch Parallel Execution Using Pipelining" (the published run of this
#   lesson's model): graphcore/examples (https://github.com/graphcore/examples),
#   `tutorials/tutorials/pytorch/pipelining`.
# - Y. Huang et al., "GPipe: Efficient Training of Giant Neural Networks using Pipeline
#   Parallelism", NeurIPS 2019 (arXiv:1811.06965): the bubble fraction (P-1)/(M+P-1).
# - Coming from GPUs: [docs/coming-from-gpus.md](../docs/coming-from-gpus.md).