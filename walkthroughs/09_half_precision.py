# %% [markdown]
# # Lesson 9: Half precision
#
# A GC200 IPU's peak arithmetic is four times higher in float16 than in float32 (about 250
# against 62.5 TFLOP/s: Graphcore's IPU-POD128 datasheet lists 31.955 petaFLOPS FP16.16 and
# 7.989 petaFLOPS FP32 for its 128 GC200s), and float16 tensors take half the
# memory.<!-- claim: L09-gc200-peak --> The catch is range: float16 cannot hold numbers below
# its smallest subnormal (printed below), and late in training many gradients are smaller than
# that. This lesson uses real float16 numbers to show the problem, and PopTorch's tools against
# it. The simulator computes each float16 operation in float32 and rounds its result to float16,
# as the IPU does, so it runs at float32 speed.
#
# **What you will learn**
# - the two ways to run a PopTorch model in float16, and how PopTorch 3.x treats mixed inputs;
# - how much memory float16 weights, gradients and partials save in the plan;
# - how small gradients underflow, and how loss scaling (and velocity scaling for SGD) saves
#   them;
# - what `accum_type` and the partials type control, and what stochastic rounding does.
#
# **Time:** about 55 minutes.
#
# **Prerequisites:** lessons 4 and 8. Coming from GPUs: this is AMP and loss scaling
# ([docs/coming-from-gpus.md](../docs/coming-from-gpus.md#mixed-precision-and-loss-scaling)).

# %%
import copy

import matplotlib.pyplot as plt
import torch

from ipu_tutorials import poptorch, tutorial
from ipu_tutorials.classroom.explorers.precision import (accumulate_in_half, backward_in,
                                                         draw_histogram, representable, small_loss,
                                                         survival)
from ipu_tutorials.tutorial.datasets import load_mnist
from ipu_tutorials.tutorial.models import Network, TrainingModelWithLoss

torch.manual_seed(0)
sharded = tutorial.strategy("sharded")

# %% [markdown]
# ## Two ways to use float16
#
# `model.half()` turns every weight into float16: the most memory saved, but small weight
# updates can be lost. The other way keeps float32 weights and feeds float16 inputs. Plain
# PyTorch's `nn.Linear` and `nn.Conv2d` refuse to mix the two:

# %%
model = Network()
images = torch.randn(8, 1, 28, 28).half()
try:
    model(images)
except RuntimeError as error:
    print(f"PyTorch: {error}")

# %% [markdown]
# PopTorch 3.0 and later (Poplar SDK 3.0+) type each mixed op instead, giving it the type
# torch's *meta* kernels give it (shapes and types only; PopTorch 3.4 runs torch 2.0.1's),
# where the CPU kernels above refuse. A convolution casts its float32 weights down to the
# float16 input. A matrix product computes in float32 and returns the meta kernel's type:
# `nn.Linear` with a bias on a batch of vectors (a 2-D input) is `addmm`, whose meta kernel
# promotes to float32; on one vector, or without a bias, it is a plain product, which keeps the
# input's float16. Elementwise ops promote to float32. PopTorch's own `half_float_test.py`
# checks the float16 cases (a `Conv1d`, a `Linear` on one vector); no PopTorch test checks the
# `addmm` case, whose float32 we read from the sources, not from an
# IPU.<!-- claim: L09-mixed-upcast --> To choose what computes in float16, cast on purpose:
# `model.half()`, or one layer's `.half()`, and inputs to match.

# %%
opts = poptorch.Options().setExecutionStrategy(sharded).showCompilationProgressBar(False)
for name, net in (("float32 weights", model), ("model.half()", copy.deepcopy(model).half())):
    seen = {}  # the first convolution's output type, noted by a forward hook
    hook = net.layer1.register_forward_hook(lambda module, inputs, out: seen.update(conv=out.dtype))
    output = poptorch.inferenceModel(net, opts.clone())(images)
    hook.remove()
    print(f"{name:>16}: first conv {seen['conv']}, output {output.dtype}, "
          f"weights {net.layer1.conv.weight.dtype}")

