# %% [markdown]
# # Lesson 15: Capstone: a BERT-size model on a simulated Pod16
#
# Every lesson so far taught one technique on a small model. Real models need them all at
# once: BERT-Large does not fit on one IPU, nor on four in float32, nor with its optimizer state
# on chip. This lesson plans BERT-Large phase-1 pretraining on a simulated Bow Pod16 the way
# Graphcore's published run does, takes each technique away in turn to see what it buys, then
# trains the same code, shrunk, for real and checks its numerics against plain PyTorch.
#
# **What you will learn**
# - how `poptorch.Block`, `PipelinedExecution(AutoStage.AutoIncrement)`, `replicationFactor`,
#   `gradientAccumulation`, `model.half()` with `Precision.setPartialsType`,
#   `TensorLocations.setOptimizerLocation` and `recomputationCheckpoint` combine on 16 IPUs;
# - how to plan a model of BERT-Large's size in seconds on meta tensors with `useOfflineIpuTarget`;
# - what each technique buys in memory and in throughput, and how the simulator's figure
#   compares with the published one;
# - how to check that the whole combination leaves the math unchanged.
#
# **Time:** about 45 minutes.
#
# **Prerequisites:** lessons 3 to 5 (blocks, pipelining), 8 (optimizer offload),
# 9 (half precision), 10 (replication); lesson 7 (memory tuning) helps.
#
# **Coming from GPUs:** the recipe combines pipeline parallelism, DDP, ZeRO-1-style sharded
# optimizer state (replicated tensor sharding set on the optimizer state only) and fixed-scale
# mixed precision ([the GPU bridge](../docs/coming-from-gpus.md)).

# %%
import torch

from ipu_tutorials import poptorch
from ipu_tutorials.profiling import plot_memory
from ipu_tutorials.calibration.published_runs import BERT_LARGE_SEQUENCES_PER_SECOND
from ipu_tutorials.tutorial import capstone
from ipu_tutorials.tutorial.models import BertPretraining

_ = torch.manual_seed(0)  # the same numbers on every run

# %% [markdown]
# ## BERT-Large in blocks, on the meta device
#
# `BertPretraining` is BERT-Large's pretraining graph (24 layers of width 1024, a tied masked-LM
# head, next-sentence prediction) as Graphcore's PyTorch BERT places it: every layer is a
# `poptorch.Block` on the IPU that `layers_per_ipu` gives it, and every layer's output is a
# `poptorch.recomputationCheckpoint`. The embedding and the heads share IPU 0, where the
# tied word embedding lives. Built under `torch.device("meta")`, it holds shapes, not numbers:

# %%
with torch.device("meta"):
    model = BertPretraining(layers_per_ipu=(3, 7, 7, 7)).half()
parameters = sum(p.numel() for p in model.parameters())
print(f"{parameters / 1e6:,.0f}M parameters, {parameters * 2 / 2**20:,.0f} MiB in float16")
print("layers per IPU:", [model.ipus.count(ipu) for ipu in range(4)])
print("one layer:", model.layers[0])

# %% [markdown]
# ## The published recipe in PopTorch options
#
# Graphcore's BERT-Large phase 1 on a Bow Pod16 (`pretrain_large_128`) runs 4 replicas of a
# 4-IPU pipeline, accumulates 2048 micro-batches of 8 sequences per update, keeps LAMB's state
# in streaming memory sharded over the replicas, scales the loss by 4096 and computes in float16
# with half partials.<!-- claim: L15-recipe --> The cell below writes that in PopTorch options;
# Graphcore's script also turns on stochastic rounding, returns the outputs summed
# (`OutputMode.Sum`) and sets PopART flags, none of which changes the plan
# here.<!-- claim: L15-script-options --> `useOfflineIpuTarget` compiles for an offline target,
# without running anything. In PopTorch's docstring its 21 is "Mk2 with FP8 support" (the C600
# card's `ipu21`), and a Bow IPU compiles for 2, the GC200's target: Graphcore's BERT script
# calls `useOfflineIpuTarget()`, 2 by default, for its Bow Pod
# runs.<!-- claim: L15-offline-21 --> The simulator reads 21 as its Bow chip, which it needs for
# the Bow's clock ([docs/differences.md](../docs/differences.md)):

