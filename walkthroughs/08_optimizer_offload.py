# %% [markdown]
# # Lesson 8: Optimizer state offload
#
# An IPU keeps everything it works on in its own SRAM, spread over its tiles (the first cell
# prints how much a GC200 has).<!-- claim: L08-gc200-memory --> When a model's weights,
# gradients, optimizer state and activations do not fit, the compiler fails. This lesson
# reads the simulator's per-IPU memory plan, plans a model far larger than your laptop could
# run, and fits it by moving the optimizer state to streaming memory, then shows what that
# costs in time.
#
# **What you will learn**
# - what each IPU's memory holds: code, weights, gradient accumulators, optimizer state,
#   activations, the pipeline stash, exchange buffers and temporaries;
# - how to plan a large model on meta tensors, without its weights;
# - how `TensorLocations.setOptimizerLocation` moves optimizer state off chip, and what the
#   weight update pays for it;
# - replicated tensor sharding, the next step.
#
# **Time:** about 50 minutes.
#
# **Prerequisites:** lessons 3 and 4.
#
# **Coming from GPUs:** optimizer offload is ZeRO-Offload; replicated tensor sharding of the
# optimizer state, as this lesson sets it, is ZeRO stage 1 (PopTorch can shard the weights
# too) ([the GPU bridge](../docs/coming-from-gpus.md#replication-and-sharded-state)).

# %%
import matplotlib.pyplot as plt
import torch

import ipu_tutorials
from ipu_tutorials import poptorch, tutorial
from ipu_tutorials.classroom.explorers.memory import even_split
from ipu_tutorials.tutorial.models import Network, TrainingModelWithLoss, TransformerLM, split_layers
from ipu_tutorials.profiling import Report, plot_memory
from ipu_tutorials.simulator import format_bytes

_ = torch.manual_seed(0)  # the same numbers on every run
print("Simulated system:", ipu_tutorials.default_system().describe())

# %% [markdown]
# ## What fills an IPU
#
# Compile the tutorial network for pipelined training and print its memory plan: one row per
# IPU, one column per kind of memory. (The picture below is the same plan for IPU 0 of a small
# pipelined transformer, drawn by `ipu_tutorials.profiling.diagrams`.)
#
# ![One bar of IPU 0's memory for a pipelined transformer, 218.6 MiB of 897.0 MiB, split into code, weights, gradients, optimizer state, activations, stash, exchange and temporaries; the optimizer state is the largest part](../static/diagram_memory.png)

# %%
opts = tutorial.training_options("pipelined", device_iterations=1, gradient_accumulation=10)
model = Network()
training_model = poptorch.trainingModel(
    TrainingModelWithLoss(model), opts, poptorch.optim.AdamW(model.parameters()))
training_model.compile(torch.randn(400, 1, 28, 28), torch.randint(0, 10, (400,)))
print(training_model.plan.memory.table())  # simulator extra; on IPUs: PopVision Graph Analyser

# %% [markdown]
# - **code**: the compiled program of each IPU, always resident (an estimate: no public figure
#   gives its size);
# - **weights**, **gradients** (the accumulators that sum micro-batch gradients) and
#   **optimizer** state: AdamW keeps two float32 moments per weight, so twice the
#   weights;<!-- claim: L08-adamw-state -->
# - **activations** kept for the backward pass, and the pipeline **stash**: the first IPU holds
#   its inputs for 2N-1 = 7 micro-batches until their backward comes back, the last for one;
# - **exchange** buffers for data crossing to other IPUs and the host, and **temporaries**, the
#   working memory of the largest matmul or convolution.
#
# This network is tiny. The interesting case is a model that does not fit.
#
# ## Planning a model larger than your laptop
#
# A transformer of GPT-2-small size, 12 layers of width 768, built on PyTorch's meta device:
# its parameters have shapes but no storage, so it takes no memory to build, and the simulator
# plans it from shapes alone. `split_layers` annotates its layers with `BeginBlock`, three per
# IPU over four IPUs.