# %% [markdown]
# Older PopTorch code may call `opts.Precision.halfFloatCasting(...)`. Under the tracing
# frontend, the only one before 3.0, its default cast the float32 weights *down* to float16;
# 3.0 made the dispatcher the default frontend, which upcasts, and from 3.1 the option only
# logs a deprecation warning.<!-- claim: L09-half-float-casting --> The simulator warns too
# (it still honours `FloatDowncastToHalf`, the old default, so that old tutorials can be
# compared: [docs/differences.md](../docs/differences.md)).

# %% [markdown]
# ## Memory saved
#
# Compile the training model three ways and compare the plan for the first IPU. Float16 weights
# halve the weights; the gradient accumulators follow the optimizer's `accum_type`, float32 by
# default, so they halve only when asked.<!-- claim: L09-accum-type-default --> Graphcore's
# mixed-precision tutorial asks for it: with a float16 model, every `poptorch.optim` optimizer
# but SGD needs `accum_type=torch.float16`.<!-- claim: L09-tutorial-accum-type --> Graphcore's
# own ViT pretraining configuration nevertheless trains a float16 ViT with LAMB's accumulators
# and moments in float32, so the middle row below is a real (if memory-hungry) setting; this
# lesson follows the tutorial from here on.<!-- claim: L09-vit-float32-accum -->

# %%
def first_ipu(half_model, accum_type=torch.float32, partials=torch.float32):
    net = Network().half() if half_model else Network()
    opts = poptorch.Options().setExecutionStrategy(sharded).showCompilationProgressBar(False)
    opts.Precision.setPartialsType(partials)
    optimizer = poptorch.optim.AdamW(net.parameters(), accum_type=accum_type)
    training_model = poptorch.trainingModel(TrainingModelWithLoss(net), opts, optimizer)
    data = torch.randn(40, 1, 28, 28)
    training_model.compile(data.half() if half_model else data, torch.randint(0, 10, (40,)))
    return training_model.plan.memory[0], training_model  # simulator extra


rows = [("float32 weights", first_ipu(False)[0]),
        ("float16 weights, float32 accum", first_ipu(True)[0]),
        ("float16 weights, float16 accum", first_ipu(True, torch.float16)[0])]
print(f"{'':<30}{'weights':>10}{'gradients':>11}{'optimizer':>11}")
for name, m in rows:
    print(f"{name:<30}{m.weights:>10,}{m.gradients:>11,}{m.optimizer:>11,}")

# %% [markdown]
# AdamW's two moments stay float32 unless you set `first_order_momentum_accum_type` and
# `second_order_momentum_accum_type`.<!-- claim: L09-moment-types --> With float16
# accumulators PopTorch also switches the mean over micro-batches to a running mean, whose
# buffer never grows past the largest micro-batch gradient:<!-- claim: L09-running-mean -->

# %%
_, half_model = first_ipu(True, torch.float16)
strategy = half_model.options.Training.meanAccumulationAndReplicationReductionStrategy
print(f"MeanReductionStrategy.{strategy.name}")

# %% [markdown]
# ## Small gradients underflow
#
# Float16's range, from `torch.finfo`:

# %%
tiny, normal, largest = representable(torch.float16)
print(f"smallest subnormal {tiny:.3g}, smallest normal {normal:.3g}, largest {largest:,.0f}")

# %% [markdown]
# Gradients get small once a network fits its data, because they scale with the loss. Here
# the tutorial network has trained on one batch until its loss is a few times 1e-5. The histogram
# shows its gradients on a log scale against float16's regions: red underflows to zero, orange
# keeps fewer significant bits.

# %%
print(f"loss {small_loss():.2g}")
result = survival(1.0, torch.float16)
# alt: Histogram of the small-loss network's gradients by log2 of |gradient x loss scale| at loss
#   scale 1, over float16's bands: underflow to zero (below -24), subnormal with fewer bits (-24 to
#   -14) and overflow to infinity (above 16). Most gradients sit in the subnormal band, a small
#   tail in the underflow band, none near overflow.
fig, ax = plt.subplots(figsize=(10, 3.5))
draw_histogram(result, torch.float16, 1.0, ax)
plt.show()
print(f"{result['survived'] / result['total']:.1%} of {result['total']:,} gradients survive a "
      f"float16 backward pass; {result['lost']:,} become zero")

