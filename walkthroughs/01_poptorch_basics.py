# %% [markdown]
# # Lesson 1: PopTorch basics: porting a model
#
# **The course.** The lessons take a PyTorch user from this first port to planning a BERT-size
# model on a simulated Pod16. Each one runs on a laptop CPU: the numerics are real PyTorch, and
# a simulator of Graphcore IPUs says where each layer would run, whether it fits and how long a
# step would take. The course map ([docs/course.md](../docs/course.md)) lists what each lesson
# teaches, its explorer, its time, and the order to take them in.
#
# This lesson ports a small MNIST classifier from PyTorch to PopTorch, the library that runs
# PyTorch models on IPUs. The lessons' PopTorch code would run on real hardware with only its
# import changed (`from ipu_tutorials import poptorch` here, `import poptorch` there); the few
# names PopTorch lacks, such as `training.plan` below, are marked *simulator extras* where
# they first appear.<!-- claim: L01-portable -->
#
# **What you will learn**
# - `poptorch.trainingModel` and `poptorch.inferenceModel`, and why the loss moves inside
#   `forward`;
# - what tracing does to a Python `if` on a tensor's value, and how `torch.where` fixes it;
# - `poptorch.isRunningOnIpu`;
# - how weights move between the host and the device: implicit copies, `copyWeightsToDevice`,
#   `copyWeightsToHost`, `detachFromDevice`;
# - `compileAndExport`, `poptorch.load` and `enableExecutableCaching`;
# - how batch size and device iterations change the cost of one call.
#
# **Time:** about 65 minutes.
#
# **Prerequisites:** PyTorch: modules, a training loop, `DataLoader`. Nothing about IPUs.
#
# **Coming from GPUs:** one `trainingModel` call is a whole compiled training step, like
# `torch.compile` of forward, backward and `optimizer.step()` ([the GPU
# bridge](../docs/coming-from-gpus.md)).

# %%
import os
import tempfile
import warnings

import torch

from ipu_tutorials import poptorch
from ipu_tutorials.tutorial.datasets import load_mnist

_ = torch.manual_seed(0)  # the same numbers on every run
train_set = load_mnist(train=True, source="embedded")
test_set = load_mnist(train=False, source="embedded")
print(train_set, test_set, sep="\n")

# %% [markdown]
# ## The model, with its loss inside `forward`
#
# On an IPU, one call to a training model runs the whole step on the device: forward pass,
# loss, backward pass and weight update, compiled into one program. So the loss cannot be
# computed on the host after `forward` returns: it goes inside `forward`, which returns it
# beside the output.<!-- claim: L01-loss-in-forward --> Without labels, the same module
# serves for inference:

# %%
# show: ipu_tutorials.tutorial.models.DigitClassifierWithLoss


model = DigitClassifierWithLoss()
print(f"{sum(p.numel() for p in model.parameters()):,} parameters")

# %% [markdown]
# ## Wrapping it for training
#
# `poptorch.Options()` holds every setting of the run (by default one replica and one step per
# call).<!-- claim: L01-options-defaults --> `poptorch.DataLoader` is PyTorch's DataLoader that
# also knows these options<!-- claim: L01-dataloader -->, and `poptorch.trainingModel` wraps the
# model with an optimizer. The first call compiles:<!-- claim: L01-compile-on-first-call -->

# %%
opts = poptorch.Options().randomSeed(0).showCompilationProgressBar(False)
loader = poptorch.DataLoader(opts, train_set, batch_size=16, shuffle=True)
training = poptorch.trainingModel(model, opts, poptorch.optim.SGD(model.parameters(), lr=0.05))

print("compiled before the first call:", training.isCompiled())
images, labels = next(iter(loader))
output, loss = training(images, labels)
print("compiled after it:", training.isCompiled())
print(f"output {tuple(output.shape)}, loss {loss.item():.3f}")

# %% [markdown]
# That call already ran the backward pass and the update. The training loop keeps only the
# calls, here for 200 steps of 16 digits:

# %%
losses = []
for step, (images, labels) in zip(range(200), loader):
    _, loss = training(images, labels)
    losses.append(loss.item())