# %%
def transformer(half=False):
    with torch.device("meta"):
        lm = TransformerLM(width=768, depth=12, heads=12, recompute_checkpoint_every_layer=True)
    lm = lm.half() if half else lm
    return split_layers(lm, even_split(12, 4))


def plan_transformer(offload=False, half=False, replicas=1, sharded_state=False):
    lm = transformer(half)
    opts = poptorch.Options().replicationFactor(replicas).showCompilationProgressBar(False)
    opts.Training.gradientAccumulation(32)
    location = poptorch.TensorLocationSettings().useOnChipStorage(not offload)
    if sharded_state:
        location.useReplicatedTensorSharding(True)
    opts.TensorLocations.setOptimizerLocation(location)
    accum = torch.float16 if half else torch.float32
    lm_model = poptorch.trainingModel(lm, opts, poptorch.optim.AdamW(lm.parameters(), accum_type=accum))
    tokens = torch.zeros(4 * 32 * replicas, 128, dtype=torch.long, device="meta")
    lm_model.compile(tokens, tokens)
    return lm_model.plan  # simulator extra


print(f"{sum(p.numel() for p in transformer().parameters()) / 1e6:.0f}M parameters, "
      f"micro-batch 4 x 128 tokens")

# %% [markdown]
# ## Out of memory on chip
#
# In float32 with AdamW's state on chip the plan does not fit, and compiling fails, as
# PopTorch's compile fails when a tile runs out of memory (an error of the C++ backend, raised
# as `poptorch.Error`),<!-- claim: L08-oom-error --> here with the simulator's whole plan in
# the message:

# %%
try:
    plan_transformer()
except poptorch.OutOfMemoryError as error:  # simulator extra; on IPUs: poptorch.Error
    print(error)
    failed = error.plan  # simulator extra: the plan it failed on

# %% [markdown]
# The error carries the plan, so it can be drawn: the dashed line is each IPU's capacity.

# %%
# alt: Stacked horizontal bars of memory on IPUs 0 to 3 in float32 with the AdamW state on chip:
#   the optimizer state is the largest part on every IPU, and IPUs 0 and 3 pass the 897 MiB
#   capacity line, marked out of memory.
plot_memory(failed.ipus, title="float32, AdamW state on chip")
plt.show()

# %% [markdown]
# ## Fitting with TensorLocations
#
# AdamW's moments are only needed during the weight update. PopTorch can keep them in streaming
# memory (DRAM attached to the IPU-Machine's gateway, up to 256 GB per
# machine)<!-- claim: L08-streaming-memory --> and stream them in for the update and back out
# after it:<!-- claim: L08-optimizer-location -->
#
# ```python
# opts.TensorLocations.setOptimizerLocation(
#     poptorch.TensorLocationSettings().useOnChipStorage(False))
# ```

# %%
offloaded = plan_transformer(offload=True)
for before, after in zip(failed.ipus, offloaded.memory.ipus):
    print(f"IPU {before.ipu}: {format_bytes(before.total):>10} -> {format_bytes(after.total):>10}"
          f"  (optimizer state {format_bytes(before.optimizer)} now off chip: "
          f"{format_bytes(after.off_chip['optimizer'])})")

# %%
# alt: The same memory bars with the AdamW state off chip: the optimizer part is gone and every IPU
#   is under the 897 MiB capacity line.
plot_memory(offloaded.memory.ipus, title="float32, AdamW state off chip")
plt.show()

# %% [markdown]
# Every IPU loses exactly its optimizer bytes, and the model fits.
#
# ## What offloading costs
#
# Streaming memory is far slower than SRAM. No public figure gives its bandwidth, so the
# simulator assumes one, printed below (`System.streaming_bandwidth`): an assumption of ours,
# not a measurement, so read the time it costs as an
# estimate.<!-- claim: L08-streaming-bandwidth --> The state streams in before the update and
# back out after it, and the step waits. To compare like with like, both plans below use float16
# weights, which fit either way.