# %% [markdown]
# `survival` really runs the backward pass in float16 and compares it with an exact (float64)
# one, so it counts every underflow on the way, not just in the final gradients. Each float16
# result is rounded from a float64 sum, so these counts are the same on every CPU.
#
# ## Loss scaling
#
# Multiply the loss by a constant before the backward pass and every gradient grows by the same
# factor, out of the underflow region (Micikevicius et al. 2018, section 3.2). PopTorch
# multiplies the gradients by the inverse scale before it updates the optimizer state, so
# "neither the training nor the hyper-parameters are affected" beyond fewer underflows (PopTorch
# user guide, "Loss scaling"):
# `poptorch.optim.AdamW(..., loss_scaling=1024)`.<!-- claim: L09-loss-scaling --> Too large a
# scale overflows instead, which the same paper notes is the only limit on the factor:

# %%
print(" loss scale  survive  underflow  overflow")
for scale in (1, 64, 1024, 8192, 65536):
    r = survival(float(scale), torch.float16)
    print(f"{scale:>11,}  {r['survived'] / r['total']:>7.2%}  {r['lost']:>9,}  {r['overflowed']:>8,}")
print(f"float16's largest number: {torch.finfo(torch.float16).max:,.0f}; this network's "
      f"largest gradient x 65,536: {float(r['reference'].abs().max()) * 65536:.1f}")

# %% [markdown]
# Here the first thing to overflow is the scale itself. The backward pass starts from the
# gradient of (loss x scale) with respect to the loss, which is the scale; 65,536 is past
# float16's largest number, so in a float16 model every gradient after it is inf or nan,
# although the gradients themselves, times 65,536, stay far below it (the second line). A
# network with larger gradients overflows at a smaller scale, in the gradients themselves.
#
# Powers of two scale without rounding (multiplying by 2^k only changes the exponent, until
# something overflows or underflows). Graphcore's mixed-precision tutorial uses 1024 for a
# small image classifier<!-- claim: L09-tutorial-loss-scale -->; its BERT pretraining
# configurations (graphcore/examples, `nlp/bert/pytorch/configs_pretraining.yml`) range from
# 16 to 32768, and some use automatic loss scaling instead
# (`opts.Training.setAutomaticLossScaling(True)`, a preview feature in PopTorch 3.x), the
# IPU's version of the dynamic loss scaling of Micikevicius et al. and of
# `torch.cuda.amp.GradScaler`.<!-- claim: L09-bert-loss-scales --> Loss scaling saves the
# gradients; the weights themselves are a separate question. Train the tutorial network for
# one epoch from the same start twice, with float32 and with float16 weights and inputs (loss
# scale 1024, and float16 accumulators with the float16 weights, as the tutorial asks; float16
# runs at about half speed on a CPU), and compare:

# %%
def one_epoch(dtype):
    torch.manual_seed(0)
    train_set = load_mnist(train=True, source="embedded")
    train_set.images = train_set.images.to(dtype)
    net = Network().to(dtype)
    opts = tutorial.training_options("pipelined", device_iterations=10, gradient_accumulation=10)
    opts.showCompilationProgressBar(False)
    optimizer = poptorch.optim.AdamW(net.parameters(), lr=0.001, loss_scaling=1024.0,
                                     accum_type=dtype)
    training_model = poptorch.trainingModel(TrainingModelWithLoss(net), opts, optimizer)
    data = poptorch.DataLoader(opts, train_set, batch_size=40, shuffle=True)
    return tutorial.train(training_model, data, epochs=1, progress=False, log=None)[0]


def report(dtype):
    stats = one_epoch(dtype)
    print(f"{str(dtype):<14} after one epoch: loss {stats.loss:.2f}, "
          f"training accuracy {stats.accuracy:.0f}%")


report(torch.float32)

# %%
report(torch.float16)  # a separate cell: each epoch takes a while on a CPU

