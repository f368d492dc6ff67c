# %% [markdown]
# # Lesson 6: Phased execution
#
# A pipeline keeps every weight of its stage on its IPU for the whole run. When a model's
# weights, gradients and optimizer state outgrow the IPUs' SRAM, even with recomputation,
# phased execution takes a different trade: the model runs as a sequence of *phases*, and
# each phase's weights are streamed in from streaming memory (the DDR beside the IPUs) just
# before it runs, and leave again afterwards.<!-- claim: L06-phases-stream --> Memory is
# bounded by one phase; time is bounded by the streaming bandwidth.
#
# **What you will learn**
# - `poptorch.Phase`, `poptorch.Stage` and `SerialPhasedExecution`: phases that run one after
#   another on one group of IPUs;
# - `poptorch.Liveness` (`AlwaysLive`, `OffChipAfterFwd`, `OffChipAfterFwdNoOverlap`,
#   `OffChipAfterEachPhase`) and `setTensorsLiveness`: how many phases share the chip, and
#   what that costs in streaming;
# - `ParallelPhasedExecution`: even phases on even IPUs, odd phases on odd IPUs, one group
#   loading while the other computes; `sendTensorsOffChipAfterFwd` and
#   `useSeparateBackwardPhase`;
# - reading a phased plan: per-phase memory, bytes held in streaming memory, stream events on
#   the timeline;
# - when phases beat a pipeline, and when they do not.
#
# **Time:** about 45 minutes.
#
# **Prerequisites:** lesson 3 (blocks and stages), lesson 4 (pipelining) and lesson 5
# (sharding); lesson 8 (optimizer offload) is a useful companion but not required.
#
# **Coming from GPUs:** phases are the IPU's parameter offload, like ZeRO-Infinity or FSDP's
# CPU offload streaming weights in per layer group ([the GPU bridge](../docs/coming-from-gpus.md)).

# %%
import matplotlib.pyplot as plt

from ipu_tutorials import poptorch
from ipu_tutorials.classroom import phased_plans as lesson
from ipu_tutorials.profiling import plot_timeline
from ipu_tutorials.simulator.units import format_bytes
from ipu_tutorials.tutorial.models import parameter_count

# %% [markdown]
# ## A model too big for four IPUs
#
# The lesson's model is a 16-layer transformer of width 1536, built on the meta device (shapes
# only, so nothing here is random; lesson 8 shows how) and cut into 16 blocks, `chunk0` to
# `chunk15`, one per layer. It trains with AdamW, micro-batches of 4 sequences and 8
# micro-batches per step. First, the obvious plan: a pipeline of four blocks per IPU on one
# IPU-M2000's four IPUs.

# %%
model = lesson.chunked_model(width=1536, layers=16, chunks=16)
pipelined = lesson.plan_model(model, lesson.pipelined_strategy(16))
print(f"{parameter_count(model) / 1e6:,.0f}M parameters; pipelined on {lesson.IPUS} IPUs: "
      f"{'fits' if pipelined.fits else 'out of memory'}")
for m in pipelined.memory.ipus:
    print(f"IPU {m.ipu}: {format_bytes(m.total)} of {format_bytes(m.capacity)}; weights and "
          f"gradients alone {format_bytes(m.weights + m.gradients)} "
          f"({(m.weights + m.gradients) / m.capacity:.0%} of the IPU)")

# %% [markdown]
# The cell above shows that the weights and gradients alone take about all of each IPU:
# recomputation (which the pipeline already does) cannot help, and moving the optimizer state
# off chip (lesson 8) would still leave too much. The model needs its weights off chip too.
#
# ## Phases and stages
#
# A `poptorch.Phase` groups stages that run at the same time, one stage per IPU. In
# `SerialPhasedExecution` the phases run one after another on the same group of
# IPUs.<!-- claim: L06-serial-phases --> Four phases of four stages cover the 16 blocks. Name
# each stage's IPU yourself, with `Phase(...).ipus(...)`, `Stage(...).ipu(n)` or the block's
# `ipu_id`: PopTorch has no default IPU for a phased stage (a stage without one gets IPU -1, in
# PopTorch's `beginStage`), and its documentation and tests always name
# them.<!-- claim: L06-no-default-ipu --> (The simulator warns and fills in IPUs 0, 1, 2, 3 when
# you leave them out: [docs/differences.md](../docs/differences.md).) Here every phase uses IPUs
# 0 to 3:

# %%
strategy = poptorch.SerialPhasedExecution(
    *[poptorch.Phase(*[poptorch.Stage(f"chunk{4 * p + i}").ipu(i) for i in range(4)])
      for p in range(4)])
print(strategy.phase(1))  # simulator extra: PopTorch's Phase prints no stages
always_live = lesson.plan_model(model, strategy)
print("fits" if always_live.fits else "out of memory")
print(always_live.memory.table())

# %% [markdown]
# Phases in a picture (drawn from the simulator's phase program for 3 phases on 2 IPUs):
# each phase's weights stream in during the phase id before it computes and out during the
# one after, so under `AlwaysLive` an IPU holds three phases at once.
#
# ![Diagram of serial phased execution, Liveness.AlwaysLive, 3 phases on 2 IPUs: each IPU computes F0, F1, F2, then B2, B1, B0, while its streaming row brings each phase's weights in before it and writes them out after](../static/diagram_phases.png)
#
# The weights are off chip now (the "off chip" column: phased execution puts every tensor kind
# the user did not place into streaming memory), yet it still does not
# fit.<!-- claim: L06-off-chip-default --> The reason is the default `Liveness.AlwaysLive`.
#
# ## Liveness: how many phases share the chip
#
# PopTorch numbers the phases for PopART, and the liveness sets that numbering. With
# `AlwaysLive` forward phase q runs at phase id q; a phase's tensors are live for three ids
# (loaded during the id before it, stored during the id after), so an IPU holds the phase it
# runs, the one it is storing and the one it is loading. `OffChipAfterFwdNoOverlap` spaces the
# phases two ids apart, `OffChipAfterEachPhase` four. `OffChipAfterFwd` keeps the spacing but
# sends every forward activation off chip before the backward.<!-- claim: L06-liveness -->
# `plan.grid()` shows the ids:

# %%
from ipu_tutorials.classroom.exercises import phased as exercises

for name in ("AlwaysLive", "OffChipAfterFwdNoOverlap"):
    outcome = exercises.serial_outcome(name)
    grid = (outcome.plan.grid() if outcome.fits else "(does not fit)").splitlines()[0]  # simulator extra
    print(f"{name:25s} {grid}")

# %% [markdown]
# Each liveness trades memory for streaming that compute can no longer hide. All four, on
# the same four phases:

# %%
for name in lesson.LIVENESS:
    outcome = exercises.serial_outcome(name)
    fullest = max(m.total for m in outcome.memory.ipus)
    if outcome.fits:
        plan = outcome.plan
        timing = (f"{plan.call_seconds * 1e3:7,.1f} ms per step, "
                  f"{lesson.streaming_seconds(plan) * 1e3:7,.1f} ms of it streaming")
    else:
        timing = "out of memory"
    print(f"{name:25s} fullest IPU {format_bytes(fullest):>10s}: {timing}")

# %% [markdown]
# The cell above shows which livenesses fit and what each step costs: the ones that space
# the phases out hold less, and with phase ids apart nothing hides their loads. The timeline
# of one micro-batch of the fastest fitting plan shows the stream events between the compute:

# %%
best = exercises.serial_outcome(exercises.fastest_fitting_liveness().name).plan
first = [e for e in best.timeline.events if e.micro_batch == 0 and e.step == 0]
# alt: Timeline of one micro-batch under serial phased execution on IPUs 0 to 3 with
#   Liveness.OffChipAfterFwdNoOverlap: long blocks of streaming to and from streaming memory fill
#   most of the time, with thin forward and backward compute between them.
plot_timeline(first, best.placement.ipus_per_replica, show_host=False,
              title=f"One micro-batch, 4 serial phases, Liveness.{exercises.fastest_fitting_liveness().name}")
plt.show()
parts = best.breakdown()
print(f"IPU compute {parts['IPU compute'] * 1e3:,.1f} ms of {best.call_seconds * 1e3:,.1f} ms "
      f"per step; streaming memory holds {format_bytes(sum(best.memory[0].off_chip.values()))} "
      f"for IPU 0")