# %%
on_chip = plan_transformer(half=True)
off_chip = plan_transformer(offload=True, half=True)
for name, plan in (("on chip", on_chip), ("off chip", off_chip)):
    streams = plan.timeline.of_kind("stream")
    streamed = max((e.duration for e in streams), default=0.0)
    print(f"state {name:>8}: step {plan.call_seconds * 1e3:6.1f} ms, "
          f"each stream {streamed * 1e3:5.1f} ms, {plan.samples_per_second:5.0f} sequences/s")
print(f"assumed streaming bandwidth: {off_chip.spec.system.streaming_bandwidth / 1e9:.0f} GB/s "
      f"per direction per IPU")  # simulator extra

# %% [markdown]
# How far to trust a simulated throughput: on eleven published Graphcore runs it was not
# calibrated on, the simulator lands between 0.80x and 1.56x of the published figure, nine
# of them within 1.25x (docs/cost-model.md, "Validation against runs it was not calibrated on").

# %% [markdown]
# On the timeline the transfers (orange) bracket the weight update after the pipeline's
# flush. The update itself is a purple sliver between them, too short to see at this scale:

# %%
update = max(e.duration for e in off_chip.timeline.of_kind("update"))
print(f"weight update {update * 1e3:.2f} ms, against {streamed * 1e3:.1f} ms for each stream")
# alt: Timeline of one training step on IPUs 0 to 3 with the optimizer state in streaming memory:
#   the pipelined forward and backward passes take most of the step, then each IPU streams its
#   optimizer state in and out for the weight update, IPUs 0 and 3 (the most weights) for longest.
Report.from_plan(off_chip).plot_timeline(label_micro_batches=False)
plt.show()

# %% [markdown]
# Whether the cost matters depends on how often the update runs: with more gradient
# accumulation each update serves more micro-batches, and the transfers weigh less.
#
# ## The next step: replicated tensor sharding
#
# With data-parallel replicas, every replica holds the same optimizer state. Replicated tensor
# sharding splits a tensor that is the same on every replica across the replicas instead;
# PopTorch offers it for the weights and the optimizer state, each in its own location
# setting. Set on the optimizer state (`setOptimizerLocation(TensorLocationSettings()
# .useReplicatedTensorSharding(True))`), each replica keeps 1/R of the state, and with the
# state off chip each streams 1/R of it<!-- claim: L08-rts --> (below: a small transformer
# on 4 replicas, from its compiled memory plans; PopART leaves tensors under 8,192 elements
# whole, which the simulator does only when asked, as lesson 16 shows).
#
# ![Memory per replica for 4 replicas: without sharding each holds its weights on chip and a full copy of the optimizer state off chip, 74.8 MiB; with replicated tensor sharding each holds a quarter of it, 18.7 MiB](../static/diagram_replication.png)
#
# Both rows below are float32 weights
# on 2 replicas, so compare them with each other, not with the float16 single-replica plans
# above.

# %%
for sharded_state in (False, True):
    plan = plan_transformer(offload=True, replicas=2, sharded_state=sharded_state)
    worst = max(plan.memory.ipus, key=lambda m: m.off_chip.get("optimizer", 0))
    stream = max(e.duration for e in plan.timeline.of_kind("stream"))
    print(f"sharding {'on ' if sharded_state else 'off'}: optimizer state per IPU "
          f"{format_bytes(worst.off_chip['optimizer'])}, stream {stream * 1e3:.1f} ms, "
          f"{plan.samples_per_second:.0f} sequences/s on {plan.placement.ipus_acquired} IPUs "
          f"(float32, 2 replicas)")

# %% [markdown]
# ## Explore the memory plan
#
# Pick a model size, the IPUs, the optimizer, and the two switches of this lesson and the
# next. SGD without momentum keeps no state at all; LAMB keeps as much as AdamW.

# %%
from ipu_tutorials.classroom import memory_planner

# alt: Stacked bars of memory on IPUs 0 to 7 for a 0.78B-parameter model in float16 with the AdamW
#   state off chip: mostly weights and gradients, and every IPU under the 897 MiB capacity line,
#   IPUs 0 and 7 the fullest.
memory_planner(size="760M", ipus=8, optimizer="AdamW", offload=True, half=True)

