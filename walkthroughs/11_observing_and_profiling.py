# %% [markdown]
# # Lesson 11: Observing and profiling
#
# A model compiled for the IPU is a black box while it runs: you hand it a batch and get back
# what the output mode returns. This lesson opens the box. You will print tensors from inside
# the compiled model, keep gradients and updated weights you did not return, turn up the log,
# write a profiling report and read it, and hunt down the op that turns a float16 training run
# into NaNs.
#
# **What you will learn**
# - `poptorch.setLogLevel` and the environment variables the package honours (PopTorch's
#   `POPTORCH_*` ones, and the simulator's own);
# - `poptorch.ipu_print_tensor`: print a tensor (and its gradient) each time the IPU computes it;
# - `opts.anchorTensor` / `getTensorNames` / `getAnchoredTensor`, and the anchor output modes;
# - `POPLAR_ENGINE_OPTIONS` autoReport, the report's memory and timeline, and its Chrome trace
#   for Perfetto;
# - `opts.Precision.enableFloatingPointExceptions`: stop at the op that makes the first inf.
#
# **Time:** about 70 minutes.
#
# **Prerequisites:** lessons 3 and 4 (blocks, pipelining) and lesson 9 (half precision).
#
# **Coming from GPUs:** anchors and `ipu_print_tensor` replace hooks and prints inside a
# compiled program; PopVision plays the part of Nsight ([the GPU
# bridge](../docs/coming-from-gpus.md)).

# %%
import contextlib
import json
import os
import sys
import tempfile

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F

from ipu_tutorials import poptorch, tutorial
from ipu_tutorials.profiling import load_report
from ipu_tutorials.support import environment
from ipu_tutorials.tutorial.datasets import load_mnist
from ipu_tutorials.tutorial.models import Network, TrainingModelWithLoss
from ipu_tutorials.tutorial.overflow import SharpClassifier, replay, train_until_not_finite

torch.manual_seed(0)
train_set = load_mnist(train=True, source="embedded")
images = torch.stack([train_set[i][0] for i in range(128)])  # 8 micro-batches of 16 digits
labels = torch.stack([train_set[i][1] for i in range(128)])

# %% [markdown]
# ## The log and the environment
#
# PopTorch logs to stderr at the level `poptorch.setLogLevel` sets (`TRACE`, `DEBUG`,
# `INFO`, `WARN`, the default, `ERR` or `OFF`).<!-- claim: L11-log-levels --> At `INFO` a
# compile says what it built; at `DEBUG` it also lists each stage and each anchored tensor.
# (The cell sends stderr to stdout, so that the log shows beside the other prints.)

# %%
opts = tutorial.training_options("pipelined", device_iterations=1, gradient_accumulation=8,
                                 output_all=False).showCompilationProgressBar(False)
opts.anchorTensor("grad_b4", "Gradient___model.layer4.bias")  # the model's output mode
opts.anchorTensor("grads_b4", "Gradient___model.layer4.bias", poptorch.OutputMode.All)
opts.anchorTensor("new_b4", "UpdatedVar___model.layer4.bias", poptorch.OutputMode.Final)
net = Network()
pipelined = poptorch.trainingModel(TrainingModelWithLoss(net), opts,
                                   poptorch.optim.SGD(net.parameters(), lr=0.05))
with contextlib.redirect_stderr(sys.stdout):
    poptorch.setLogLevel("DEBUG")
    pipelined.compile(torch.zeros(128, 1, 28, 28), torch.zeros(128, dtype=torch.long))
    poptorch.setLogLevel("WARN")

# %% [markdown]
# The call time in the log is mostly the host's: at 128 small images per call, preparing and
# sending them takes longer than the four IPUs' work, so any model this small shows about the
# same time per call (lesson 5 explains host-bound runs). The plan's breakdown shows it:

# %%
print(pipelined.plan.breakdown_text())  # simulator extra; on IPUs: getPerfCounters(), PopVision

# %% [markdown]
# The level can also come from the environment:
# `POPTORCH_LOG_LEVEL=INFO python train.py`.<!-- claim: L11-env-vars --> These are the variables
# the package honours (PopTorch's, and the simulator's own `IPU_TUTORIALS_*`), each read at the
# moment the user acts (importing poptorch, creating `Options`, compiling), listed from
# `ipu_tutorials.support.environment` itself:

# %%
for line in environment.__doc__.splitlines():
    if line.startswith("| ") and not line.startswith("| variable"):
        print(line)