# %% [markdown]
# With loss scaling, the two runs are level after one epoch: compare epochs with epochs (the
# first epoch of a run is far below the later epochs of lesson 4). Over long runs float16
# weights do lose something: every weight update is rounded to float16, and an update smaller
# than half the spacing between float16 numbers near the weight rounds away entirely (the
# stochastic-rounding demo below shows the same effect on a sum). Graphcore's BERT turns on
# `opts.Precision.enableStochasticRounding(True)`, which makes each rounded update
# right on average, and its BERT keeps both of LAMB's moments in float32 (its accumulators in
# float16).<!-- claim: L09-bert-precision --> The
# run above leaves stochastic rounding off, so its float16 figure is the round-to-nearest one;
# the simulator implements both (see "Stochastic rounding" below).
#
# ## Velocity scaling for SGD
#
# SGD with momentum keeps a velocity per weight. PopTorch has two variants. The default keeps
# separate float32 (or `accum_type`) gradient accumulators and `velocity_accum_type` velocities,
# and ignores `velocity_scaling`. With `use_combined_accum=True` one tensor per weight holds
# both: each micro-batch's gradient goes in with the loss scale removed and the velocity scale
# applied, and PopTorch ignores both accumulation types.<!-- claim: L09-combined-accum --> The
# simulator keeps that tensor in the weight's type, so in a float16 model the velocity is stored
# in float16, where it underflows like the gradients; `velocity_scaling` stores it multiplied by
# a constant, and the update divides it back out. One update of the float16 network from
# gradients that loss scaling (1024) kept:

# %%
def zero_velocities(velocity_scaling):
    net = backward_in(torch.float16, loss_scale=1024.0)  # its float16 loss-scaled gradients
    sgd = poptorch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9, loss_scaling=1024.0,
                             use_combined_accum=True, velocity_scaling=velocity_scaling)
    grads = {p: p.grad for p in net.parameters()}
    sgd.apply_gradients(grads, scale=1 / 1024.0)  # simulator extra: the update an IPU call makes
    return sum(int(((sgd.state[p]["momentum_buffer"] == 0) & (g != 0)).sum())  # simulator extra
               for p, g in grads.items())


for scaling in (1.0, 1024.0):
    print(f"velocity_scaling {scaling:>6,.0f}: {zero_velocities(scaling):,} of the surviving "
          f"gradients' velocities stored as zero")

# %% [markdown]
# ## Partials
#
# Matmuls and convolutions accumulate their partial sums in float32 by default, even on
# float16 inputs: PopLibs documents `partialsType` "[=float]" (poplin's Convolution.hpp and
# MatMul.hpp).<!-- claim: L09-partials-default --> Graphcore's mixed-precision tutorial says
# instead that partials default to the input's type; the library sources say float, and
# Graphcore's published BERT configuration sets half partials explicitly
# (`enable_half_partials: True`).<!-- claim: L09-tutorial-partials -->
# `opts.Precision.setPartialsType(torch.half)` reduces the memory those sums take "at the cost
# of precision", as its docstring says:<!-- claim: L09-set-partials-type -->

# %%
for partials in (torch.float32, torch.float16):
    memory, _ = first_ipu(True, torch.float16, partials)
    print(f"partials {str(partials):<14} temporaries on IPU 0: {memory.temporaries:,} bytes")

# %% [markdown]
# The cost in accuracy is real in the simulator too. With float partials it sums in float32
# and rounds once, as the IPU does. With half partials it rounds each block of 16 products'
# sum to float16 and adds the blocks in float16 (our approximation of the IPU's partial sums).
# A layer that sums 4,096 products, against the exact result:

# %%
torch.manual_seed(0)
dot = torch.nn.Linear(4096, 1, bias=False).half()
dot.weight.data = torch.rand(1, 4096).half() / 64
x = torch.rand(32, 4096).half()
exact = x.double() @ dot.weight.double().t()
for partials in (torch.float32, torch.float16):
    opts = poptorch.Options().showCompilationProgressBar(False)
    opts.Precision.setPartialsType(partials)
    out = poptorch.inferenceModel(dot, opts)(x)
    error = ((out.double() - exact).abs() / exact).mean().item()
    best = int((out == exact.half()).sum())
    print(f"partials {str(partials):<14} mean relative error {error:.1e}; "
          f"{best} of {len(x)} outputs are the exact sum rounded to float16")

