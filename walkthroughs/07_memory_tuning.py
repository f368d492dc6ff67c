# %% [markdown]
# # Lesson 7: Memory tuning
#
# A model that does not fit has more ways out than more IPUs or offloading. The backward pass
# can recompute activations instead of keeping them; a matmul can be told how much temporary
# memory it may use, or be split into slices; a large embedding can be looked up slice by
# slice. Each moves memory somewhere else or trades it for time. This lesson takes a GPT-like
# language model that does not fit on 4 IPUs and fits it, with everything on chip.
#
# **What you will learn**
# - what recomputation does in a pipeline, `poptorch.recomputationCheckpoint`, and
#   `opts._Popart.set("autoRecomputation", ...)`;
# - `opts.setAvailableMemoryProportion({"IPU0": ...})` and `poptorch.set_available_memory`:
#   temporary memory against matmul speed;
# - `poptorch.serializedMatMul` with `poptorch.MatMulSerializationMode`;
# - embedding serialisation (optimum-graphcore's `SerializedEmbedding`,
#   `embedding_serialization_factor`);
# - how to read a memory plan to decide which tool to use, and on which IPU.
#
# **Time:** about 45 minutes.
#
# **Prerequisites:** lesson 3 (blocks and the memory plan), lesson 4 (pipelining: the
# 2N-1 pipeline stages and their schedule).
#
# **Coming from GPUs:** recomputation is activation checkpointing (`torch.utils.checkpoint`), on
# by default in PopTorch pipelines ([the GPU
# bridge](../docs/coming-from-gpus.md)).<!-- claim: L07-recompute-default -->

# %%
import torch

from ipu_tutorials import poptorch
from ipu_tutorials.classroom.explorers import memory_tuning
from ipu_tutorials.classroom.explorers.memory_tuning import build_model, starting_options, tune
from ipu_tutorials.simulator.units import format_bytes

torch.manual_seed(0)
model = build_model()
print(f"{sum(p.numel() for p in model.parameters()) / 1e6:.0f}M parameters: "
      f"{memory_tuning.DEPTH} layers of width {memory_tuning.WIDTH}, vocabulary "
      f"{memory_tuning.VOCAB:,}, context {memory_tuning.CONTEXT}")
print(f"micro-batch {memory_tuning.MICRO_BATCH}, gradientAccumulation "
      f"{memory_tuning.ACCUMULATION}, {memory_tuning.IPUS} IPUs pipelined, float16, SGD with "
      f"momentum, everything on chip")

# %% [markdown]
# ## The starting point
#
# `build_model()` builds the model on the meta device (shapes, no storage) and places two
# layers per IPU with `BeginBlock`; the embedding joins IPU 0 and the vocabulary projection
# and loss the last IPU. `tune()` compiles it with `poptorch.trainingModel` and keeps the
# plan, or the memory plan of the out-of-memory error.

# %%
start = tune("pipeline default")
print(start.memory.table())

# %% [markdown]
# The last IPU is far over: the projection onto the vocabulary writes a logit for every
# token and every word, and the loss after it keeps several tensors of that size. The table
# says which part to attack on each IPU: **activations** and **stash** (what the backward pass
# needs), **temporaries** (what the largest op needs while it runs).
#
# ## Recomputation
#
# A pipelined backward pass needs each micro-batch's forward activations. In a pipeline over N
# IPUs, a micro-batch leaves stage s (counted from 0) and comes back to it for its backward
# 2(N-1-s) cycles later, one more micro-batch entering the stage each cycle: so stage s has
# 2(N-1-s)+1 micro-batches in flight, 7 on the first of four IPUs and 1 on the last, where
# forward and backward run in the same cycle. PopART sizes its stashes by the same count
# ("2*(IPUs to end) + 1", the last IPU stashing nothing); lesson 8 draws
# it.<!-- claim: L07-stash-depth --> Keeping all their activations is what `autoRecomputation` 0
# does. PopTorch's default for a pipeline is different: it keeps (stashes) only each stage's
# inputs and recomputes the stage's forward pass just before its backward
# pass.<!-- claim: L07-pipeline-recompute --> Compare the three settings:

# %%
settings = ["off (autoRecomputation 0)", "pipeline default", "checkpoint every layer"]
for setting in settings:
    memory = tune(setting).memory
    print(f"{setting:>26}: " + ", ".join(
        f"IPU {m.ipu} {format_bytes(m.activations + m.stash)}" for m in memory))
print("(activations + stash per IPU)")
off, default = tune(settings[0]).memory[0], tune(settings[1]).memory[0]
print(f"IPU 0 without recomputation: {off.activations / default.activations:.0f}x the "
      f"default's activations, one copy per micro-batch in flight")

# %% [markdown]
# Turning recomputation off multiplies the first IPU's activations by its micro-batches in
# flight (the cell above shows the factor); the last IPU has a single micro-batch in flight,
# so there it changes nothing. The default recomputes each stage from its inputs, but then
# holds one micro-batch's activations of the *whole* stage during its backward pass.
# `poptorch.recomputationCheckpoint(x)` in `forward` cuts the stage into segments: the
# checkpointed tensors are stored between the forward and backward passes instead of being
# recomputed (the stash grows), and only one segment is rebuilt at a time (the activations
# shrink).<!-- claim: L07-checkpoint --> `build_model(checkpoints=True)` puts one after every
# layer:
#
# ```python
# for layer in self.layers:
#     x = poptorch.recomputationCheckpoint(layer(x))
# ```
#
# The price is time: the backward pass re-runs the forward pass first. PopTorch turns
# recomputation on by itself only for `PipelinedExecution` (the default strategy) over more
# than one IPU, and only when `autoRecomputation` is unset; on a single IPU, or sharded, it
# is off unless you ask for it with `opts._Popart.set("autoRecomputation", 1)` (PopART's
# `RecomputationType::Standard`; 4 is `RecomputeAll`).<!-- claim: L07-recompute-default -->
# Value 3, `Pipeline`, is the one PopTorch picks for pipelines, and PopART refuses it without
# one; so does the simulator.<!-- claim: L07-pipeline-needs-pipelining -->

# %%
checkpointed = tune("checkpoint every layer")
print(checkpointed.memory.table())
print(memory_tuning.describe(checkpointed))

# %% [markdown]
# With checkpoints the first three IPUs fit (the table above). The last is still over: its
# largest part is the activations of its last segment (the projection and the loss, after
# the last checkpoint), and next come the temporaries of the vocabulary projection.
#
# ## Available memory proportion
#
# A matmul's planner chooses how to spread the work over the tiles; faster plans want more
# temporary memory (rearranged inputs, partial sums). `availableMemoryProportion` is the
# proportion of the IPU's memory the PopLibs planner tries to keep an operation's temporary
# memory under (default 0.6); more of it generally means fewer cycles. It can be set per IPU,
# or for the op that made a tensor:<!-- claim: L07-available-memory -->
#
# ```python
# opts.setAvailableMemoryProportion({"IPU3": 0.2})
# x = poptorch.set_available_memory(self.head(x), 0.2)  # or for the one op that made x
# ```
#
# A lower proportion forces a slower plan. Sweep it with checkpoints in place:

# %%
for proportion in (0.6, 0.3, 0.2, 0.1):
    outcome = tune("checkpoint every layer", proportion)
    last = outcome.memory[3]
    step = f"step {outcome.step_ms:6.1f} ms" if outcome.fits else "out of memory"
    print(f"proportion {proportion}: IPU 3 temporaries "
          f"{format_bytes(last.temporaries):>10}, total "
          f"{format_bytes(last.total):>10}: {step}")

# %% [markdown]
# Below some proportion the model fits, but every matmul that wants more than the cap runs in
# pieces (here the vocabulary projection; at lower proportions the layers' matmuls too), so
# the step grows as the proportion falls. `poptorch.set_available_memory` sets it for the one
# op that made a tensor; the next tool changes that op itself.
#
# ## Serialised matmuls
#
# `poptorch.serializedMatMul(lhs, rhs, mode, factor)` computes one matmul as `factor` smaller
# ones, one after the other, to reduce the memory of the multiplication and its gradient.
# `MatMulSerializationMode.OutputChannels` slices the output columns (here: the vocabulary),
# `InputChannels` the rows, `ReducingDim` the summed
# dimension.<!-- claim: L07-serialized-matmul --> In the simulator each slice wants a
# `factor`-th of the temporaries, and the slices are concatenated.
# `build_model(head_serialization=8)` slices the vocabulary projection in 8:

# %%
serialised = tune("checkpoint every layer", 0.6, 8)
for name, outcome in (("whole projection", checkpointed), ("8 slices", serialised)):
    last = outcome.memory[3]
    step = f"step {outcome.step_ms:.1f} ms" if outcome.fits else "out of memory"
    print(f"{name:>16}: IPU 3 temporaries {format_bytes(last.temporaries)}, "
          f"activations {format_bytes(last.activations)}, "
          f"total {format_bytes(last.total)}: {step}")
ratio = tune("checkpoint every layer", 0.2).step_ms / serialised.step_ms
print(f"a proportion of 0.2 fits too, with a step {ratio:.2f}x as long")

# %% [markdown]
# The slices and their concatenation add activations, but the temporaries fall by more, and
# the model fits. Serialising only the op that needs it keeps every other matmul at full
# speed.
#
# ## Serialised embeddings
#
# An embedding lookup is cheap forward; its gradient is not: the backward pass scatters the
# gradient rows into a tensor the size of the whole table. optimum-graphcore's
# `SerializedEmbedding` (what `IPUConfig(embedding_serialization_factor=4)` puts in place of the
# model's `torch.nn.Embedding`) looks the table up in slices, one after another, to reduce the
# memory of the embedding's gradient, so each gradient is a slice's
# size:<!-- claim: L07-serialized-embedding -->

# %%
sliced = tune("checkpoint every layer", 0.6, 8, 4)
for name, outcome in (("whole table", serialised), ("4 slices", sliced)):
    first = outcome.memory[0]
    print(f"{name:>11}: lookup gradient {format_bytes(outcome.largest_lookup_gradient())}; IPU 0 "
          f"temporaries {format_bytes(first.temporaries)}, activations "
          f"{format_bytes(first.activations)}, total "
          f"{format_bytes(first.total)}")

# %% [markdown]
# Here the table's gradient is smaller than the largest matmul's temporaries on IPU 0, so
# slicing it does not lower the IPU's temporaries, and the masked slices add activations:
# serialise the embedding when its table is large against the layers' matmuls (a large
# vocabulary, a small batch), and read the plan first.
#
# ## The memory-tuning explorer
#
# Every combination, compiled on demand: recomputation, the proportion, and the two
# serialisation factors. The bars are the simulator's memory plan per IPU; the text gives the
# fullest IPU, its largest part, and the simulated step.

# %%
from ipu_tutorials.classroom.explorers.memory_tuning import memory_tuning_explorer

# alt: Stacked horizontal bars of memory on IPUs 0 to 3 (code, weights, gradients, optimizer,
#   activations, stash, exchange, temporaries) against the 897 MiB capacity line: every IPU fits;
#   IPU 3, the fullest, ends just under the line, most of it activations.
memory_tuning_explorer("checkpoint every layer", 0.6, head_serialization=8)