# %% [markdown]
# ## Printing from inside the model
#
# A `print` in `forward` runs once, when PopTorch traces the model. `poptorch.ipu_print_tensor`
# instead becomes an op of the graph: it prints every time the IPU computes the tensor, and in
# training its gradient too. Use its return value, or the print is optimised
# away:<!-- claim: L11-print-tensor -->

# %%
class Printed(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 2)

    def forward(self, x, target):
        y = poptorch.ipu_print_tensor(self.fc(x), "fc_out", digits=3)
        return y, torch.nn.functional.mse_loss(y, target)


torch.manual_seed(0)
printed = Printed()
outputs = poptorch.trainingModel(printed, poptorch.Options().showCompilationProgressBar(False),
                       poptorch.optim.SGD(printed.parameters(), lr=0.1))(
    torch.ones(2, 4), torch.zeros(2, 2))

# %% [markdown]
# The first line is the forward pass, the second the gradient of the loss with respect to
# `fc_out` (2 (y - 0) / 4 for a mean-squared error over 4 numbers). Both are on stderr, in the
# notebook's pale red box, as lesson 5 explains: printed output, not an error.
#
# ## Anchoring tensors you did not return
#
# A training model returns its outputs and loss; its gradients and updated weights stay on the
# device. `opts.anchorTensor(short_name, long_name)` asks the device to keep one, by its PopART
# name (`Gradient___<parameter>` or `UpdatedVar___<parameter>`), and `getAnchoredTensor` reads
# it after each call.<!-- claim: L11-anchor-tensor --> In PopTorch, `getTensorNames()` lists
# every tensor name of the compiled graph: inputs, weights, their `Gradient___` and
# `UpdatedVar___` tensors, the optimizer's scalars and more.<!-- claim: L11-tensor-names -->
# The simulator has no PopART graph: it lists the module's parameter names (and `output0`...),
# from which the anchor names are built ([docs/differences.md](../docs/differences.md)):

# %%
before = Network()
before.load_state_dict(net.state_dict())  # the weights before the step, for the check below
print(pipelined.getTensorNames()[:4], "...")
pipelined(images, labels)  # one step: 8 micro-batches of 16 different digits
last, each = pipelined.getAnchoredTensor("grad_b4"), pipelined.getAnchoredTensor("grads_b4")
print(f"the Final anchor: shape {tuple(last.shape)}; the All anchor: shape {tuple(each.shape)}")

# %% [markdown]
# Which gradient is that? PopART computes `Gradient___<w>` once per micro-batch and adds each
# into an accumulator of its own (`Accum___<w>`); the update then uses the accumulated
# gradient, divided by 8 under the default `ReductionType.Mean`. So an anchored gradient is one
# micro-batch's, and its output mode picks which: `Final` (a training model's default, so the
# first anchor's) the last micro-batch's, `All` every micro-batch's, one after another along
# the first dimension (80 = 8 x 10).<!-- claim: L11-anchor-gradient-micro-batch --> Plain
# PyTorch on the weights before the step tells them apart, because the 8 micro-batches differ;
# the `UpdatedVar___` anchor holds the weight after SGD's update:

# %%
per_micro_batch = torch.stack([
    torch.autograd.grad(F.cross_entropy(before(x), y), before.layer4.bias)[0]
    for x, y in zip(images.chunk(8), labels.chunk(8))])  # (8, 10)
mean = per_micro_batch.mean(dim=0)
updated = pipelined.getAnchoredTensor("new_b4")
print("Final anchor == the last micro-batch's gradient (within 1e-5):",
      torch.allclose(last, per_micro_batch[-1], atol=1e-5))
print("Final anchor == the mean over the 8 micro-batches:", torch.allclose(last, mean, atol=1e-5))
print("All anchor == every micro-batch's gradient:",
      torch.allclose(each.view(8, -1), per_micro_batch, atol=1e-5))
print("anchored weight == weight - 0.05 x the mean:",
      torch.allclose(updated, before.layer4.bias - 0.05 * mean, atol=1e-5))

# %% [markdown]
# `anchorTensor` also takes a return period, for `OutputMode.EveryN`, like the model's
# outputs. The simulator returns gradients as PopART does, but keeps an `UpdatedVar___` anchor
# at the weight after the call's last update whatever its mode;
# [docs/differences.md](../docs/differences.md) says so.
#
# ## A NaN hunt in float16
#
# `SharpClassifier` is a small digit classifier with a sharpened, hand-written log-softmax,
# `log(exp(z) / sum(exp(z)))`. In float32 it trains; in float16 (lesson 9) its loss turns into
# NaN after a few steps. `train_until_not_finite` trains it one step per call and keeps the
# weights and the batch of the step that failed:

