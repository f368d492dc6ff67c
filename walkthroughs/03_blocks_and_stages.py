# %% [markdown]
# # Lesson 3: Blocks and stages
#
# A model too big for one IPU is cut into pieces, and each piece runs on its own IPU. PopTorch
# describes the cut in two steps: **blocks** mark which layers belong together, and **stages**
# put blocks on IPUs.<!-- claim: L03-blocks-stages --> This lesson runs real PopTorch code on
# simulated IPUs to show both steps, and what PopTorch says when a placement breaks one of its
# rules.
#
# **What you will learn**
# - three ways to annotate blocks: `poptorch.Block`, `poptorch.BlockFunction` and
#   `poptorch.BeginBlock`;
# - how `poptorch.Stage` and `poptorch.AutoStage` turn blocks into stages on IPUs;
# - the placement rules, and the error each one gives when broken;
# - how to read a placement table and diagram.
#
# **Time:** about 50 minutes.
#
# **Prerequisites:** lesson 1 (PopTorch basics: `Options`, `trainingModel`,
# `inferenceModel`), PyTorch modules and training loops. No IPU and no Poplar SDK: everything
# runs on your laptop's CPU.
#
# **Coming from GPUs:** blocks are manual model parallelism (`module.to("cuda:1")`), declared
# and checked at compile time ([the GPU bridge](../docs/coming-from-gpus.md)).

# %% [markdown]
# `ipu_tutorials` provides the same `poptorch` API on top of a simulator, so the PopTorch
# code below runs on a real IPU with only its import changed; what real PopTorch lacks (the
# plans, reports and system description the lesson reads) is marked *simulator extra* on
# every line that uses it.<!-- claim: L01-portable --> The numbers are real PyTorch; where
# the blocks land, how much memory they take and how long they would run come from a cost
# model of a GC200 IPU.

# %%
import matplotlib.pyplot as plt
import torch
import torch.nn as nn

import ipu_tutorials
from ipu_tutorials import poptorch

torch.manual_seed(0)
print("Simulated system:", ipu_tutorials.default_system().describe())  # simulator extra

# %% [markdown]
# ## The model: four blocks
#
# We use the network of Graphcore's pipelining tutorial: two convolution layers and two linear
# layers for MNIST digits, each inside a `with poptorch.Block("...")` scope, which gives its
# operations a block id: `B1` to `B4`.<!-- claim: L03-tutorial-network -->

# %%
# show: ipu_tutorials.tutorial.models.ConvLayer


# show: ipu_tutorials.tutorial.models.Network

# %% [markdown]
# (The package ships this model as `ipu_tutorials.tutorial.models.Network`; the next lessons
# import it.) Outside a wrapped model, blocks do nothing: the network still runs as plain
# PyTorch on the CPU, so you can debug it there first.<!-- claim: L03-block-no-op -->

# %%
model = Network()
print(model(torch.randn(2, 1, 28, 28)).shape)

# %% [markdown]
# ## From blocks to stages to IPUs
#
# A `poptorch.Stage` groups one or more blocks and `.ipu(n)` places it. The execution strategy
# receives the stages; `PipelinedExecution` is the default strategy, and lesson 4 is about what
# it does.<!-- claim: L03-stage-ipu --> Here we only compile, which captures the model on
# shapes alone and places it.

# %%
strategy = poptorch.PipelinedExecution(
    poptorch.Stage("B1").ipu(0),
    poptorch.Stage("B2").ipu(1),
    poptorch.Stage("B3").ipu(2),
    poptorch.Stage("B4").ipu(3),
)
opts = poptorch.Options().deviceIterations(4).setExecutionStrategy(strategy)
inference_model = poptorch.inferenceModel(model, opts)
inference_model.compile(torch.randn(4 * 8, 1, 28, 28))
plan = inference_model.plan  # simulator extra; on IPUs: PopVision Graph Analyser
print(plan.placement.describe())
print(f"simulated compile time on hardware: {plan.compile_seconds:.0f} s")

# %% [markdown]
# The progress bar imitates the real one, at the simulator's speed. On hardware, compiling is
# not instant: Graphcore's published run of this tutorial compiled its training model in 1:31
# and its inference model in 0:35.<!-- claim: L01-compile-time --> The plan estimates the
# time from the graph's size (`plan.compile_seconds`, calibrated on those two bars), as
# printed above. The simulator's plan also knows what crosses between the IPUs. The arrows
# carry the activations of one micro-batch of 8 images:

# %%
report = inference_model.report()  # simulator extra; on IPUs: POPLAR_ENGINE_OPTIONS autoReport
# alt: Placement diagram: four boxes, IPU 0 to IPU 3, holding blocks B1 to B4 as stages 0 to 3,
#   with an arrow from each IPU to the next labelled with the activation bytes one micro-batch
#   sends across.
report.plot_placement()
plt.show()