# %% [markdown]
# ## What a real IPU would do, and where the simulator differs
#
# Poplar's memory report distinguishes always-live from not-always-live memory and shows the
# peak per tile; running out on a single tile fails the whole
# compile.<!-- claim: L08-memory-report --> The simulator adds the categories up per IPU, an
# upper bound that ignores how memory is spread over tiles, and it estimates code and exchange
# sizes. It streams offloaded state through memory the activations leave free during the update,
# and assumes a streaming bandwidth for which no reliable public figure exists. Use it to
# compare configurations and to learn which knob moves which bar, then confirm on hardware with
# PopVision.
#
# **On a Bow Pod.** On-chip memory per IPU is the same (a Bow-2000's four IPUs have 3.6 GB of
# In-Processor-Memory); its streaming memory (up to 256 GB per four IPUs) holds the offloaded
# state,<!-- claim: L08-bow-memory --> and replicated tensor sharding across a Bow Pod16's
# replicas divides it as shown.
#
# ## Exercises

# %%
from ipu_tutorials.classroom.exercises import offload as exercises

# %% [markdown]
# ### Exercise 8.1: AdamW's state
#
# How many bytes of optimizer state does AdamW keep for the tutorial `Network` in float32?

# %% tags=["answer"]
# starting code: exercises.adamw_state_bytes.starting_code

# %%
exercises.adamw_state_bytes.check(my_state_bytes)

# %% [markdown]
# ### Exercise 8.2: fit 1.3B parameters on 16 IPUs
#
# Use the memory planner (model "1.3B", 16 IPUs, AdamW) to find which switches make every IPU
# fit, then check your choice.

# %% tags=["answer"]
# starting code: exercises.make_it_fit.starting_code

# %%
exercises.make_it_fit.check(offload=my_offload, half=my_half)

# %% [markdown]
# ### Exercise 8.3: options that fit 1.3B on 16 IPUs
#
# Now write the options yourself. The check builds the planner's 1.3B transformer in float16,
# split evenly over 16 IPUs, and compiles its training (AdamW, micro-batch 4) with your
# `poptorch.Options`. Set a gradient accumulation the 16-IPU pipeline accepts and put the
# optimizer state where it fits.

# %% tags=["answer"]
# starting code: exercises.offload_options.starting_code

# %%
exercises.offload_options.check(my_options)

# %% [markdown]
# ## Summary
#
# - Each IPU holds code, weights, gradient accumulators, optimizer state, activations, the
#   pipeline stash, exchange buffers and temporaries; the simulator's plan shows each.
# - Models built on the meta device are planned from shapes alone, however large.
# - `setOptimizerLocation(TensorLocationSettings().useOnChipStorage(False))` removes exactly the
#   optimizer state from every IPU, and makes each weight update stream it in and out.
# - Replicated tensor sharding divides that state, and its streaming, by the replicas.
# - Offloading and float16 together fit a 1.3B-parameter model on 16 IPUs; the pipeline still
#   needs its 2N-1 micro-batches per update.
#
# **Next:** lesson 9 (half precision) halves weights and gradients with float16, and keeps the
# small gradients alive.
#
# ## References
#
# - PopTorch user guide (SDK 3.4), "Options" (`opts.TensorLocations`, `TensorLocationSettings`):
#   https://docs.graphcore.ai/projects/poptorch-user-guide/en/latest/overview.html and
#   https://docs.graphcore.ai/projects/poptorch-user-guide/en/latest/reference.html
# - Memory and performance optimisation guide, "Variable offloading" and "Replicated tensor
#   sharding": https://docs.graphcore.ai/projects/memory-performance-optimisation/en/latest/
# - Bow-2000 datasheet (streaming and In-Processor-Memory):
#   https://docs.graphcore.ai/projects/bow-2000-datasheet/en/latest/overview.html
# - S. Rajbhandari et al., "ZeRO: Memory Optimizations Toward Training Trillion Parameter
#   Models", SC 2020 (arXiv:1910.02054): the GPU counterpart of replicated tensor sharding.
# - Coming from GPUs: [docs/coming-from-gpus.md](../docs/coming-from-gpus.md).