# %%
torch.manual_seed(0)
float32_run = train_until_not_finite(SharpClassifier(), train_set, steps=60, half=False)
torch.manual_seed(0)
run = train_until_not_finite(SharpClassifier(), train_set, steps=60)
print(f"float32: {len(float32_run['losses'])} steps, last loss "
      f"{float32_run['losses'][-1]:.3f}")
# the step that fails, not the last finite loss: that one moves with the CPU's kernels
print(f"float16: {run['failed_step']} finite steps, then a loss of {run['losses'][-1]} at step "
      f"{run['failed_step']}")

# %% [markdown]
# A NaN is a symptom: it appears wherever the first infinity flows, and every op after it
# inherits it. First look: print, as the IPU computes it while the failing step is replayed,
# which images have a logit past the limit. float16 holds numbers up to 65504, so `exp` of
# anything above log(65504) overflows. (The logits themselves come out of 20 float16 training
# steps, whose last digits depend on the CPU's kernels; whether a logit passes the limit
# does not, so that is what the lesson prints.)

# %%
LIMIT = torch.log(torch.tensor(65504.0)).item()


class PrintedLogSoftmax(torch.nn.Module):
    def forward(self, z):
        past = (z.max(dim=-1).values > LIMIT).to(z.dtype)  # 1 where exp will overflow
        past = poptorch.ipu_print_tensor(past, "past exp's limit, per image",
                                         print_gradient=False, digits=1, max_line_width=90)
        z = z + 0 * past.unsqueeze(-1)  # use the print's result: it stays in the graph
        e = torch.exp(z)
        return torch.log(e / e.sum(dim=-1, keepdim=True))


print(f"float16 overflows past exp({LIMIT:.2f})")
loss = replay(PrintedLogSoftmax(), run["weights_before"], run["batch"], exceptions=False)
print(f"the loss of the replayed step: {loss.item()}")

# %% [markdown]
# The print marks the images past the limit printed above: each of them makes `exp` return
# infinity, and infinity / infinity is NaN. To know which op fails first without guessing, turn
# on floating-point exceptions: the IPU then stops at the first op that overflows, divides by
# zero or computes an invalid value, and PopTorch raises an error: its docstring says a
# `RuntimeError`, but its code turns every Poplar and PopART error into `poptorch.Error` (or
# its subclasses `RecoverableError` and `UnrecoverableError`), which derives from `Exception`
# and carries `message`, `type` and `location`.<!-- claim: L11-fp-exceptions-option --> The
# simulator checks every op's float16 result and raises `poptorch.Error` too, naming the op and
# the module that ran it (its `op` and `module` attributes are the simulator's own):

# %%
try:
    replay(PrintedLogSoftmax(), run["weights_before"], run["batch"], exceptions=True)
except poptorch.Error as error:
    print(type(error).__name__, f"(op {error.op!r}, module {error.module!r}):")  # simulator extra
    print(str(error).split(". Rule")[0])

# %% [markdown]
# The replay with exceptions is slower (every result is checked), which is why the hunt trains
# without them and replays only the failing step. The fix is yours, in exercise 11.2.
#
# The anchors tell the same story from the outside: the gradients of the failed step are NaN,
# and so are the weights after its update, which is why the loss never recovers:

# %%
model = SharpClassifier().half()
model.load_state_dict(run["weights_before"])
anchor_opts = poptorch.Options().showCompilationProgressBar(False)
anchor_opts.anchorTensor("grad", "Gradient___classifier.weight")
anchor_opts.anchorTensor("weight", "UpdatedVar___classifier.weight")
hunt = poptorch.trainingModel(model, anchor_opts, poptorch.optim.SGD(model.parameters(), lr=0.01))
hunt(run["batch"][0].half(), run["batch"][1])
for name in ("grad", "weight"):
    value = hunt.getAnchoredTensor(name)
    print(f"{name}: {value.isnan().sum().item()} of {value.numel()} values are NaN")

# %% [markdown]
# ## Profiling reports
#
# On hardware, `POPLAR_ENGINE_OPTIONS='{"autoReport.all":"true", "autoReport.directory":"..."}'`
# makes every compile write a profile for the PopVision Graph
# Analyser.<!-- claim: L11-autoreport --> Here the same variable (or
# `opts.enableProfiling(directory)`) writes the simulator's report: a JSON summary and a Chrome
# trace, in a directory named after the model:

# %%
report_root = tempfile.mkdtemp()
os.environ["POPLAR_ENGINE_OPTIONS"] = json.dumps(
    {"autoReport.all": "true", "autoReport.directory": report_root})
opts = tutorial.training_options("sharded", device_iterations=4, gradient_accumulation=1)
net = Network()
sharded = poptorch.trainingModel(TrainingModelWithLoss(net), opts.showCompilationProgressBar(False),
                                 poptorch.optim.SGD(net.parameters(), lr=0.01))
sharded.compile(torch.zeros(64, 1, 28, 28), torch.zeros(64, dtype=torch.long))
del os.environ["POPLAR_ENGINE_OPTIONS"]
for directory in sorted(os.listdir(report_root)):
    print(directory, sorted(os.listdir(os.path.join(report_root, directory))))

# %% [markdown]
# `load_report` reads it back. Its placement table shows each IPU's blocks, memory and how busy
# it was; the summary splits a call's time into computing, exchange, host I/O and waiting:

# %%
report = load_report(os.path.join(report_root, "training"))
print(report)
print(report.placement_table())
schedule = report.summary["schedule"]
for part, seconds in schedule["breakdown"].items():
    print(f"{part:>22}: {seconds * 1e3:6.3f} ms ({seconds / schedule['call_seconds']:.0%})")

# %% [markdown]
# The memory panel stacks each IPU's memory by kind; the timeline shows one device iteration,
# a row per IPU and one for the host. Sharded, one IPU computes at a time:

# %%
# alt: Left: memory on IPUs 0 to 3, zoomed in: almost all code, far below the 897 MiB capacity (off
#   the scale). Right: timeline of one training step: the host's I/O first, then on each IPU a
#   short burst of forward, inter-IPU copy, backward and weight update at the end.
fig, (memory_axis, timeline_axis) = plt.subplots(1, 2, figsize=(12, 3.4),
                                                 gridspec_kw={"width_ratios": [2, 3]})
report.plot_memory(ax=memory_axis, zoom=True)
report.plot_timeline(ax=timeline_axis, steps=1, label_micro_batches=False)
plt.show()

# %% [markdown]
# `trace.json` is Chrome Trace Event JSON: open it in https://ui.perfetto.dev (or
# chrome://tracing) to zoom into the timeline, with a track per IPU and the host, and a counter
# per IPU holding its memory plan. Its first events:

# %%
with open(os.path.join(report_root, "training", "trace.json")) as f:
    trace = json.load(f)["traceEvents"]
spans = [e for e in trace if e["ph"] == "X"]
print(f"{len(trace)} trace events: {len(spans)} spans, "
      f"{sum(e['ph'] == 'C' for e in trace)} memory counters")
for e in spans[:4]:
    print(f"  track {e['tid']:>4}  {e['name']:<22} {e['ts']:8.2f} µs  for {e['dur']:6.2f} µs")

# %% [markdown]
# Change the strategy, the device iterations and the accumulation, and read the report: where
# does the time go, and when does the host become the bottleneck?

# %%
from ipu_tutorials.classroom.explorers.observing import report_explorer

# alt: Top: memory on IPUs 0 to 3, zoomed in, almost all code and far below capacity. Bottom:
#   timeline of one device iteration on IPUs 0 to 3 and the host: host I/O first, then 8 micro-
#   batches' forward and backward passes pipelined across the IPUs, and the weight update.
report_explorer("pipelined", device_iterations=1, accumulation=8)

