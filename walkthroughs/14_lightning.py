# %% [markdown]
# # Lesson 14: Lightning on IPUs
#
# PyTorch Lightning runs the training loop for you; on IPUs its `IPUStrategy` turned the
# loop's pieces into PopTorch: a `trainingModel`, `inferenceModel`s and `poptorch.DataLoader`s.
# That code lived inside Lightning up to 2.0.x (`lightning.pytorch.strategies.IPUStrategy`,
# and `pytorch_lightning` from 1.4); Lightning 2.1.0 moved it to the separate
# `lightning-graphcore` package (the old classes, when built, raise an error that says so),
# kept the hooks for that package through 2.2.x, and removed the integration entirely in
# 2.3.0 (PR #19405, February 2024).<!-- claim: L14-history --> This package brings it back on
# simulated IPUs, on a current Lightning: Lightning 2.0's IPU examples run with one import
# changed.
#
# **What you will learn**
# - the same model trained by a PopTorch loop and by a Lightning `Trainer`, with equal weights;
# - which PopTorch options the strategy builds from the Trainer's arguments;
# - mixed and pure 16-bit training with `precision=16` and `model.half()`;
# - what real IPUs refuse (as live errors), and where the simulator is more lenient;
# - how to get the simulator's reports with `IPUStrategy(autoreport_dir=...)`.
#
# **Time:** about 50 minutes.
#
# **Prerequisites:** lessons 4 (pipelining: gradient accumulation, device iterations) and 9
# (half precision); a first look at Lightning's `LightningModule` and `Trainer`.
#
# **Coming from GPUs:** the same `Trainer`, with `accelerator="ipu"` instead of `"gpu"`
# ([the GPU bridge](../docs/coming-from-gpus.md)).

# %%
import logging
import tempfile
import warnings

import lightning.pytorch as pl
import torch

from ipu_tutorials import poptorch, tutorial
from ipu_tutorials.lightning import IPUStrategy, RealIPUWarning  # simulator extra: the warning
from ipu_tutorials.tutorial.mnist_lightning import MnistClassifier
from ipu_tutorials.tutorial.datasets import embedded_digits
from ipu_tutorials.tutorial.models import Network, TrainingModelWithLoss

# Keep the lesson's output to what it teaches: no banners, progress bars or log files.
logging.getLogger("lightning.pytorch").setLevel(logging.ERROR)
warnings.filterwarnings("ignore", module="lightning")
logs = tempfile.mkdtemp()
QUIET = dict(default_root_dir=logs, logger=False, enable_checkpointing=False,
             enable_progress_bar=False, enable_model_summary=False)
digits = torch.utils.data.Subset(embedded_digits(train=True), range(512))

# %% [markdown]
# ## One model, two ways
#
# First the PopTorch way, as in lesson 4: options, a `poptorch.DataLoader`, a `trainingModel`
# and a loop. The options shard blocks B1..B4 over four IPUs, accumulate 4 micro-batches per
# update and run 2 updates per call.

# %%
def tutorial_options():
    opts = tutorial.training_options("sharded", device_iterations=2, gradient_accumulation=4,
                                     output_all=False)
    return opts.showCompilationProgressBar(False)


torch.manual_seed(0)
net = TrainingModelWithLoss(Network())
opts = tutorial_options()
training_model = poptorch.trainingModel(net, opts, torch.optim.Adam(net.parameters(), lr=1e-3))
loader = poptorch.DataLoader(opts, digits, batch_size=16)
for images, labels in loader:
    _, loss = training_model(images, labels)
print(f"PopTorch: {len(loader)} calls of {loader.combinedBatchSize} images, "
      f"{len(loader) * opts.device_iterations} weight updates")

# %% [markdown]
# Now Lightning. `MnistClassifier` wraps the same network; its `training_step` returns the
# loss and `configure_optimizers` returns the same Adam. The Trainer gets `accelerator="ipu"`
# and the strategy gets our options; a plain torch `DataLoader` is enough, because the
# strategy rebuilds it as a `poptorch.DataLoader` with those options.

# %%
torch.manual_seed(0)
lit = MnistClassifier(learning_rate=1e-3)
trainer = pl.Trainer(accelerator="ipu", devices=1, max_epochs=1,
                     strategy=IPUStrategy(training_opts=tutorial_options()), **QUIET)