# %%
opts = poptorch.Options().replicationFactor(4)
opts.useOfflineIpuTarget(21)  # the simulator's Bow chip; on a real Bow: useOfflineIpuTarget(2)
opts.setExecutionStrategy(poptorch.PipelinedExecution(poptorch.AutoStage.AutoIncrement))
opts.Training.gradientAccumulation(2048)
opts.outputMode(poptorch.OutputMode.Final).showCompilationProgressBar(False)
opts.TensorLocations.setOptimizerLocation(
    poptorch.TensorLocationSettings().useOnChipStorage(False).useReplicatedTensorSharding(True))
opts.setAvailableMemoryProportion({"IPU0": 0.15, "IPU1": 0.25, "IPU2": 0.25, "IPU3": 0.25})
opts.Precision.setPartialsType(torch.half)
optimizer = poptorch.optim.LAMB(model.parameters(), loss_scaling=capstone.LOSS_SCALING,
                                accum_type=torch.float16)

rows = 8 * 2048 * 4  # micro-batch x accumulation x replicas: one call
tokens, masked = (torch.zeros(rows, n, dtype=torch.long, device="meta") for n in (128, 20))
training = poptorch.trainingModel(model, opts, optimizer)
training.compile(tokens, masked, masked)
plan = training.plan  # simulator extra; on IPUs: PopVision reports
print(plan.placement.describe())

# %% [markdown]
# `tutorial.capstone.options(PUBLISHED)` writes the same options from six choices;
# `pod16_result` compiles them (and remembers the result), and the dashboard and the
# exercises use it. Both give the same plan:

# %%
from ipu_tutorials.classroom.explorers.capstone import pod16_result

recipe_plan = pod16_result(capstone.PUBLISHED)["plan"]
print(f"the cell above and capstone.options agree: "
      f"{recipe_plan.samples_per_second == plan.samples_per_second}")
print(f"IPUs acquired: {plan.placement.ipus_acquired} = {plan.placement.ipus_per_replica} per "
      f"replica x {plan.spec.pod_replicas} replicas")

# %% [markdown]
# How far to trust a simulated throughput: on eleven published Graphcore runs it was not
# calibrated on, the simulator lands between 0.80x and 1.56x of the published figure, nine
# of them within 1.25x (docs/cost-model.md, "Validation against runs it was not calibrated on").

# %% [markdown]
# ## Memory: does it fit?
#
# The plan holds one replica's memory per IPU (every replica is the same). IPU 0 carries the
# word embedding shared with the head; the other IPUs carry the layers the first cell counted,
# and the pipeline's stash, deepest on the earliest stages:

# %%
print(f"word embedding {tuple(model.word.weight.shape)} on IPU 0")
print(plan.memory)
# alt: Stacked bars of memory on the 4 Bow IPUs of one BERT-Large replica (weights, gradients,
#   activations, stash, exchange, temporaries), IPU 0 also holding the embedding: every IPU is well
#   under the 897 MiB capacity line.
_ = plot_memory(plan.memory.ipus, title="BERT-Large, one replica of 4 Bow IPUs")

# %% [markdown]
# ## Throughput: simulated against published
#
# The simulator's cost model is calibrated on this very run (the calibration table of
# [docs/cost-model.md](../docs/cost-model.md)). Graphcore's Performance Results page lists 5,600
# sequences/s for this run (Bow Pod16, SDK 3.3, PyTorch;
# https://www.graphcore.ai/performance-results, an SDK 3.3 row of
# mid-2023).<!-- claim: L15-published-throughput --> Graphcore counts packed sequences (several
# short ones per 128-token row, 1.17 on average in its configuration); the simulator counts
# rows, and multiplies by the run's packing ratio:<!-- claim: L15-packing -->