# %% [markdown]
# ## What a real IPU would do
#
# - PopTorch's log also carries PopART's own (`POPART_LOG_LEVEL`) and Poplar's, with a timestamp
#   on every line; the simulator logs only its own summary, without timestamps, so that a
#   notebook's output is the same every run.<!-- claim: L11-log-sources -->
# - `ipu_print_tensor` and anchors move data to the host during the step: on hardware they cost
#   host-link time and can change the schedule; the simulator prints and keeps them for free.
#   A weight anchor (`UpdatedVar___`) keeps the last update's weight here, whatever its output
#   mode.
# - A real autoReport is a Poplar profile (`profile.pop`) read by the PopVision Graph Analyser
#   (memory per tile, vertices, exchanges). The PopVision System Analyser reads something else:
#   a trace of the host's side of the run that the PopVision trace instrumentation library
#   (libpvti) writes when `PVTI_OPTIONS='{"enable":"true"}'` is
#   set.<!-- claim: L11-system-analyser --> The simulator's report is its cost model's plan:
#   memory per IPU by category and a timeline of compute, copies and host I/O, not per-tile
#   liveness.
# - Floating-point exceptions are hardware traps (the IPU's floating-point status register); the
#   simulator checks results after each op instead, with the rule "finite inputs, infinite or
#   NaN result", so it names the same op but cannot see inside a fused
#   codelet.<!-- claim: L11-fp-exceptions -->
#
# **On a Bow Pod.** The same PopVision tools read Bow profiles; the simulator's report
# stands in for them here and is not a PopVision file.
#
# ## Summary
#
# - `poptorch.setLogLevel("INFO")` (or `POPTORCH_LOG_LEVEL`) shows what a compile built;
#   `DEBUG` adds stages and anchors.
# - `ipu_print_tensor(t, title)` prints a tensor, and its gradient, every time the IPU computes
#   it; use its result.
# - `anchorTensor("name", "Gradient___<param>")` / `"UpdatedVar___<param>"` and
#   `getAnchoredTensor("name")` read what the step did not return; a gradient anchor holds one
#   micro-batch's gradient (`Final`: the last; `All`: each), not the mean the update used.
# - `POPLAR_ENGINE_OPTIONS` autoReport (or `enableProfiling`) writes a report: memory per IPU,
#   a timeline and a Chrome trace for Perfetto.
# - A NaN is where an infinity arrived, not where it was made: replay the failing step with
#   `Precision.enableFloatingPointExceptions(True)` to name the op.
#
# ## Exercises

# %%
from ipu_tutorials.classroom.exercises import observing as exercises

# %% [markdown]
# ### Exercise 11.1: the op that overflows
#
# Which op of `SharpClassifier` produces the first infinity in the failing float16 step? Give
# its name as the floating-point exception names it.

# %% tags=["answer"]
# starting code: exercises.find_the_op.starting_code

# %%
exercises.find_the_op.check(my_op)

# %% [markdown]
# ### Exercise 11.2: fix the log-softmax
#
# Write `stable_log_softmax(z)` for the last dimension of `z`, so that the failing step trains
# in float16 with floating-point exceptions on. The check replays the step with your function,
# then runs it on logits 80 apart in float16 and compares it with `torch.log_softmax`.

# %% tags=["answer"]
# starting code: exercises.fix_the_softmax.starting_code

# %%
exercises.fix_the_softmax.check(stable_log_softmax)

# %% [markdown]
# ### Exercise 11.3: read the report
#
# From the sharded report loaded above (`report`), what fraction of a call do the IPUs spend
# computing? Compute it from the report's summary.

# %% tags=["answer"]
# starting code: exercises.compute_share.starting_code

# %%
exercises.compute_share.check(my_share)

# %% [markdown]
# ### Exercise 11.4: the gradient the update used
#
# The lesson's pipelined step anchors `Gradient___model.layer4.bias` with `OutputMode.All` on
# 8 different micro-batches. Write `update_gradient(each)`, which takes that anchor (80
# numbers) and returns the gradient SGD's update used. The check runs the step and compares
# your result with (weight before - weight after) / learning rate.

# %% tags=["answer"]
# starting code: exercises.update_gradient.starting_code

# %%
exercises.update_gradient.check(update_gradient)

# %% [markdown]
# **Next:** lesson 12 (custom operations) writes losses with `identity_loss`, groups
# convolutions with `MultiConv`, adds an op of your own with `custom_op`, and loops on the
# device with `for_loop`.
#
# ## References
#
# - PopTorch user guide (SDK 3.4), "Debugging your model" (inspecting and anchoring tensors):
#   https://docs.graphcore.ai/projects/poptorch-user-guide/en/latest/debugging.html;
#   "Environment variables" (logging, profiling):
#   https://docs.graphcore.ai/projects/poptorch-user-guide/en/latest/overview.html
# - Graphcore tutorial "Observing Tensors in PopTorch": graphcore/examples
#   (https://github.com/graphcore/examples), `tutorials/tutorials/pytorch/observing_tensors`.
# - PopVision Graph Analyser user guide:
#   https://docs.graphcore.ai/projects/graph-analyser-userguide/
# - PopVision System Analyser user guide, "Capturing execution information":
#   https://docs.graphcore.ai/projects/system-analyser-userguide/en/latest/user-guide.html
# - Perfetto, the Chrome JSON trace format: https://perfetto.dev/docs/
# - Coming from GPUs: [docs/coming-from-gpus.md](../docs/coming-from-gpus.md).