trainer.fit(lit, torch.utils.data.DataLoader(digits, batch_size=16))
largest = max((a - b).abs().max().item() for a, b in zip(lit.model.parameters(), net.parameters()))
print(f"Lightning: {trainer.global_step} steps (one per IPU call); largest weight difference "
      f"from the PopTorch loop: {largest:.1e}")

# %% [markdown]
# Same data, same order, same updates: the weights agree to float rounding. The strategy
# changes who writes the loop, never the math.
#
# ## What the strategy builds for you
#
# Without `training_opts`, the strategy builds the options from the Trainer: `devices` is the
# replication factor, `accumulate_grad_batches` the gradient accumulation and the strategy's
# `device_iterations` the device iterations; `seed_everything` sets the
# seed.<!-- claim: L14-default-options --> With `training_opts`, it trains with those options as
# they are, whatever the Trainer's `accumulate_grad_batches` says. Here a small linear
# classifier is enough to see it.

# %%
class Linear(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(784, 10)

    def training_step(self, batch, batch_idx):
        images, labels = batch
        return torch.nn.functional.cross_entropy(self.layer(images.flatten(1)), labels)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)


pl.seed_everything(1234, verbose=False)
trainer = pl.Trainer(accelerator="ipu", devices=4, accumulate_grad_batches=2, max_epochs=1,
                     strategy=IPUStrategy(device_iterations=2), **QUIET)
trainer.fit(Linear(), torch.utils.data.DataLoader(digits, batch_size=8))
built = trainer.strategy.training_opts
print(f"replicationFactor({built.replication_factor}), deviceIterations({built.device_iterations}), "
      f"Training.gradientAccumulation({built.Training.gradient_accumulation}), "
      f"randomSeed({built.random_seed})")
print(f"inference: gradientAccumulation({trainer.strategy.inference_opts.Training.gradient_accumulation})")
print(f"each batch: {trainer.train_dataloader.combinedBatchSize} images = 8 x 4 replicas x 2 x 2; "
      f"{trainer.global_step} steps")

# %% [markdown]
# One Lightning batch is one IPU call holding every micro-batch of every replica, and making
# `deviceIterations` weight updates; `global_step` counts calls. Even a bare
# `pl.Trainer(accelerator="ipu", devices=8, precision=16)` picks this strategy and Lightning
# 2.0.9's precision plugin for IPUs, `IPUPrecisionPlugin` (not DDP, which Lightning would pick
# for 8 devices of an unknown accelerator), and `devices="auto"` means 4 IPUs, "the minimal
# unit they are shipped in":<!-- claim: L14-auto-strategy -->

# %%
bare = pl.Trainer(accelerator="ipu", devices=8, precision=16, **QUIET)
auto = pl.Trainer(accelerator="ipu", devices="auto", **QUIET)
print(f"{type(bare.strategy).__name__}, {type(bare.precision_plugin).__name__}"
      f"({bare.precision_plugin.precision!r}), {bare.num_devices} replicas; "
      f"devices='auto' -> {auto.num_devices}")

# %% [markdown]
# ## Mixed and pure 16-bit
#
# `precision=16` (Lightning's `"16-mixed"` on IPUs) keeps the weights float32 and casts each
# batch to float16 on the host, which halves the bytes sent to the IPU (Lightning 1.7's
# changelog, PR #13880).<!-- claim: L14-precision-16 --> With PopTorch 3.0 and later
# `nn.Linear` on a batch of float16 vectors promotes to its float32 weights and bias, so the
# layer still computes in float32 (lesson 9 has PopTorch's rules for mixed types). Call
# `model.half()` as well and the weights, and the arithmetic, are float16: pure 16-bit.
# Neither scales the loss automatically, as with Lightning on real IPUs.

# %%
class Watched(Linear):
    def training_step(self, batch, batch_idx):
        if not batch[0].is_meta:  # the simulator plans on meta tensors first
            computed = self.layer(batch[0].flatten(1))
            self.dtypes = (computed.dtype, self.layer.weight.dtype)
        return super().training_step(batch, batch_idx)


for name, half in (("precision=16", False), ("precision=16 + model.half()", True)):
    model = Watched().half() if half else Watched()
    pl.Trainer(accelerator="ipu", devices=1, precision=16, max_epochs=1, **QUIET).fit(
        model, torch.utils.data.DataLoader(digits, batch_size=32))
    print(f"{name:<28} computes in {model.dtypes[0]}, weights {model.dtypes[1]}")