print(f"mean loss of the first 20 steps {sum(losses[:20]) / 20:.3f}, "
      f"of the last 20 {sum(losses[-20:]) / 20:.3f}")

# %% [markdown]
# There is no `loss.backward()` and no `optimizer.step()` any more. Calling `backward()` on an
# output, as a PyTorch loop would, is refused with the reason, in PopTorch's
# words:<!-- claim: L01-backward-refused -->

# %%
try:
    loss.backward()
except poptorch.Error as error:
    print(error)

# %% [markdown]
# ## The same numbers as PyTorch
#
# The simulator computes in PyTorch, so one training call equals one plain PyTorch step from
# the same weights on the same batch:

# %%
def one_plain_step(weights, images, labels):
    plain = DigitClassifierWithLoss()
    plain.load_state_dict(weights)
    optimizer = torch.optim.SGD(plain.parameters(), lr=0.05)
    _, loss = plain(images, labels)
    loss.backward()
    optimizer.step()
    return plain


before = {k: v.clone() for k, v in model.state_dict().items()}
plain = one_plain_step(before, images, labels)
training(images, labels)
gap = max((p - q).abs().max().item() for p, q in zip(model.parameters(), plain.parameters()))
print(f"IPU step == PyTorch step within 1e-5: {gap < 1e-5}")

# %% [markdown]
# ## What one call costs
#
# Compiling also planned the run: memory on the IPU and a simulated time for one call. The
# cell below prints where that time goes.
#
# **Simulator extras.** `training.plan` is not PopTorch: it is the simulator's view of the
# compiled program. Every line of the lessons that uses a name real PopTorch lacks carries the
# comment `# simulator extra` (the course checks this as it runs each lesson), with the real
# way beside it (`on IPUs: ...`) where one exists; in prose it is marked *(simulator extra)*.
# Every other line that calls PopTorch is PopTorch's API and runs unchanged on IPUs (what
# the simulator prints for a PopTorch object can differ: docs/differences.md). On hardware,
# where a call's time goes is
# read from `training.getPerfCounters()` (time stamps of each input's and output's transfer
# between the host and the IPU)<!-- claim: L01-perf-counters --> and from a PopVision System
# Analyser trace.

# %%
plan = training.plan  # simulator extra; on IPUs: getPerfCounters() and PopVision reports
print(f"one call: {plan.call_seconds * 1e6:,.0f} µs simulated, "
      f"{plan.samples_per_second:,.0f} samples/s")
for part, seconds in plan.breakdown().items():
    print(f"  {part:22s} {seconds * 1e6:7,.0f} µs ({seconds / plan.call_seconds:4.0%})")

# %% [markdown]
# How far to trust a simulated throughput: on eleven published Graphcore runs it was not
# calibrated on, the simulator lands between 0.80x and 1.56x of the published figure, nine
# of them within 1.25x (docs/cost-model.md, "Validation against runs it was not calibrated on").

# %% [markdown]
# The IPU computes for a small part of the call: the rest is the host sending 16 images and
# preparing the next ones. The explorer at the end of the lesson shows how to amortise that.
#
# ## `isRunningOnIpu`
#
# `poptorch.isRunningOnIpu()` is `True` while a wrapped model runs and `False` in plain
# PyTorch.<!-- claim: L01-is-running-on-ipu --> Use it for code that only makes sense on one
# side, such as a CPU-only check:

# %%
class Probe(torch.nn.Module):
    def forward(self, x):
        return x + 1 if poptorch.isRunningOnIpu() else x


probe, ones = Probe(), torch.ones(2)
print("plain PyTorch:", probe(ones).tolist())
print("inferenceModel:", poptorch.inferenceModel(probe, opts)(ones).tolist())
print("outside any model:", poptorch.isRunningOnIpu())

# %% [markdown]
# ## Tracing freezes Python control flow
#
# PopTorch compiles the model by running `forward` once, with the first inputs, and recording
# the tensor operations. Python code that reads a tensor's value, such as `if x.sum() > 0:`,
# runs only during that recording: the graph keeps the branch the first inputs
# took.<!-- claim: L01-frozen-control-flow --> The simulator does the same, and warns when it
# compiles:

# %%
class Gate(torch.nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x * 2
        return -x


positive, negative = torch.ones(4), -torch.ones(4)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    gate = poptorch.inferenceModel(Gate(), opts)
    gate(positive)
print(next(w.message for w in caught if "reads tensor values" in str(w.message)))

# %% [markdown]
# The second call's inputs would take the other branch in PyTorch. The compiled graph does not:

# %%
print("PyTorch on negative input:", Gate()(negative).tolist())
print("IPU on negative input:    ", gate(negative).tolist())

# %% [markdown]
# The fix is to compute on the device: `torch.where(condition, a, b)` evaluates both branches
# and selects with a tensor condition, so nothing is read in Python and nothing is frozen:

# %%
class DeviceGate(torch.nn.Module):
    def forward(self, x):
        return torch.where(x.sum() > 0, x * 2, -x)


device_gate = poptorch.inferenceModel(DeviceGate(), opts)
for x in (positive, negative):
    print(f"input {x.tolist()}: IPU {device_gate(x).tolist()} == PyTorch: "
          f"{torch.equal(device_gate(x), Gate()(x))}")

# %% [markdown]
# ## Training, then inference: implicit weight copies
#
# An `inferenceModel` of the same module runs on the device with its own copy of the weights.
# When a training model has changed them, PopTorch copies them to the inference model
# before its next call.<!-- claim: L01-implicit-copies --> Here, the test accuracy on the IPU
# equals the accuracy of the host's module in plain PyTorch, and it follows further training:

# %%
test_images, test_labels = test_set.images[:512], test_set.labels[:512]
inference = poptorch.inferenceModel(model, opts)


def accuracy(predict):
    return (predict(test_images).argmax(1) == test_labels).float().mean().item()


print(f"after 200 steps: IPU {accuracy(inference):.1%}, host PyTorch {accuracy(model):.1%}")
for step, (images, labels) in zip(range(100), loader):
    training(images, labels)
print(f"after 300 steps: IPU {accuracy(inference):.1%}, host PyTorch {accuracy(model):.1%}")

# %% [markdown]
# ## When to copy by hand
#
# The implicit copy covers weights changed by a training model. Weights changed any other way
# on the host, for example by a step of a plain PyTorch optimizer or by editing them, stay
# behind on the device until `copyWeightsToDevice()`:<!-- claim: L01-explicit-copies -->

# %%
favour_three = 10 * torch.nn.functional.one_hot(torch.tensor(3), 10)
with torch.no_grad():
    model.net[3].bias += favour_three  # a host-side edit: the output "3" gets a head start
predicted = inference(test_images).argmax(1)
print("after the host edit, IPU predicts '3' for", (predicted == 3).sum().item(), "images")
inference.copyWeightsToDevice()
predicted = inference(test_images).argmax(1)
print("after copyWeightsToDevice, for", (predicted == 3).sum().item(), "images")
with torch.no_grad():
    model.net[3].bias -= favour_three  # undo the edit, on the host and on the device
inference.copyWeightsToDevice()

# %% [markdown]
# In the other direction, `copyWeightsToHost()` brings the device's values back. A training
# model does this for its weights by itself; an inference model does not for the buffers it
# changes.<!-- claim: L01-copy-to-host --> A module that counts its calls in a buffer shows
# it:

# %%
class Counter(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("calls", torch.zeros(()))

    def forward(self, x):
        self.calls += 1
        return x


counter = Counter()
counting = poptorch.inferenceModel(counter, opts)
for _ in range(3):
    counting(ones)
print("host buffer after 3 calls:", counter.calls.item())
counting.copyWeightsToHost()
print("after copyWeightsToHost:", counter.calls.item())

# %% [markdown]
# ## Attaching and detaching
#
# A compiled model holds its IPUs while it is attached. With few IPUs, detach one model so
# another can run. The next call attaches it again, which loads the program and uploads the
# host's weights:<!-- claim: L01-attach -->

# %%
training.detachFromDevice()
print("training attached:", training.isAttachedToDevice(),
      "| inference attached:", inference.isAttachedToDevice())
training(images, labels)
print("after the next training call:", training.isAttachedToDevice())

# %% [markdown]
# ## Saving the compiled model
#
# Compiling for real IPUs takes time: Graphcore's published run of lesson 3's small network
# compiled its training model in 1 min 31 s.<!-- claim: L01-compile-time -->
# `compileAndExport(path, inputs)` compiles without running and saves the result;
# `poptorch.load(path)` restores a wrapped model ready to run.<!-- claim: L01-export-load -->
# `Options.enableExecutableCaching(directory)` instead keeps every executable PopTorch compiles,
# so the next run of the same program skips compilation:<!-- claim: L01-executable-cache -->

# %%
path = os.path.join(tempfile.mkdtemp(), "classifier.poptorch")
exporter = poptorch.inferenceModel(model, opts)
exporter.compileAndExport(path, test_images)
restored = poptorch.load(path)
print("restored model compiled:", restored.isCompiled(),
      "| same outputs:", torch.equal(restored(test_images), inference(test_images)))

cached = poptorch.Options().enableExecutableCaching(tempfile.mkdtemp())  # Options, to chain on

# %% [markdown]
# In the simulator compiling is instant, so the cache directory is recorded but nothing is
# written to it; [docs/differences.md](../docs/differences.md) lists this among the
# differences from PopTorch.
#
# ## Explorer: batch size and device iterations
#
# The cost breakdown above showed the host dominating a call of 16 images. Two knobs give the
# device more work per call: a larger batch, and `opts.deviceIterations(D)`, which runs D
# steps per call from one combined batch (lesson 2 is about them). The explorer compiles
# `DigitClassifierWithLoss` for every device-iteration count at the chosen batch size:

# %%
from ipu_tutorials.classroom.explorers.basics import step_explorer

# alt: Two charts over device iterations 1 to 64 at batch 16. Left: stacked bars of simulated time
#   per sample (IPU compute, exchange and sync, host I/O, waiting for host data): host I/O
#   dominates at 1 device iteration and shrinks as device iterations grow, while IPU compute stays
#   the same. Right: simulated samples per second rising with device iterations, the chosen 1
#   marked in red.
step_explorer(DigitClassifierWithLoss, batch_size=16, device_iterations=1)

# %% [markdown]
# ## What a real IPU would do
#
# - Compiling a model for real IPUs runs the Poplar compiler, which takes longer the larger
#   the model. That is why executable caching and `compileAndExport` matter.
#   Here compiling only plans the run with a cost model, so it is quick; the cache directory
#   is recorded, not written.
# - PopTorch freezes data-dependent control flow to the path the first inputs took, silently
#   (PopTorch user guide, "Constraints", SDK 3.4). The simulator freezes the same way and
#   also warns, naming the line.
# - On hardware a training model's weights stay on the device and are copied to the host
#   when the host reads them<!-- claim: L01-lazy-weights -->; here they are written back
#   after every call. What a program observes is the same, except that
#   `copyWeightsToDevice()` right after training uploads the trained weights here, where
#   PopTorch would upload the stale host copy.
# - Detaching and attaching really free and reacquire IPUs and reload the program; here they
#   flip a flag, and attaching uploads the host's weights as PopTorch does.
# - The simulated time comes from a cost model calibrated on published runs
#   ([docs/cost-model.md](../docs/cost-model.md)); use it
#   to compare configurations, not as a measurement.
#
# **On a Bow Pod.** The same code runs; a Bow IPU has the GC200's 1,472 tiles and about 900 MB
# of SRAM, and computes faster (the Bow-2000 datasheet: 5,888 cores, 3.6 GB and 1.4 petaFLOPS of
# FP16.16 for its four IPUs)<!-- claim: L01-bow-chip -->, which shortens the IPU's part of a
# call but not the host's, the larger part at this batch size.
# `ipu_tutorials.set_system("ipu21", 16)` *(simulator extra)* simulates a Bow Pod16. The name is
# the simulator's: in PopTorch, IPU version 21 (`useOfflineIpuTarget(21)`,
# `POPTORCH_IPU_MODEL_VERSION=ipu21`) is "Mk2 with FP8 support", the C600 card, while a Bow IPU
# is a Mk2 IPU, the target `ipu2` (`useOfflineIpuTarget(2)`), as is a
# GC200.<!-- claim: L01-bow-target -->
#
# ## Summary
#
# - Return the loss from `forward`; `trainingModel(model, options, optimizer)` runs forward,
#   backward and the update in one call; `inferenceModel(model, options)` runs forward only.
# - The graph is traced once: a Python branch on a tensor's value is frozen. Use
#   `torch.where` (or keep the branch out of the model).
# - Training then inference on the same module: weights are copied implicitly. Changes made
#   on the host need `copyWeightsToDevice()`; buffers an inference model changes need
#   `copyWeightsToHost()`.
# - `compileAndExport` + `poptorch.load`, and `enableExecutableCaching`, avoid compiling twice.
# - With 16 images per call, the host dominates: see lesson 2.
#
# ## Exercises

# %%
from ipu_tutorials.classroom.exercises import basics as exercises

print(exercises.STARTING_CODE)

# %% [markdown]
# ### Exercise 1.1: fix the frozen branch
#
# The PyTorch model printed above branches on `y.mean()`. Port it: write `PortedDenoiser`
# with the same layer (`self.fc`) and a `forward` that gives the same result as the original
# for every batch, with nothing for the tracer to freeze. The check compiles your class in the
# simulator, looks for value reads, and compares it with the original on batches that take
# each branch, two of them with a mean just either side of 0.

# %% tags=["answer"]
# starting code: exercises.fix_the_branch.starting_code

# %%
exercises.fix_the_branch.check(PortedDenoiser)

# %% [markdown]
# ### Exercise 1.2: the training loop
#
# Write `train_steps(model, loader, steps)`: it trains the `poptorch.trainingModel` `model`
# for `steps` calls on batches from `loader` and returns the list of losses. The check runs
# it on a fresh model and compares losses and weights with plain PyTorch doing the same
# steps.

# %% tags=["answer"]
# starting code: exercises.training_loop.starting_code

# %%
exercises.training_loop.check(train_steps)

# %% [markdown]
# ### Exercise 1.3: which copy?
#
# For each situation printed below, which call makes the next step see the right values:
# `None` (PopTorch copies implicitly), `"copyWeightsToDevice"` or `"copyWeightsToHost"`?
# The check runs each situation in the simulator without a copy and compares.

# %%
for name, situation in exercises.SCENARIOS.items():
    print(f"{name}: {situation}")

# %% tags=["answer"]
# starting code: exercises.which_copy.starting_code

# %%
exercises.which_copy.check(my_copies)

# %% [markdown]
# **Next:** lesson 2 (efficient data loading) gives the device more work per call: device
# iterations, the combined batch, output modes and asynchronous loading.
#
# ## References
#
# - PopTorch user guide (SDK 3.4), "From PyTorch to PopTorch":
#   https://docs.graphcore.ai/projects/poptorch-user-guide/en/latest/pytorch_to_poptorch.html
# - PopTorch user guide, "Features": "Model wrapping functions" (`trainingModel`,
#   `inferenceModel`, `PoplarExecutor`, `isRunningOnIpu`) and "Precompilation and caching":
#   https://docs.graphcore.ai/projects/poptorch-user-guide/en/latest/overview.html
# - PopTorch user guide, "Constraints" (control flow is frozen when traced):
#   https://docs.graphcore.ai/projects/poptorch-user-guide/en/latest/intro.html
# - Graphcore tutorial "Introduction to PopTorch - running a simple model": graphcore/examples
#   (https://github.com/graphcore/examples), `tutorials/tutorials/pytorch/basics`.
# - Coming from GPUs: [docs/coming-from-gpus.md](../docs/coming-from-gpus.md).