# %% [markdown]
# and what each IPU holds. The table lists the blocks, the planned memory and how busy each
# IPU is during a call; the bars break the memory down. This model is tiny, so compiled code
# dominates (code size is an explicit parameter of the simulator: no public figure exists).

# %%
print(report.placement_table())
# alt: Horizontal bars of memory on IPUs 0 to 3, zoomed in: each IPU uses a small fraction of its
#   897 MiB (off the scale), almost all of it code, with thin slices of weights, activations and
#   temporaries.
report.plot_memory(zoom=True)
plt.show()

# %% [markdown]
# ## Three ways to write a block
#
# `poptorch.Block` is a scope. `poptorch.BlockFunction` decorates a function so that its body
# runs in a block. `poptorch.BeginBlock` marks a module: the block starts there and lasts until
# the next one begins, so the model's code does not change at
# all.<!-- claim: L03-three-annotations -->

# %%
class Decorated(Network):
    @poptorch.BlockFunction("B1", ipu_id=0)
    def first(self, x):
        return self.layer1(x)

    def forward(self, x):
        x = self.first(x)
        with poptorch.Block("B2", ipu_id=1):
            return self.layer4(self.layer3_act(self.layer3(self.layer2(x).view(-1, 320))))


plain = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
poptorch.BeginBlock(plain[0], "encoder", ipu_id=0)
poptorch.BeginBlock(plain[2], "classifier", ipu_id=1)
for name, net, x in [("Decorated", Decorated(), torch.randn(8, 1, 28, 28)),
                     ("BeginBlock", plain, torch.randn(8, 784))]:
    wrapped = poptorch.inferenceModel(net, poptorch.Options().deviceIterations(2))
    wrapped.compile(x)
    print(f"{name}:", wrapped.plan.placement.describe().replace("\n", " | "))  # simulator extra

# %% [markdown]
# These two models gave each block an `ipu_id` and no strategy. The default strategy,
# `PipelinedExecution(AutoStage.SameAsIpu)`, makes one stage per IPU and puts each block on the
# IPU its `ipu_id` names. `AutoStage.AutoIncrement` instead starts a new stage with every block,
# in the order the model runs them.<!-- claim: L03-auto-stage -->
#
# ## When placement breaks a rule
#
# PopTorch refuses placements it cannot compile. Each error below is the simulator's live
# output for a model that breaks one rule; where PopTorch words the error itself, the message
# starts with PopTorch's words, and then says which block or IPU is at fault and how to fix
# it. A small helper compiles a model and prints the error instead of stopping.

# %%
def try_compile(model, opts, *inputs):
    try:
        poptorch.inferenceModel(model, opts.showCompilationProgressBar(False)).compile(*inputs)
        print("compiles")
    except (poptorch.Error, AssertionError) as error:  # PopTorch asserts some rules in Python
        kind = "poptorch.Error" if isinstance(error, poptorch.Error) else type(error).__name__
        print(f"{kind}: {error}")


# show: ipu_tutorials.tutorial.models.ThreeBlocks


x = torch.randn(8, 16)
print("Blocks without an ipu_id under the default strategy:")  # claim: L03-same-as-ipu-needs-ipu
try_compile(ThreeBlocks([None, None, None]), poptorch.Options().deviceIterations(4), x)

# %%
print("Stage ids must ascend along the model when pipelining:")  # claim: L03-ascending-stages
try_compile(ThreeBlocks([0, 1, 0]), poptorch.Options().deviceIterations(4), x)
print("\nAutoIncrement numbers the stages 0, 1, 2 instead:")
auto = poptorch.PipelinedExecution(poptorch.AutoStage.AutoIncrement)
try_compile(ThreeBlocks([0, 1, 0]), poptorch.Options().deviceIterations(4).setExecutionStrategy(auto), x)

# %%
print("A block the model runs that no Stage names (here C, for a Stage typed as D):")
try_compile(ThreeBlocks([0, 1, 1]), poptorch.Options().deviceIterations(4).setExecutionStrategy(
    poptorch.PipelinedExecution("A", "B", "D")), x)  # claim: L03-unknown-block
print("\nLayers that share weights on different IPUs:")  # claim: L03-shared-weights
try_compile(ThreeBlocks([0, 1, 1], share_weights=True), poptorch.Options().deviceIterations(4), x)

# %%
print("IPUs are reserved in powers of two:")  # claim: L03-power-of-two
try_compile(ThreeBlocks([0, 1, 2]), poptorch.Options().deviceIterations(4), x)
print("\nOnce blocks are used, no op may run outside one:")  # claim: L03-no-active-block


class Between(ThreeBlocks):
    def forward(self, x):
        with poptorch.Block("A", ipu_id=0):
            x = self.a(x)
        x = torch.tanh(x)  # between two blocks
        with poptorch.Block("B", ipu_id=1):
            return self.b(x)


try_compile(Between([0, 1, 1]), poptorch.Options().deviceIterations(4), x)