# %% [markdown]
# ## What a real IPU refuses
#
# On hardware the step functions are traced into one graph that runs forward, backward and
# the update in a single call, so some Lightning features cannot work: Lightning 2.0.9
# refuses gradient clipping, a second optimizer and a step that returns `None`, and its
# documentation asks for a power-of-two device count.<!-- claim: L14-limits --> The
# strategy here refuses all four up front, saying what to do instead:

# %%
class TwoOptimizers(Linear):
    def configure_optimizers(self):
        return [torch.optim.SGD(self.parameters(), lr=0.1), torch.optim.Adam(self.parameters())]


class SkipsSteps(Linear):
    def training_step(self, batch, batch_idx):
        return None


cases = {"gradient clipping": (Linear, dict(gradient_clip_val=1.0)),
         "two optimizers": (TwoOptimizers, {}), "returning None": (SkipsSteps, {}),
         "3 devices": (Linear, dict(devices=3))}
for name, (module, flags) in cases.items():
    try:
        trainer = pl.Trainer(**{"accelerator": "ipu", "devices": 1, "max_epochs": 1, **QUIET, **flags})
        trainer.fit(module(), torch.utils.data.DataLoader(digits, batch_size=32))
    except Exception as error:
        print(f"{name}: {type(error).__name__}: {error}\n")

# %% [markdown]
# `self.log` inside a step is different: real IPUs could not run it (the step is traced, and
# Lightning 2.0.9's documentation lists it as unsupported),<!-- claim: L14-self-log --> but
# the simulator runs each step in PyTorch, so it works here. You get a `RealIPUWarning` once
# per stage, naming the hook to log in on hardware (`on_train_batch_end`).

# %%
class LogsInStep(Linear):
    def training_step(self, batch, batch_idx):
        loss = super().training_step(batch, batch_idx)
        self.log("train_loss", loss)
        return loss


trainer = pl.Trainer(accelerator="ipu", devices=1, max_epochs=1, **QUIET)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    trainer.fit(LogsInStep(), torch.utils.data.DataLoader(digits, batch_size=32))
print(f"train_loss {trainer.callback_metrics['train_loss']:.4f}; warning: "
      f"{next(w.message for w in caught if w.category is RealIPUWarning)}")

# %% [markdown]
# ## Reports
#
# `IPUStrategy(autoreport_dir=...)` writes the simulator's report of each stage there when the
# stage ends (Lightning 2.0.9's code also needed `autoreport=True`, though its documentation
# shows `autoreport_dir` alone; both spellings work here).<!-- claim: L14-autoreport --> Each
# report is a `summary.json` and a Chrome `trace.json`, loaded back with
# `ipu_tutorials.profiling.load_report`.

# %%
import os

from ipu_tutorials.profiling import load_report

reports = tempfile.mkdtemp()
torch.manual_seed(0)
trainer = pl.Trainer(accelerator="ipu", devices=2, max_epochs=1, **QUIET,
                     strategy=IPUStrategy(autoreport_dir=reports, training_opts=tutorial_options()
                                          .replicationFactor(2)))
trainer.fit(MnistClassifier(), torch.utils.data.DataLoader(digits, batch_size=16))
print(sorted(os.listdir(reports)), sorted(os.listdir(os.path.join(reports, "training"))))
report = load_report(os.path.join(reports, "training"))
# alt: Timeline of the training call that Lightning's IPUStrategy ran, from its automatic report,
#   with rows for IPUs 0 to 3, the host's I/O and the host's data: most of the call is the host
#   preparing and handing over the data, then short forward and backward passes on the IPUs, with
#   host I/O at each end.
timeline = report.plot_timeline()

# %% [markdown]
# The report holds one replica's four IPUs, the plot's rows IPU 0 to IPU 3; the other replica
# runs the same schedule on its own four IPUs at the same time. The host rows come first: the
# host prepares the call's images and hands them over. Then, in each of the call's two device
# iterations, the IPUs run B1..B4 one after another (sharded), and the iteration ends with
# the replicas' all-reduce of their gradients (blue) and the weight update (purple), thin
# boxes at this scale.

# %% [markdown]
# ## Explore
#
# Move the Trainer's knobs and watch the options the strategy would build, the images in
# each Lightning batch and the simulated throughput of the tutorial CNN. Pipelining needs
# enough accumulation to fill the pipeline (lesson 4); the explorer shows the rule when you
# break it.

# %%
from ipu_tutorials.classroom.explorers.lightning import lightning_explorer

