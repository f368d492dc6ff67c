# %% [markdown]
# # Lesson 12: Custom operations
#
# PopTorch compiles the whole forward pass, loss included, into one graph for the IPU. Most
# models need nothing more than PyTorch's own ops, but some need to tell the compiler more:
# which tensor is the loss when you wrote it yourself, which convolutions to plan together,
# where to put an op PopTorch does not have, and which loop to keep as a loop on the device.
#
# **What you will learn**
# - `poptorch.identity_loss` and its reductions: why a hand-made loss needs it;
# - `poptorch.nop`, the op that is never optimised away;
# - `poptorch.custom_op`, with a Python implementation given to `poptorch.register_custom_op`;
# - `poptorch.MultiConv`: convolution branches planned together, and the simulated time saved;
# - `poptorch.for_loop`: a loop compiled once and run on the device.
#
# **Time:** about 40 minutes.
#
# **Prerequisites:** lesson 1 (basics: trainingModel, the loss inside forward) and lesson 11
# (reading a plan's time breakdown).
#
# **Coming from GPUs:** `custom_op` is the IPU's custom CUDA / C++ extension
# ([the GPU bridge](../docs/coming-from-gpus.md)).

# %%
import torch
import torch.nn as nn

from ipu_tutorials import poptorch
from ipu_tutorials.classroom.exercises.custom_ops import Regressor, reference_loss

torch.manual_seed(0)
x, target = torch.randn(16, 8), torch.randn(16, 4)


def train_one_step(model, lr=0.1):
    """One SGD step of `model` through the simulated IPU; returns the loss."""
    opts = poptorch.Options().showCompilationProgressBar(False)
    training = poptorch.trainingModel(model, opts, poptorch.optim.SGD(model.parameters(), lr=lr))
    try:
        return training(x, target)[1]
    finally:
        training.destroy()

# %% [markdown]
# ## identity_loss: marking a loss you wrote
#
# PopTorch recognises PyTorch's losses (`nn.CrossEntropyLoss`, `F.mse_loss`...) as the start of
# the backward pass. A loss you write as arithmetic is just more ops to it. `Regressor` returns
# `(output, loss_fn(output, target, weight))`; give it mean absolute error plus a weight
# penalty, written by hand:

# %%
try:
    train_one_step(Regressor(reference_loss))
except poptorch.Error as error:
    print(f"poptorch.Error: {error}")

# %% [markdown]
# Wrapping the total in `poptorch.identity_loss(total, reduction)` marks it: backward starts
# there with a gradient of ones.<!-- claim: L12-identity-loss --> One step then gives the
# weights plain PyTorch gives:

# %%
def marked_loss(out, target, weight):
    return poptorch.identity_loss(reference_loss(out, target, weight), reduction="mean")


torch.manual_seed(0)
on_ipu = Regressor(marked_loss)
train_one_step(on_ipu)
torch.manual_seed(0)
on_cpu = Regressor(reference_loss)
optimizer = torch.optim.SGD(on_cpu.parameters(), lr=0.1)
on_cpu(x, target)[1].backward()
optimizer.step()
print("same weights as plain PyTorch (within 1e-5):",
      torch.allclose(on_ipu.fc.weight, on_cpu.fc.weight, atol=1e-5))

# %% [markdown]
# The reduction applies to the tensor you pass: `"sum"` adds its elements, `"mean"` averages
# them, `"none"` keeps it as it is (backward then starts from a gradient of ones on every
# element, like `"sum"`). On the unreduced error the three give these losses and gradients:

# %%
steps = {}
for reduction in ("sum", "mean", "none"):
    def per_element(out, target, weight, reduction=reduction):
        return poptorch.identity_loss((out - target).abs(), reduction=reduction)

    torch.manual_seed(0)
    model = Regressor(per_element)
    before = model.fc.bias.detach().clone()
    loss = train_one_step(model, lr=1.0)
    steps[reduction] = (before - model.fc.bias).norm().item()
    print(f"{reduction:>4}: loss shape {tuple(loss.shape)}, bias moved by {steps[reduction]:.4f}")
print(f"sum / mean = {steps['sum'] / steps['mean']:.1f}; the error has {target.numel()} elements")

# %% [markdown]
# The cell above shows "sum" and "none" moving the weights by the same amount, as many times as
# far as "mean" as the error has elements. Pick the reduction your learning rate was tuned
# for.
#
# ## nop: an op that stays
#
# PopART removes ops that do nothing, such as a copy. `poptorch.nop(t)` returns `t`
# unchanged but is never removed by PopART's patterns or inlining:<!-- claim: L12-nop --> a
# fixed point in the graph to attach a debug print or an anchor to, or to keep two ops from
# being fused. Its values are its input's:

# %%
t = torch.arange(4.0)
print(poptorch.nop(t), torch.equal(poptorch.nop(t), t))