# %% [markdown]
# The compute is the thin slivers between the streams. Every micro-batch streams the weights
# in again, once for its forward and once for its
# backward (with the gradient accumulators in and out), and the weight update streams the
# weights, accumulators and AdamW's state through each IPU once more. That is the price of a
# model that does not fit: the step is bound by the streaming bandwidth, not the FLOPs.
#
# ## Parallel phases
#
# `ParallelPhasedExecution` alternates two groups of IPUs: even phases on even IPUs, odd
# phases on odd IPUs.<!-- claim: L06-parallel-parity --> While one group computes, the
# other loads its next phase, and each group holds at most two phases. Eight phases of two
# stages, on IPUs 0 and 2 for even phases and 1 and 3 for odd ones (the layout of
# PopTorch's documentation):

# %%
phases = [poptorch.Phase(poptorch.Stage(f"chunk{2 * p}").ipu(p % 2),
                         poptorch.Stage(f"chunk{2 * p + 1}").ipu(2 + p % 2)) for p in range(8)]
parallel = poptorch.ParallelPhasedExecution(*phases)
print(parallel.phase(0), parallel.phase(1), sep="\n")  # simulator extra: the same
outcome = lesson.plan_model(model, parallel)
print(f"fits: {outcome.fits}; fullest IPU {format_bytes(max(m.total for m in outcome.memory.ipus))}; "
      f"{outcome.plan.call_seconds * 1e3:,.1f} ms per step")
print(outcome.plan.grid())  # simulator extra

# %% [markdown]
# The cell above shows that it fits with the default liveness, but each phase has only two
# IPUs computing: compare its step time with the serial plans'. Breaking the even/odd rule
# is an error, in PopTorch's words:

# %%
wrong = poptorch.ParallelPhasedExecution(poptorch.Phase(poptorch.Stage("chunk0").ipu(0)),
                                         poptorch.Phase(poptorch.Stage("chunk1").ipu(2)))
try:
    lesson.plan_model(lesson.chunked_model(1536, 16, 2), wrong)
except poptorch.Error as error:
    print(error)

# %% [markdown]
# Parallel phases offer two livenesses: `AlwaysLive` and `sendTensorsOffChipAfterFwd()`
# (`OffChipAfterFwd`); the strided ones are serial-only. `useSeparateBackwardPhase()` gives
# the last forward phase's backward its own phase id instead of sharing it, which costs one
# more load of its weights:<!-- claim: L06-parallel-options -->

# %%
for label, variant in (("shared turn", parallel),
                       ("separate backward phase",
                        poptorch.ParallelPhasedExecution(*phases).useSeparateBackwardPhase()),
                       ("sendTensorsOffChipAfterFwd",
                        poptorch.ParallelPhasedExecution(*phases).sendTensorsOffChipAfterFwd())):
    plan = lesson.plan_model(model, variant).plan
    loads = len([e for e in plan.timeline.of_kind("stream") if e.micro_batch == 0 and e.step == 0])
    print(f"{label:27s} {plan.call_seconds * 1e3:8,.1f} ms per step, {loads} streams per micro-batch")

# %% [markdown]
# ## When phases beat a pipeline
#
# Phases never make a model faster: the same FLOPs run with fewer IPUs busy, plus streaming.
# They win only where the pipeline cannot run at all. The explorer compiles both for a model
# size, a number of phases and a liveness; start with a small model, where the pipeline fits
# and wins, then grow it:

# %%
from ipu_tutorials.classroom.explorers.phased import compare, phase_planner

small = compare(1024, 8, 2, lesson.SERIAL, "AlwaysLive")
for name in ("pipelined", "phased"):
    plan = small[name].plan
    print(f"{small['parameters'] / 1e6:,.0f}M parameters, {name:9s}: "
          f"{plan.call_seconds * 1e3:7,.1f} ms per step")

# %%
# alt: Left: bars of on-chip memory per IPU, 0 to 3, for phased and pipelined execution, against a
#   dashed line at the IPU's memory: the phased bars stay under it, the pipelined bars reach more
#   than twice as high. Right: the time of one step split into compute and streaming, exchange and
#   host: pipelined does not fit; phased is mostly streaming, with a small share of compute.
phase_planner(width=1536, layers=16, phases=4, liveness="OffChipAfterFwdNoOverlap")