# alt: Timeline of one Lightning batch with 2 replicas, 8 accumulated micro-batches and 2 device
#   iterations, rows for IPUs 0 to 3, the host's I/O and the host's data: the host prepares the
#   data first, then the IPUs run two bursts of forward and backward passes, one per device
#   iteration.
lightning_explorer(devices=2, accumulate_grad_batches=8, device_iterations=2)

# %% [markdown]
# ## What a real IPU would do, and where the simulator differs
#
# On IPUs, constructing `IPUStrategy` needed the hardware, the first call of each stage
# compiled a Poplar executable (minutes for a large model), and `autoreport` wrote PopVision
# `profile.pop` files. Here everything runs on the CPU: the weights, losses and accuracies
# are real PyTorch, the times are simulated. [docs/lightning.md](../docs/lightning.md) lists every
# behaviour chosen differently from the real strategy, such as `self.log` working in steps,
# the last incomplete batch being dropped with a warning, and `global_step` counting IPU calls.
#
# **On a Bow Pod.** Lightning 2.0's IPU strategy ran on Bow systems through PopTorch 3.x;
# the limits it enforces (one optimizer, no gradient clipping) are the same there.
#
# ## Exercises

# %%
from ipu_tutorials.classroom.exercises import lightning as exercises

# %% [markdown]
# ### Exercise 14.1: images per batch
#
# `Trainer(accelerator="ipu", devices=4, accumulate_grad_batches=8,
# strategy=IPUStrategy(device_iterations=2))` with `DataLoader(..., batch_size=16)`: how many
# images does each Lightning batch hold?

# %% tags=["answer"]
# starting code: exercises.images_per_batch.starting_code

# %%
exercises.images_per_batch.check(my_images)

# %% [markdown]
# ### Exercise 14.2: a Trainer for 8 IPUs
#
# The tutorial CNN pipelined over 4 IPUs is one replica. Build a Trainer that uses 8 IPUs,
# averages 8 micro-batches per replica in each update and makes 4 updates per IPU call.

# %% tags=["answer"]
# starting code: exercises.trainer_for_the_job.starting_code

# %%
exercises.trainer_for_the_job.check(my_trainer)

# %% [markdown]
# ### Exercise 14.3: log where a real IPU can
#
# `exercises.Classifier` logs inside `training_step`. Write `LoggedOnHost(Classifier)` that
# trains the same way but logs `train_loss` where real IPUs allow it. The check trains your
# class on the simulated IPU.

# %% tags=["answer"]
# starting code: exercises.log_outside_the_step.starting_code

# %%
exercises.log_outside_the_step.check(LoggedOnHost)

# %% [markdown]
# ## Summary
#
# - `from ipu_tutorials.lightning import IPUStrategy` registers `accelerator="ipu"`; a
#   `LightningModule` trains on the simulated IPUs with the same weights as a PopTorch loop.
# - The strategy builds `replicationFactor` from `devices`, `gradientAccumulation` from
#   `accumulate_grad_batches`, `deviceIterations` from its own argument, unless you pass options.
# - `precision=16` casts batches to float16 on the host and keeps float32 weights (PopTorch 3.x
#   then computes this linear model in float32); add `model.half()` for float16 arithmetic.
# - Clipping, several optimizers, LBFGS, skipped steps, batch-transfer hooks, batch samplers
#   with several replicas and non-power-of-two device counts are refused; `self.log` in a step
#   runs here but warns that hardware would refuse it.
#
# **Next:** lesson 15 (capstone) puts pipelining, replication, half precision, offload and
# recomputation together on a BERT-size model on a simulated Pod16.
#
# ## References
#
# - Lightning's in-tree IPU support, 1.4 to 2.0.x: `src/lightning/pytorch/strategies/ipu.py`,
#   `accelerators/ipu.py`, `plugins/precision/ipu.py` at tag 2.0.9 of
#   https://github.com/Lightning-AI/lightning, and its "Accelerator: IPU training" pages in the
#   2.0 documentation (`docs/source-pytorch/accelerators/ipu_basic.rst` at 2.0.9).
# - Lightning 2.1.0, `src/lightning/pytorch/_graveyard/ipu.py` (the move to
#   lightning-graphcore); PR #19405 (removal, in 2.3.0).
# - lightning-graphcore: https://github.com/Lightning-AI/lightning-Graphcore
# - PopTorch user guide (SDK 3.4), "Efficient data batching":
#   https://docs.graphcore.ai/projects/poptorch-user-guide/en/latest/batching.html
# - Coming from GPUs: [docs/coming-from-gpus.md](../docs/coming-from-gpus.md).