# %% [markdown]
# ## custom_op: an op of your own
#
# On an IPU, a custom op is a C++ PopART op with a Poplar implementation, compiled into a shared
# library and loaded with `ctypes.cdll.LoadLibrary`; the model calls it with
# `poptorch.custom_op(inputs, name, domain, domain_version, example_outputs, attributes)`.<!-- claim: L12-custom-op -->
# The simulator has no Poplar, so you give the op a Python implementation instead. Calling an op
# nobody registered says so:

# %%
class LeakyModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 4)

    def forward(self, x, target):
        y = self.fc(x)
        y = poptorch.custom_op([y], "LeakyRelu", "com.acme", 1, example_outputs=[y],
                               attributes={"alpha": 0.02})[0]
        return y, nn.functional.mse_loss(y, target)


try:
    train_one_step(LeakyModel())
except poptorch.Error as error:
    print(f"poptorch.Error: {error}")

# %% [markdown]
# `register_custom_op(name, domain, fn)` gives it one: `fn` receives the inputs and the
# attributes as keyword arguments, and autograd differentiates it, as PopART calls the op's
# grad op. The trained weights match PyTorch's own leaky ReLU:

# %%
poptorch.register_custom_op("LeakyRelu", "com.acme",  # simulator extra; on IPUs: ctypes.cdll.LoadLibrary("custom_ops.so")
                            lambda y, alpha: torch.where(y > 0, y, alpha * y))
torch.manual_seed(0)
custom = LeakyModel()
train_one_step(custom)
torch.manual_seed(0)
plain = nn.Sequential(nn.Linear(8, 4), nn.LeakyReLU(0.02))
optimizer = torch.optim.SGD(plain.parameters(), lr=0.1)
nn.functional.mse_loss(plain(x), target).backward()
optimizer.step()
print("custom op == nn.LeakyReLU after one step (within 1e-5):",
      torch.allclose(custom.fc.weight, plain[0].weight, atol=1e-5))

# %% [markdown]
# `example_outputs` tells PopTorch the shapes and types of the op's outputs before it runs; the
# simulator checks that the implementation returns exactly those.
#
# ## MultiConv: convolutions planned together
#
# An Inception-style block convolves one input with several kernels side by side. Planned one
# by one, each small convolution may not fill the IPU's tiles; inside
# `with poptorch.MultiConv():` Poplar plans them as one multi-convolution, executed in
# parallel<!-- claim: L12-multiconv -->, and the simulator's Parallel plan runs them side by
# side. `Branches` is such a block, a branch per kernel size:

# %%
from ipu_tutorials.classroom.explorers.custom_ops import KERNELS, compute_seconds

print("kernel sizes of the branches:", KERNELS)

for channels in (32, 128):
    alone, together = compute_seconds(4, channels, False), compute_seconds(4, channels, True)
    print(f"{channels:>3} channels: {alone * 1e6:8,.1f} µs one after another, "
          f"{together * 1e6:8,.1f} µs with MultiConv ({alone / together:.2f}x)")

# %% [markdown]
# `MultiConv()` also takes per-convolution settings: `.availableMemoryProportions([...])`,
# `.partialsTypes([...])`, `.planType(poptorch.MultiConvPlanType.Parallel or Serial)`,
# `.perConvReservedTiles(n)`, `.cycleBackOff(f)`,
# `.enableConvDithering([...])`.<!-- claim: L12-multiconv-options --> The simulator records
# them; only the plan type changes its cost model. Try the branches and widths:

# %%
from ipu_tutorials.classroom.explorers.custom_ops import multiconv_explorer

# alt: Bar chart of simulated IPU compute per call for 1 to 4 convolution branches of 32 channels,
#   one bar run one after another and one with MultiConv: from 2 branches on the MultiConv bar is
#   lower, about half at 3 and 4 branches; the chosen 3 branches are outlined.
multiconv_explorer(branches=3, channels=32)

# %% [markdown]
# ## for_loop: a loop on the device
#
# A Python `for` loop in `forward` is unrolled when PopTorch traces it: 100 iterations become
# 100 copies of the body in the graph. `poptorch.for_loop(count, body, inputs)` compiles the
# body once and runs it `count` times on the device; the body takes and returns the same number
# of tensors, each iteration's outputs feeding the next. The results equal the Python loop's:

# %%
class Recurrent(nn.Module):
    def __init__(self, loop_on_device: bool):
        super().__init__()
        self.cell, self.loop_on_device = nn.Linear(8, 8), loop_on_device

    def forward(self, h):
        step = lambda h: torch.tanh(self.cell(h))  # noqa: E731  (the loop's body)
        if self.loop_on_device:
            return poptorch.for_loop(10, step, [h])[0]
        for _ in range(10):
            h = step(h)
        return h


torch.manual_seed(0)
looped = Recurrent(loop_on_device=True)
unrolled = Recurrent(loop_on_device=False)
unrolled.load_state_dict(looped.state_dict())
opts = poptorch.Options().showCompilationProgressBar(False)
a, b = (poptorch.inferenceModel(m, opts.clone())(x) for m in (looped, unrolled))
print("for_loop == Python loop:", torch.allclose(a, b, atol=1e-6))