# %% [markdown]
# ## Stochastic rounding
#
# Adding a small number to a large one in float16 rounds the small one away: an addend below
# half of float16's step at 1.0 rounds back to 1.0 every time. The IPU can round up or down at
# random instead, with chances proportional to the distance, so that the sum is right on average
# (`opts.Precision.enableStochasticRounding(True)`; PopTorch recommends it for training, not for
# inference, where its randomness is unwanted).<!-- claim: L09-stochastic-rounding --> Many
# additions of a small addend to 1.0:

# %%
addend, count = 1e-4, 10_000
one = torch.tensor(1.0, dtype=torch.half)
print(f"float16's step at 1.0: {torch.finfo(torch.float16).eps:.3g}; "
      f"1.0 + {addend:g} = {float(one + addend)}; {count:,} additions of {addend:g}:")
for stochastic in (False, True):
    total = accumulate_in_half(addend, count, stochastic)
    print(f"{'stochastic' if stochastic else 'round to nearest':>16}: {total:.4f} "
          f"(exact: {1 + addend * count:.4f})")

# %% [markdown]
# ## Explore
#
# Slide the loss scale and switch between float16, bfloat16 (float32's range, fewer bits) and
# float32. Watch where the histogram sits against the red and purple regions, and where the
# dashed line, the loss scale itself, sits: past 2^15 it is in float16's overflow band. With
# bfloat16 nothing underflows, but 120 gradients still become zero at every scale: bfloat16
# keeps 8 significant bits, so the correct class's probability, 1 - 3e-5, rounds to exactly
# 1, and the gradient through it is exactly 0 (the first line below). That is rounding, which
# no loss scale undoes.

# %%
print(f"the loss in float64: {small_loss():.2g}; in bfloat16: {small_loss(torch.bfloat16)}")

# %% [markdown]
# bfloat16 is there for comparison with other accelerators only: the GC200 and Bow IPUs
# compute in IEEE float16 and float32 (the IPU programmer's guide; the C600's IPU, PopTorch's
# version 21, adds FP8),<!-- claim: L09-ipu-float-types -->
# and PopTorch 3.4 converts a bfloat16 input to float32 on the host before copying it to the
# IPU (`PoplarExecutable.cpp`; its `CastUnsupportedInputs` pass, which would cast it to
# float16, is defined but no longer called).<!-- claim: L09-bfloat16-input --> On an IPU the
# choice is float16 with loss scaling. The simulator runs a bfloat16 model in bfloat16, as
# PyTorch does on a CPU, which no IPU does ([docs/differences.md](../docs/differences.md)).

# %%
from ipu_tutorials.classroom import precision_explorer

# alt: The precision explorer's histogram of the network's gradients by log2 of |gradient x loss
#   scale| for float16 at loss scale 1, over the underflow, subnormal and overflow bands: most
#   gradients sit in the subnormal band and a small tail in the underflow band, far left of the
#   overflow band.
precision_explorer(loss_scale_log2=0, dtype="float16")

# %% [markdown]
# ## What a real IPU would do, and where the simulator differs
#
# The simulator runs every float16 operation in float32 and rounds its result to float16 (to
# nearest even; overflow gives inf, underflow zero), so every tensor you can look at holds the
# float16 values the IPU would hold, and underflow, overflow and loss scaling are real. With
# float partials that is exactly what the IPU's matmuls and convolutions do: sum in float32,
# round once. Half partials are approximated (blocks of 16 products, an assumption of ours,
# not a published figure), so expect the same size of error, not the same bits.
# `enableStochasticRounding` rounds with a generator seeded from `opts.randomSeed`, so runs
# are reproducible; the IPU's hardware generator draws different bits. The cost model runs
# float16 matmuls at four times the float32 rate, as a GC200 does.
#
# On a Bow Pod the numbers above would be the same (float16 is IEEE binary16 on every IPU);
# what changes is speed (a Bow-2000's four IPUs give 1.4 petaFLOPS FP16.16, about 350
# TFLOP/s each against a GC200's 250)<!-- claim: L09-bow-peak --> and the loss scale a large
# model needs, which is found by trying, or by `opts.Training.setAutomaticLossScaling(True)`.
#
# ## Exercises