# %% [markdown]
# ## Explore: spreading a model over more IPUs
#
# Placement exists because models outgrow one IPU's in-processor memory (the first cell printed
# its size with the simulated system; the planner draws it as a dashed line). The memory
# planner compiles a transformer (on shapes only, so its size does not matter to your laptop)
# with its layers spread evenly over the IPUs you pick. Start at 1 IPU and add more; lesson 8
# explains the other switches.

# %%
from ipu_tutorials.classroom import memory_planner

# alt: One stacked bar of memory on IPU 0 for a 0.37B-parameter model trained with AdamW: weights,
#   gradients, optimizer state and activations add up to many times the 897 MiB capacity line,
#   marked out of memory.
memory_planner(size="350M", ipus=1, optimizer="AdamW")

# %% [markdown]
# ## What a real IPU would do, and where the simulator differs
#
# On a real system PopTorch traces the model, PopART assigns every operation to the IPU of its
# stage, and Poplar compiles one executable for all the IPUs, which takes longer the larger
# the model.<!-- claim: L03-compile-flow --> The simulator
# captures the same model with PyTorch's dispatcher on meta tensors (shapes, no data) in well
# under a second, applies PopTorch's placement rules, and plans memory with a documented cost
# model instead of a real compiler: code size and exchange buffers are estimates, and the
# compiler's own optimisations (op fusion, liveness analysis) are not modelled. The rules
# are PopTorch's and PopART's; the errors start with PopTorch's words where PopTorch has its
# own (a block without an IPU, an unknown block, no active block, the IPU count) and always
# say what to change.
# PopTorch checks a Stage's blocks only as the model runs them, so a Stage naming a block
# that never runs passes there; the simulator refuses it
# ([docs/differences.md](../docs/differences.md)).
#
# **On a Bow Pod.** Placement rules and the memory per IPU are the same as on a GC200 (1,472
# tiles, about 900 MB)<!-- claim: L01-bow-chip -->; a Bow Pod16 offers 16 IPUs, so a
# replica's IPU count times the replication factor must still be a power of two, at most 16.
#
# ## Exercises

# %%
from ipu_tutorials.classroom.exercises import blocks as exercises

# %% [markdown]
# ### Exercise 3.1: two IPUs
#
# Write a `PipelinedExecution` that places `B1` and `B2` on IPU 0 and `B3` and `B4` on IPU 1.

# %% tags=["answer"]
# starting code: exercises.two_ipus.starting_code

# %%
exercises.two_ipus.check(my_strategy)

# %% [markdown]
# ### Exercise 3.2: move a block with a stage
#
# `ThreeBlocks([0, 1, 0])` failed above under the default rule, and `AutoStage.AutoIncrement`
# made it compile with block C back on IPU 0. Fix it the other way: keep its `ipu_id`s as they
# are and write a `PipelinedExecution` that runs A on IPU 0 and both B and C on IPU 1.

# %% tags=["answer"]
# starting code: exercises.move_a_block.starting_code

# %%
exercises.move_a_block.check(my_strategy)

# %% [markdown]
# ### Exercise 3.3: how many IPUs?
#
# A model puts its blocks on IPUs 0, 1 and 2, and runs with `replicationFactor(2)` and
# `autoRoundNumIPUs(True)`. How many IPUs does PopTorch reserve?

# %% tags=["answer"]
# starting code: exercises.ipus_reserved.starting_code

# %%
exercises.ipus_reserved.check(my_ipu_count)

# %% [markdown]
# ## Summary
#
# - Blocks name groups of operations: `Block` (a scope), `BlockFunction` (a decorator) and
#   `BeginBlock` (a module marker that lasts until the next block).
# - Stages put blocks on IPUs: explicitly with `Stage(...).ipu(n)`, or automatically with
#   `AutoStage.SameAsIpu` (the default) or `AutoStage.AutoIncrement`.
# - PopTorch checks the placement as it compiles: every op in a block, every block in a stage,
#   stage ids ascending in a pipeline, shared weights on one IPU in a pipeline, a power-of-two
#   number of IPUs.
# - `model.report()` gives the placement table, the diagram and the memory per IPU.
#
# **Next:** lesson 4 (pipelining) runs these stages as a pipeline.
#
# ## References
#
# - PopTorch user guide (SDK 3.4), "Multi-IPU execution strategies": "Annotations" (`Block`,
#   `BeginBlock`, `BlockFunction`, `Stage`, `AutoStage`):
#   https://docs.graphcore.ai/projects/poptorch-user-guide/en/latest/overview.html
# - Graphcore tutorial "PopTorch Parallel Execution Using Pipelining": graphcore/examples
#   (https://github.com/graphcore/examples), `tutorials/tutorials/pytorch/pipelining`.
# - Coming from GPUs: [docs/coming-from-gpus.md](../docs/coming-from-gpus.md).