# %% [markdown]
# PopTorch supports `for_loop` in inference only; inside a `trainingModel` it refuses, and so
# does the simulator:<!-- claim: L12-for-loop-inference -->

# %%
class LoopLoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Recurrent(loop_on_device=True)

    def forward(self, h, target):
        out = self.inner(h)
        return out, nn.functional.mse_loss(out, target)


try:
    loop_loss = LoopLoss()
    poptorch.trainingModel(loop_loss, opts.clone(), poptorch.optim.SGD(
        loop_loss.parameters(), lr=0.1))(x, torch.zeros(16, 8))
except poptorch.Error as error:
    print(f"poptorch.Error: {error}")

# %% [markdown]
# ## What a real IPU would do
#
# - A real custom op is C++: a PopART op (shape inference, attributes, a grad op) and a Poplar
#   opx (the vertices that run on the tiles), compiled against the SDK and loaded with ctypes.
#   The simulator runs your Python function instead and costs it like any elementwise op; it
#   cannot tell you how fast your Poplar code would be.
# - PopTorch traces a `for_loop` body once, so Python side effects in the body (prints,
#   counters) happen once<!-- claim: L12-for-loop-once -->; the simulator runs the body in
#   Python `count` times, and its cost model charges `count` bodies of time. Code size is
#   the same either way here, because the simulator already shares the code of identical ops
#   (PopART's outlining); on hardware, outlining is a heuristic and `for_loop` is the
#   guarantee.
# - Poplar's multi-convolution planner splits the tiles between the convolutions; the
#   simulator's Parallel plan takes the slowest member's time, an optimistic bound, and ignores
#   the per-convolution memory and partials settings.
# - `nop` and `identity_loss` behave the same; on hardware `nop` also appears as an op in the
#   PopVision Graph Analyser, with its own (tiny) cost.
#
# **On a Bow Pod.** A custom op's Poplar code is compiled for the IPU architecture at hand. A
# Bow IPU runs the GC200's `ipu2` code unchanged (the Bow-2000 datasheet calls it backwards
# compatible with the IPU-M2000, "with no code changes"); `ipu21` is the C600 card's
# architecture, Mk2 with FP8 support.<!-- claim: L12-bow-arch --> Here the op runs its
# Python implementation on any simulated IPU.
#
# ## Summary
#
# - A hand-made loss needs `poptorch.identity_loss(total, reduction)`; the reduction scales the
#   gradients: "sum" and "none" by the number of elements relative to "mean".
# - `poptorch.nop(t)` is an identity that survives every optimisation.
# - `poptorch.custom_op(...)` calls an op PopTorch lacks; here `register_custom_op` gives it a
#   Python body, and autograd its gradient.
# - `with poptorch.MultiConv():` plans parallel convolutions together.
# - `poptorch.for_loop(count, body, inputs)` runs a loop on the device, in inference.
#
# ## Exercises

# %%
from ipu_tutorials.classroom.exercises import custom_ops as exercises

# %% [markdown]
# ### Exercise 12.1: a custom loss with identity_loss
#
# Write `my_loss(out, target, weight)` for `Regressor`: the mean absolute error plus 0.01 times
# the sum of the squared weights, marked as the loss. The check trains one step through the
# simulator and compares the weights with plain PyTorch's.

# %% tags=["answer"]
# starting code: exercises.custom_loss.starting_code

# %%
exercises.custom_loss.check(my_loss)

# %% [markdown]
# ### Exercise 12.2: a for_loop body
#
# Newton's method finds sqrt(a) by repeating x <- (x + a / x) / 2 from x = a. Write
# `body(x, a)` for `poptorch.for_loop`; the check runs 6 iterations in an inference model on
# a = 1 ... 100 and compares the result with `torch.sqrt`.

# %% tags=["answer"]
# starting code: exercises.newton_body.starting_code

# %%
exercises.newton_body.check(body)

# %% [markdown]
# **Next:** lesson 13 (IPUConfig) configures all of this for Hugging Face models with
# optimum-graphcore's `IPUConfig`.
#
# ## References
#
# - PopTorch user guide (SDK 3.4), "PopTorch ops" (`identity_loss`, `MultiConv`, `nop`),
#   "Creating custom ops":
#   https://docs.graphcore.ai/projects/poptorch-user-guide/en/latest/overview.html; `for_loop`:
#   https://docs.graphcore.ai/projects/poptorch-user-guide/en/latest/reference.html
# - PopART user guide, "Custom operators": https://docs.graphcore.ai/projects/popart-user-guide/
# - Graphcore example "Using Custom Operators in PyTorch": graphcore/examples
#   (https://github.com/graphcore/examples), `tutorials/feature_examples/pytorch/custom_op`.
# - Coming from GPUs: [docs/coming-from-gpus.md](../docs/coming-from-gpus.md).