# %%
print(f"packed sequences per row: {capstone.BERT_PACKING_RATIO}")
simulated = capstone.sequences_per_second(plan)
print(f"published {BERT_LARGE_SEQUENCES_PER_SECOND:,} sequences/s; simulated {simulated:,.0f} "
      f"(ratio {simulated / BERT_LARGE_SEQUENCES_PER_SECOND:.2f})")
print(plan.breakdown_text())

# %% [markdown]
# ## Take each technique away
#
# Now switch one technique off at a time, on the same Pod16. Each row is a compiled plan:
# float32 doubles the weights and activations, on-chip LAMB adds two moments per weight, and
# fewer replicas leave IPUs idle:

# %%
import dataclasses

variants = {"published recipe": {}, "float32": {"half": False},
            "optimizer state on chip": {"offload": False},
            "no recomputation checkpoints": {"recompute": False},
            "1 replica": {"replicas": 1}}
for name, change in variants.items():
    result = pod16_result(dataclasses.replace(capstone.PUBLISHED, **change))
    fullest = max(result["memory"], key=lambda m: m.total)
    speed = (f"{capstone.sequences_per_second(result['plan']):6,.0f} seq/s"
             if "plan" in result else " out of memory")
    print(f"{name:30s} fullest IPU {fullest.total / 2**20:6,.0f} MiB of "
          f"{fullest.capacity / 2**20:,.0f}: {speed}")

# %% [markdown]
# Half precision and offload are both needed to fit. The checkpoints cost no time here
# (the simulator's pipelined training recomputes each stage's forward anyway: a difference,
# [docs/differences.md](../docs/differences.md)), but without them the fullest
# IPU, the table shows, comes close to its limit: they are the margin that leaves room for a
# longer sequence or a bigger micro-batch. The dashboard below tries the rest: a shorter
# accumulation, or a deeper pipeline with fewer replicas.
#
# ## The dashboard
#
# Every control recompiles BERT-Large. The memory bars are one replica's IPUs; the two
# timelines are two windows of the same step (a step of thousands of micro-batches is too
# long to draw box by box), with its fill, main and flush marked above them: the opening,
# where the pipeline fills once the host has handed the call's inputs over (the note under
# it gives the host's time), and the close: the end of the main part, the flush, the
# all-reduce over the replicas, the LAMB state streamed in and out and the weight update:

# %%
from ipu_tutorials.classroom.explorers.capstone import capstone_explorer

# alt: The capstone explorer for BERT-Large on a Bow Pod16, 4 replicas of 4 IPUs. Top: memory on
#   one replica's IPUs 0 to 3, all under capacity. Below it, side by side: the start and the end
#   of one step's timeline: the pipeline filling with forward passes from IPU 0 to IPU 3, and at the close
#   the last backward passes, the all-reduce across replicas and the optimizer state streaming for
#   the weight update.
capstone_explorer()

# %% [markdown]
# ## The same code, small, for real
#
# A plan says nothing about whether the model learns. Shrink BERT, keep the recipe (a 4-IPU
# pipeline, replicas, LAMB off chip, checkpoints; float32 here) and train a few steps on
# random tokens. `capstone.bert` and
# `capstone.options` are the functions that planned the Pod16; `plan_only=False` keeps the
# simulated IPUs attached so the model runs:

# %%
TINY = dict(width=64, depth=3, heads=4, vocab=500)
small = capstone.PodConfig(ipus_per_replica=4, replicas=2, accumulation=10, half=False)


def tiny_bert():
    torch.manual_seed(0)
    return capstone.bert(small, device="cpu", **TINY)