# %%
from ipu_tutorials.classroom.exercises import half_precision as exercises

# %% [markdown]
# ### Exercise 9.1: the smallest loss scale that saves every gradient
#
# The table above shows one gradient of this network still underflowing at a loss scale of
# 1,024 and none at 8,192. Which is the smallest power of two at which every gradient survives
# a float16 backward pass (and none overflows)? The precision explorer answers it: move its
# slider.

# %% tags=["answer"]
# starting code: exercises.loss_scale.starting_code

# %%
exercises.loss_scale.check(my_loss_scale)

# %% [markdown]
# ### Exercise 9.2: smaller partials
#
# Build a `poptorch.Options` that shrinks the temporary memory of the tutorial network's
# matmuls and convolutions.

# %% tags=["answer"]
# starting code: exercises.half_partials.starting_code

# %%
exercises.half_partials.check(my_options)

# %% [markdown]
# ## Summary
#
# - To compute in float16, cast on purpose: `model.half()` (or one layer's `.half()`) and
#   float16 inputs. Since PopTorch 3.0 a float16 input meeting float32 weights is typed op by
#   op as torch's meta kernels type it (convolutions cast their weights to float16, `nn.Linear`
#   with a bias on a batch of vectors promotes to float32); `halfFloatCasting` is deprecated.
# - Float16 halves weights; `accum_type=torch.float16` (which Graphcore's tutorial asks for
#   with a float16 model) halves the gradient accumulators and switches to a running mean;
#   half partials shrink matmul working memory.
# - Small gradients underflow in float16. A loss scale (a power of two, chosen so nothing
#   overflows, the scale itself included) keeps them, and velocity scaling does the same for
#   the combined SGD accumulator.
# - Stochastic rounding keeps small updates on average.
#
# **Next:** lesson 10 (replication) runs copies of a model side by side and adds up their
# gradients.
#
# ## References
#
# - PopTorch user guide (SDK 3.4), "16-bit float support" and "16-bit float migration"
#   (float16 ops since PopTorch 3.0, the deprecated `halfFloatCasting`), and "Optimizers":
#   "Loss scaling", "Velocity scaling", "Accumulation types":
#   https://docs.graphcore.ai/projects/poptorch-user-guide/en/latest/supported_ops.html and
#   https://docs.graphcore.ai/projects/poptorch-user-guide/en/latest/overview.html
# - Graphcore tutorial "Half and mixed precision in PopTorch" (loss scale 1024, partials,
#   stochastic rounding): graphcore/examples, `tutorials/tutorials/pytorch/mixed_precision`.
# - Graphcore's BERT loss scales: graphcore/examples, `nlp/bert/pytorch/configs_pretraining.yml`.
# - Memory and performance optimisation guide, "Partials type" and stochastic rounding:
#   https://docs.graphcore.ai/projects/memory-performance-optimisation/
# - GC200 peak FLOP/s: the IPU-POD128 datasheet,
#   https://docs.graphcore.ai/projects/ipu-pod128-datasheet/en/latest/product-description.html;
#   Bow: https://docs.graphcore.ai/projects/bow-2000-datasheet/en/latest/overview.html
# - PopTorch 3.4's handling of bfloat16 inputs: graphcore/poptorch at tag sdk/poptorch/3.4.0,
#   `poptorch/source/PoplarExecutable.cpp`.
# - P. Micikevicius et al., "Mixed Precision Training", ICLR 2018 (arXiv:1710.03740): float32
#   master weights, loss scaling (section 3.2), float32 accumulation.
# - Coming from GPUs: [docs/coming-from-gpus.md](../docs/coming-from-gpus.md).