# %% [markdown]
# ## What a real IPU would do
#
# - **Recomputation.** PopTorch sets `autoRecomputation` to `Pipeline` when the model runs under
#   `PipelinedExecution` on more than one IPU and the option is unset; PopART then recomputes
#   each stage from its stashed inputs and checkpoints.<!-- claim: L07-recompute-default -->
#   PopART has other modes (`Standard` picks its own checkpoints, `NormOnly` recomputes only
#   normalisations);<!-- claim: L07-recompute-modes --> the simulator treats every non-zero mode
#   as "recompute every segment", and counts a segment's activations as the sum of all its ops'
#   outputs, an upper bound (it does not track when each tensor dies).
# - **Available memory proportion.** The real planner picks among discrete plans, so memory and
#   cycles change in steps; the simulator caps the temporaries and stretches the op's time by
#   how much it wanted over the cap. PopTorch applies it to convolutions, matmuls, embedding
#   lookups and indexing operations; the simulator caps only matmuls and
#   convolutions.<!-- claim: L07-available-memory -->
# - **Serialisation.** PopLibs' planner decides how each slice is spread over the tiles, so the
#   exact saving depends on tile mapping, which only the real compiler and PopVision Graph
#   Analyser show. The simulator's temporaries are its own estimate (inputs plus float32 partial
#   sums), not a measured figure.
# - **What to do on real hardware:** compile with
#   `POPLAR_ENGINE_OPTIONS= '{"autoReport.all":"true"}'` and open the report in PopVision Graph
#   Analyser, whose memory report goes down to each tile: an IPU can fail on one overfull tile
#   while its total looks fine.<!-- claim: L07-autoreport -->
#
# **On a Bow Pod.** Tiles and their memory are the GC200's<!-- claim: L01-bow-chip -->, so
# memory plans, available memory proportions and recomputation choices carry over unchanged.
#
# ## Summary
#
# - Read the plan first: the fullest IPU and its largest part decide the tool.
# - Pipelines recompute by default; `recomputationCheckpoint` trades a larger stash for
#   one segment's activations; `autoRecomputation` 0 keeps every in-flight micro-batch.
# - `availableMemoryProportion` caps temporaries on every matmul of an IPU and costs time;
#   `serializedMatMul` splits the one matmul that needs it.
# - Serialised embeddings split the table-sized gradient; they pay off only when that
#   gradient is the largest temporary.
#
# ## Exercises

# %%
from ipu_tutorials.classroom.exercises import memory_tuning as exercises

# %% [markdown]
# ### Exercise 7.1: fit the model without offloading
#
# Starting from `build_model()` and `starting_options()`, change the model (its
# `checkpoint_every_layer` and `head_serialization` attributes, or your own annotations) and
# the options so that the model fits on the 4 IPUs with nothing off chip, and it trains not
# much slower than it could. The check compiles your pair and reads the plan.

# %% tags=["answer"]
# starting code: exercises.fit_without_offloading.starting_code

# %%
exercises.fit_without_offloading.check(my_answer)

# %% [markdown]
# ### Exercise 7.2: where to tune
#
# With a checkpoint after every layer and nothing else, which change frees the most memory on
# the fullest IPU? (a) serialise the embedding into 4 slices; (b) serialise the vocabulary
# projection into 8 slices; (c) lower `availableMemoryProportion` to 0.3 on every IPU.

# %% tags=["answer"]
# starting code: exercises.most_freed.starting_code

# %%
exercises.most_freed.check(my_choice)

# %% [markdown]
# **Next:** lesson 8 (optimizer offload) moves optimizer state to streaming memory, the tool
# this lesson left aside.
#
# ## References
#
# - PopTorch user guide (SDK 3.4), API reference, "PopTorch ops": `poptorch.serializedMatMul`,
#   `poptorch.set_available_memory`, `poptorch.recomputationCheckpoint`:
#   https://docs.graphcore.ai/projects/poptorch-user-guide/en/latest/reference.html
# - `Options._Popart` is not in the user guide: its docstring
#   (`opts._Popart.set( "autoRecomputation", 3)  # RecomputationType::Pipeline`) is in
#   PopTorch's source, `python/options.py` (`_PopartOptions`), and the default for pipelines in
#   `popart_compiler/source/Compiler.cpp`, at the tag sdk/poptorch/3.4.0 of
#   https://github.com/graphcore/poptorch; PopART's `RecomputationType` values are in
#   `willow/include/popart/sessionoptions.hpp` of https://github.com/graphcore/popart (tag
#   sdk/poplar/3.4.0).
# - Memory and performance optimisation guide, "Common memory optimisations" (recomputation,
#   available memory proportion, partials):
#   https://docs.graphcore.ai/projects/memory-performance-optimisation/en/latest/
# - Graphcore technical note "Optimising Temporary Memory Usage for Convolutions and Matmuls on
#   the IPU": https://docs.graphcore.ai/projects/available-memory/
# - T. Chen et al., "Training Deep Nets with Sublinear Memory Cost", 2016 (arXiv:1604.06174):
#   the checkpointing idea recomputation builds on.
# - Coming from GPUs: [docs/coming-from-gpus.md](../docs/coming-from-gpus.md).