def data(step):
    return capstone.batch(small, device="cpu", vocab=500, micro_batch=2, seed=step)


model = tiny_bert()
training = poptorch.trainingModel(model, capstone.options(small, plan_only=False),
                                  capstone.optimizer(model, small))
for step in range(3):
    _, losses = training(*data(step))
    print(f"step {step}: loss per replica {[round(x, 3) for x in losses.tolist()]}")
print(f"{small}: {training.plan.placement.ipus_acquired} simulated IPUs, "  # simulator extra
      f"layers per IPU {capstone.layers_per_ipu(4, TINY['depth'])} (IPU 0: embedding and heads)")

# %% [markdown]
# The tiny model runs in float32, where plain PyTorch is an exact oracle (lesson 9 compares
# float16 separately). With the default `ReductionType.Mean`, an update adds the gradients
# of the accumulation x replicas micro-batches and divides by their count. A plain loop
# doing exactly that, with the same LAMB, trains a model that computes the same outputs on
# a batch neither has seen. (Outputs, not every weight: the attention keys' bias has an
# exactly zero gradient, since softmax ignores a shift shared by all scores, so in float32
# its gradient is rounding noise that LAMB scales up to a full step; it changes no output.)

# %%
reference = tiny_bert()
lamb = capstone.optimizer(reference, small)
micro_batches = small.accumulation * small.replicas
for step in range(3):
    lamb.zero_grad()
    for chunk in zip(*(t.chunk(micro_batches) for t in data(step))):
        reference(*chunk)[1].backward()
    for p in reference.parameters():
        p.grad /= micro_batches
    lamb.step()
held_out = data(99)
same = all(torch.allclose(ours, theirs, rtol=1e-5, atol=1e-5)
           for ours, theirs in zip(model(*held_out), reference(*held_out)))
print(f"Pod16 recipe, shrunk == plain PyTorch (rtol and atol 1e-5): {same}")

# %% [markdown]
# ## What a real IPU would do
#
# Graphcore's run packs several short sequences into each 128-token row, serialises the
# embedding and its tied head (`embedding_serialization_factor: 2`), and sets the matmuls'
# available memory per IPU; the simulator plans the rows with a per-op cost model, so its memory
# plan is an estimate of what the Poplar compiler would allocate tile by tile, and only the
# published configuration is calibrated: other rows of the table above are the model's
# extrapolation. Compiling BERT-Large for real takes tens of minutes (executable caching then
# skips it); here it takes seconds because no Poplar program is built. Real float16 training
# needs loss scaling that keeps gradients representable; the plan shows the memory and the time,
# but only a real run shows whether the loss goes down at this scale. A Pod16's replicas reduce
# their gradients over IPU-Links, as do a Pod64 rack's; GW-Links join Pod64 racks into larger
# Pods. The simulator models both kinds, but puts the GW-Links between groups of 16 IPUs (lesson
# 10, [docs/differences.md](../docs/differences.md)); this lesson's Pod16 uses IPU-Links
# only.<!-- claim: L10-gw-links -->
#
# In lesson 13's terms (optimum-graphcore's `IPUConfig`) the recipe is
# `IPUConfig(layers_per_ipu=[3, 7, 7, 7], replication_factor=4,
# gradient_accumulation_steps=2048, optimizer_state_offchip=True,
# replicated_tensor_sharding=True, matmul_proportion=[0.15, 0.25, 0.25, 0.25],
# embedding_serialization_factor=2, recompute_checkpoint_every_layer=True)`.
# `ipu_tutorials.optimum.graphcore.published` builds it but for the embedding serialization
# (the simulator's BERT does not serialize an embedding tied to its head), and
# `benchmarks/bert_large_ipuconfig.py` plans it.
#
# **On a Bow Pod.** The published run this lesson compares with *is* a Bow Pod16 run, so here
# the simulator's figures are already for Bow IPUs; what differs is what it cannot model
# (tile mapping, compile time, PopART's own scheduling).
#
# ## Summary
#
# - BERT-Large on a Pod16 needs every technique at once: a 4-IPU pipeline for the layers,
#   float16 and off-chip optimizer state to fit, replicas to use all 16 IPUs, and a long
#   accumulation to amortise the fill, flush and update.
# - Plans of a model of any size compile on meta tensors in seconds; the same functions then
#   build a small model that trains.
# - The simulated throughput of the published recipe is within the calibration's tolerance of
#   the published figure; every other configuration is an extrapolation from it.
# - The techniques change where and when the work runs, never the math: the shrunk recipe
#   matches a plain PyTorch loop.
#
# ## Exercises