# %% [markdown]
# ## What a real IPU would do
#
# PopART runs each phase's stages on the IPUs you name, with the same phase ids for each
# liveness as the simulator; but the real compiler decides tensor by tensor what to keep, load
# or store (weights it can reuse stay on chip, and copies between IPUs can replace a trip to
# streaming memory), uses IO tiles to overlap streaming with compute, and can serialise a phase
# over several micro-batches (batch serialisation) so that one load serves them
# all.<!-- claim: L06-popart-phases --> The simulator streams every phase's off-chip weights
# once per micro-batch at one assumed bandwidth per IPU (`System.streaming_bandwidth`, a figure
# with no public measurement behind it), and counts three phases' tensors as live at once under
# stride 1. So its phased times are a pessimistic sketch: trust the memory comparisons (which
# liveness fits, how far over) more than the milliseconds. Graphcore's full-size BERT in PopXL
# (its lower-level Python API, not PopTorch) combines phases with recomputation and replicated
# tensor sharding, which spreads the off-chip state over
# replicas<!-- claim: L06-bert-phased -->; the simulator does not model sharding together with
# phases.
#
# **On a Bow Pod.** A Bow-2000 has up to 256 GB of streaming memory for its four IPUs
# (datasheet)<!-- claim: L06-bow-streaming -->; its bandwidth is not published, so phased
# timings stay a sketch there too.
#
# ## Summary
#
# - `SerialPhasedExecution(Phase(Stage(...).ipu(n), ...), ...)` runs phases one after
#   another on one group of IPUs, streaming each phase's weights from streaming memory. Name
#   the IPUs: PopTorch has no default for phased stages.
# - `setTensorsLiveness` chooses how many phases share the chip: `AlwaysLive` holds three,
#   `OffChipAfterFwdNoOverlap` two with no overlap, `OffChipAfterEachPhase` one.
# - `ParallelPhasedExecution` puts even phases on even IPUs and odd ones on odd IPUs, so one
#   group loads while the other computes.
# - Phases fit models a pipeline cannot hold, at the price of streaming bandwidth; when the
#   pipeline fits, pipeline.
#
# ## Exercises

# %% [markdown]
# ### Exercise 6.1: phases for a model too big for four IPUs
#
# Write `strategy`, a phased execution strategy for `model` (the 16 blocks `chunk0` to
# `chunk15`) that compiles and fits on the four IPUs. The check compiles it for training.

# %% tags=["answer"]
# starting code: exercises.write_the_phases.starting_code

# %%
exercises.write_the_phases.check(strategy)

# %% [markdown]
# ### Exercise 6.2: the fastest liveness that fits a wider model
#
# The model grows from a hidden size of 1,536 to 2,048 (`lesson.chunked_model(2048, 16, 16)`).
# In the same four serial phases of four stages, which `poptorch.Liveness` fits and gives the
# shortest step now? Answer with the enum value (compute it with `lesson.plan_model` and
# `lesson.phased_strategy(lesson.SERIAL, 16, name)`, or try it in the phase planner).

# %% tags=["answer"]
# starting code: exercises.fitting_liveness.starting_code

# %%
exercises.fitting_liveness.check(my_liveness)

# %% [markdown]
# **Next:** lesson 7 (memory tuning): recomputation checkpoints, available memory proportion
# and serialised matmuls, the tools that keep a model on chip so it needs no phases.
#
# ## References
#
# - PopTorch user guide (SDK 3.4), "Multi-IPU execution strategies", "Phased execution" (serial
#   and parallel phased execution, `poptorch.Liveness`):
#   https://docs.graphcore.ai/projects/poptorch-user-guide/en/latest/overview.html
# - PopTorch's source, `python/options.py` and `python/_options_impl.py` (`beginStage`: a
#   stage's IPU is `Stage.ipu`, else the block's `ipu_id`, else its stage id):
#   https://github.com/graphcore/poptorch
# - Memory and performance optimisation guide, on streaming memory:
#   https://docs.graphcore.ai/projects/memory-performance-optimisation/en/latest/
# - Coming from GPUs: [docs/coming-from-gpus.md](../docs/coming-from-gpus.md).