# %%
from ipu_tutorials.classroom.exercises import capstone as exercises

# %% [markdown]
# ### Exercise 15.1: sequences per update
#
# How many 128-token rows does one weight update of the published recipe use (micro-batch 8
# rows, `gradientAccumulation(2048)`, 4 replicas of a 4-IPU pipeline)? The check calls them
# sequences, as the simulator counts them; packed, each row holds 1.17 of Graphcore's
# sequences on average.

# %% tags=["answer"]
# starting code: exercises.samples_per_update.starting_code

# %%
exercises.samples_per_update.check(my_sequences)

# %% [markdown]
# ### Exercise 15.2: reach the published throughput
#
# Write `setup()` returning `(model, opts)`: BERT-Large (`BertPretraining`, default size, on
# the meta device, your `layers_per_ipu`) and your `poptorch.Options`. The check compiles it
# for a Bow Pod16 with LAMB and accepts it when it fits on every IPU and reaches the published
# throughput printed above. Start from this plain 4-IPU pipeline and add what it lacks
# (`exercises.pod16_setup.hint()` gives a nudge):
#
# ```python
# def setup():
#     with torch.device("meta"):
#         model = BertPretraining(layers_per_ipu=(3, 7, 7, 7))
#     opts = poptorch.Options()
#     opts.setExecutionStrategy(poptorch.PipelinedExecution(poptorch.AutoStage.AutoIncrement))
#     opts.Training.gradientAccumulation(16)
#     return model, opts
# ```

# %% tags=["answer"]
# starting code: exercises.pod16_setup.starting_code

# %%
exercises.pod16_setup.check(setup)

# %% [markdown]
# **Next:** lesson 16 runs the same ideas with PyTorch's own engines (pipeline schedules,
# ZeRO and FSDP sharding, autocast) on four CPU processes, side by side with the IPU's. Then
# take your own model through the same steps: blocks and a plan on meta tensors first (lessons
# 3 to 7), then half precision and offload (lessons 8 and 9), then replicas (lesson 10), then
# a small real run against plain PyTorch.
#
# ## References
#
# - PopTorch user guide (SDK 3.4), "Multi-IPU execution strategies" (pipelined execution,
#   `AutoStage`), "Optimizers" (LAMB, loss scaling, accumulation types), "16-bit float support":
#   https://docs.graphcore.ai/projects/poptorch-user-guide/en/latest/overview.html;
#   `TensorLocationSettings`, `recomputationCheckpoint`:
#   https://docs.graphcore.ai/projects/poptorch-user-guide/en/latest/reference.html
# - The published run: graphcore/examples (https://github.com/graphcore/examples),
#   `nlp/bert/pytorch` (`configs_pretraining.yml`, `pretrain_large_128`), and Graphcore's
#   performance results page, https://www.graphcore.ai/performance-results
# - Y. You et al., "Large Batch Optimization for Deep Learning: Training BERT in 76 minutes",
#   ICLR 2020 (arXiv:1904.00962), for LAMB.
# - J. Devlin et al., "BERT", NAACL 2019 (arXiv:1810.04805).
# - Coming from GPUs: [docs/coming-from-gpus.md](../docs/coming-from-gpus.md).