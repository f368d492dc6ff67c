"""IPUStrategy: runs a LightningModule's steps through poptorch.trainingModel / inferenceModel."""
from __future__ import annotations

import dataclasses
import json
import os
from typing import Any

import torch
from lightning.pytorch.plugins.precision import Precision
from lightning.pytorch.strategies import ParallelStrategy
from lightning.pytorch.trainer.states import RunningStage, TrainerFn
from lightning.pytorch.utilities.exceptions import MisconfigurationException
from lightning.pytorch.utilities.rank_zero import rank_zero_info
from torch.utils._pytree import tree_flatten, tree_map

from .. import poptorch
from ..support import extras as _extras
from . import _checks
from ._compat import KeepPoptorchLoaders
from ._data import to_poptorch_loader
from ._one_process import OneHostProcess
from ._steps import LightningStep
from .precision import IPUPrecisionPlugin

REPORT_NAMES = {RunningStage.TRAINING: "training", RunningStage.VALIDATING: "validation",
                RunningStage.TESTING: "test", RunningStage.PREDICTING: "predict"}
STEPS = {RunningStage.VALIDATING: "validation_step", RunningStage.TESTING: "test_step",
         RunningStage.PREDICTING: "predict_step"}
FN_STAGE = {TrainerFn.VALIDATING: RunningStage.VALIDATING, TrainerFn.TESTING: RunningStage.TESTING,
            TrainerFn.PREDICTING: RunningStage.PREDICTING}


def default_options(replicas: int, accumulate_grad_batches: int, device_iterations: int,
                    seed: int | None = None, training: bool = True) -> poptorch.Options:
    """The options IPUStrategy builds from the Trainer when you pass none.

    Args:
        replicas: `Trainer(devices=...)`.
        accumulate_grad_batches: the Trainer's; inference options always accumulate 1.
        device_iterations: `IPUStrategy(device_iterations=...)`.
        seed: the seed of `seed_everything`, if any.
        training: training options, else the inference ones.

    Returns:
        poptorch.Options with nothing else set (execution strategy, output mode: defaults).
    """
    opts = poptorch.Options().deviceIterations(device_iterations).replicationFactor(replicas)
    opts.Training.gradientAccumulation(accumulate_grad_batches if training else 1)
    if seed is not None:
        opts.randomSeed(seed)
    return opts


@dataclasses.dataclass
class StageStats:
    """(Simulator) what one stage's IPU calls did, kept after the executors are destroyed."""

    calls: int = 0
    samples: int = 0
    simulated_seconds: float = 0.0

    @property
    def samples_per_second(self) -> float:
        """Simulated throughput: samples over simulated IPU time."""
        return self.samples / self.simulated_seconds if self.simulated_seconds else 0.0


def _set_engine_options(directory: str | None) -> None:
    """What Lightning 2.0.9 does for autoreport=True: POPLAR_ENGINE_OPTIONS asks for a report
    of every model compiled from now on (in `directory`, made now, else the working one)."""
    options: dict[str, Any] = {"autoReport.all": True}
    if directory:
        os.makedirs(directory, exist_ok=True)
        options["autoReport.directory"] = directory
    os.environ["POPLAR_ENGINE_OPTIONS"] = json.dumps(options)


class IPUStrategy(OneHostProcess, ParallelStrategy):
    """Train and evaluate a LightningModule on simulated IPUs, as Lightning 2.0's IPUStrategy did.

    Unless you pass your own options, the strategy builds them from the Trainer: `devices` is
    the replication factor, `accumulate_grad_batches` the gradient accumulation (training
    only), `device_iterations` the device iterations, and `seed_everything`'s seed the random
    seed. `fit` wraps the module with `poptorch.trainingModel` (plus an `inferenceModel` for
    validation and the sanity check); `validate`, `test` and `predict` use an `inferenceModel`
    each. Dataloaders become `poptorch.DataLoader`s with the stage's options; yours are kept.

    Args:
        accelerator: leave None; use `Trainer(accelerator="ipu")`.
        device_iterations: iterations the IPU runs per call (one Lightning batch holds them all).
        autoreport: write the simulator's reports after each stage (to `autoreport_dir`, else
            the working directory); as in Lightning 2.0.9, it also sets POPLAR_ENGINE_OPTIONS
            to `{"autoReport.all": true, "autoReport.directory": autoreport_dir}`, so PopTorch
            writes a report of each model it compiles too.
        autoreport_dir: where reports go; setting it alone also turns reports on.
        training_opts: poptorch.Options for training, used as they are.
        inference_opts: poptorch.Options for validation, test and predict, used as they are.

    Raises:
        ValueError: `device_iterations` is not a positive int.
        TypeError: `training_opts` / `inference_opts` are not poptorch.Options.
    """

    strategy_name = "ipu_strategy"

    def __init__(self, accelerator=None, device_iterations: int = 1, autoreport: bool = False,
                 autoreport_dir: str | None = None, parallel_devices=None, cluster_environment=None,
                 checkpoint_io=None, precision_plugin: Precision | None = None,
                 training_opts: poptorch.Options | None = None,
                 inference_opts: poptorch.Options | None = None):
        super().__init__(accelerator=accelerator, parallel_devices=parallel_devices,
                         cluster_environment=cluster_environment, checkpoint_io=checkpoint_io,
                         precision_plugin=precision_plugin)
        if (isinstance(device_iterations, bool) or not isinstance(device_iterations, int)
                or device_iterations < 1):
            raise ValueError(f"IPUStrategy(device_iterations={device_iterations!r}): give a "
                             f"positive int (the IPU runs that many iterations per call)")
        for name, opts in (("training_opts", training_opts), ("inference_opts", inference_opts)):
            if opts is not None and not isinstance(opts, poptorch.Options):
                raise TypeError(f"IPUStrategy({name}=...) takes a poptorch.Options, got "
                                f"{type(opts).__name__}")
        self.device_iterations = device_iterations
        self.autoreport = autoreport or autoreport_dir is not None
        self.autoreport_dir = autoreport_dir
        if autoreport:
            _set_engine_options(autoreport_dir)
        self._user_training_opts, self._user_inference_opts = training_opts, inference_opts
        self._training_opts = self._inference_opts = None
        self._accumulation: int | None = None  # the Trainer's accumulate_grad_batches
        self.poptorch_models: dict[RunningStage, poptorch.PoplarExecutor] = {}
        self._report_paths: list[str] = []
        self._stats: dict[str, StageStats] = {}  # per stage name, e.g. "training"
        self._pushed_settings: list[dict] | None = None  # optimizer hyperparameters on the IPU
        self._keep_loaders = KeepPoptorchLoaders(poptorch.DataLoader)

    # --- the simulator's extras (support/extras_registry.py) --------------------------------------
    stats = _extras.served_property("lightning.pytorch.strategies.ipu.IPUStrategy.stats",
                                    lambda self: self._stats)
    stats.__doc__ = ("(Simulator extra) calls, samples and simulated seconds per stage name "
                     "(\"training\", \"validation\", ...).")
    report_paths = _extras.served_property(
        "lightning.pytorch.strategies.ipu.IPUStrategy.report_paths",
        lambda self: self._report_paths)
    report_paths.__doc__ = "(Simulator extra) the reports written when the stages ended."

    # --- precision: whatever Lightning hands over becomes an IPUPrecisionPlugin ------------------
    @property
    def precision_plugin(self) -> IPUPrecisionPlugin:
        """The strategy's IPUPrecisionPlugin ("32-true" unless set). Setting another
        Lightning precision plugin keeps its precision in an IPUPrecisionPlugin, so the IPU's
        rules (no clipping, no LBFGS) always apply."""
        plugin = self._precision_plugin
        return plugin if plugin is not None else IPUPrecisionPlugin("32-true")

    @precision_plugin.setter
    def precision_plugin(self, plugin: Precision | None) -> None:
        if plugin is not None and not isinstance(plugin, IPUPrecisionPlugin):
            plugin = IPUPrecisionPlugin(plugin.precision)
        self._precision_plugin = plugin

    # --- options -------------------------------------------------------------------------------
    @property
    def replication_factor(self) -> int:
        """Replicas of the current stage's model once set up; before that, from your options
        if you passed some (training first), else `Trainer(devices=...)`."""
        stage_model = self._current_model()
        if stage_model is not None:
            return stage_model.options.replication_factor
        for opts in (self._user_training_opts, self._user_inference_opts):
            if opts is not None:
                return opts.replication_factor
        return len(self.parallel_devices) if self.parallel_devices else 1

    def _current_model(self) -> poptorch.PoplarExecutor | None:
        trainer = getattr(self._lightning_module, "_trainer", None)
        if trainer is None or not self.poptorch_models:
            return None
        return self.poptorch_models.get(trainer.state.stage)

    def _create_opts(self, training: bool) -> poptorch.Options:
        seed = os.environ.get("PL_GLOBAL_SEED")  # set by seed_everything
        return default_options(self.replication_factor, self._accumulation or 1,
                               self.device_iterations, None if seed is None else int(seed),
                               training)

    @property
    def training_opts(self) -> poptorch.Options:
        """The options of the training model (yours, or built from the Trainer)."""
        if self._user_training_opts is not None:
            return self._user_training_opts
        if self._training_opts is None:
            self._training_opts = self._create_opts(training=True)
        return self._training_opts

    @property
    def inference_opts(self) -> poptorch.Options:
        """The options of the validation, test and predict models."""
        if self._user_inference_opts is not None:
            return self._user_inference_opts
        if self._inference_opts is None:
            self._inference_opts = self._create_opts(training=False)
        return self._inference_opts

    # --- set-up and tear-down ------------------------------------------------------------------
    def setup(self, trainer) -> None:
        """Check the Trainer and module, then wrap the module's steps for this Trainer
        function, as Lightning 2.0.9 did: `fit` builds a `poptorch.trainingModel` (with the
        first optimizer) and, when validation runs, one `inferenceModel` shared with the
        sanity check; `validate`, `test` and `predict` build one `inferenceModel` each.

        The Trainer's `accumulate_grad_batches` moves into the options (the IPU accumulates
        inside one call) and is 1 until `teardown` restores it.

        Raises:
            MisconfigurationException: what an IPU cannot run (an overridden batch-transfer
                hook, gradient clipping, manual optimization, several optimizers), each with
                what to do instead.
        """
        _checks.check_trainer(trainer, self.lightning_module)
        # The IPU accumulates inside one call, so Lightning must step after every batch.
        if self._accumulation is None:
            self._accumulation = trainer.accumulate_grad_batches
        trainer.accumulate_grad_batches = 1
        self._training_opts = self._inference_opts = None  # rebuilt from this Trainer
        super().setup(trainer)
        _checks.check_manual_optimization(self.lightning_module)
        if self._keep_loaders.original is None:
            self._keep_loaders.__enter__()
        self.poptorch_models = {}  # one set per Trainer function (fit, validate, test, predict)
        self._build_models(trainer)
        rank_zero_info(f"IPU available: True (simulated), using: {self.replication_factor} "
                       f"replica(s)")

    def _build_models(self, trainer) -> None:
        module = self.lightning_module
        if trainer.state.fn == TrainerFn.FITTING:
            self.poptorch_models[RunningStage.TRAINING] = poptorch.trainingModel(
                LightningStep(module, "training_step"), self.training_opts, self.optimizers[0])
            if trainer.enable_validation:
                validation = poptorch.inferenceModel(LightningStep(module, "validation_step"),
                                                     self.inference_opts)
                self.poptorch_models[RunningStage.VALIDATING] = validation
                if trainer.num_sanity_val_steps > 0:
                    self.poptorch_models[RunningStage.SANITY_CHECKING] = validation
            return
        stage = FN_STAGE[trainer.state.fn]
        self.poptorch_models[stage] = poptorch.inferenceModel(
            LightningStep(module, STEPS[stage]), self.inference_opts)

    def setup_optimizers(self, trainer) -> None:
        """Lightning's optimizers, refusing more than one as Lightning 2.0.9 did ("IPUs
        currently only support one optimizer").

        Raises:
            MisconfigurationException: several optimizers, or one an IPU cannot run.
        """
        try:
            super().setup_optimizers(trainer)
        except RuntimeError as error:  # Lightning's advice (manual optimization) fails on IPUs
            if "multiple optimizers" not in str(error):
                raise
            raise MisconfigurationException(_checks.ONE_OPTIMIZER.format(count="several")) from error
        _checks.check_optimizers(self.optimizers)

    def teardown(self) -> None:
        """Write the reports (with `autoreport`), destroy the stage models (as Lightning
        2.0.9 did), stop converting dataloaders and give the Trainer back its
        `accumulate_grad_batches`."""
        if self.autoreport:
            self._write_reports()
        for model in set(self.poptorch_models.values()):
            if model.isCompiled():
                model.destroy()
        self.poptorch_models = {}
        self._keep_loaders.__exit__()
        trainer = getattr(self.lightning_module, "_trainer", None)
        if trainer is not None and self._accumulation is not None:
            trainer.accumulate_grad_batches = self._accumulation
            self._accumulation = None
        super().teardown()

    def _write_reports(self) -> None:
        directory = self.autoreport_dir if self.autoreport_dir is not None else os.getcwd()
        for stage, name in REPORT_NAMES.items():
            model = self.poptorch_models.get(stage)
            if model is not None and model.isCompiled():
                self._report_paths.append(model.report().save(os.path.join(directory, name)))

    # --- data ----------------------------------------------------------------------------------
    @property
    def handles_gradient_accumulation(self) -> bool:
        """True: one Lightning batch is one IPU call, which accumulates by itself."""
        return True

    def process_dataloader(self, dataloader: object) -> object:
        """After set-up, a poptorch.DataLoader with the stage's options (before it, as
        Lightning 2.0.9 did, the loader is left as given: its batches count one step each)."""
        if self._keep_loaders.original is None:
            return dataloader
        stage = self.lightning_module.trainer.state.stage
        training = stage == RunningStage.TRAINING
        opts = self.training_opts if training else self.inference_opts
        return to_poptorch_loader(dataloader, opts, REPORT_NAMES.get(stage, str(stage)))

    def batch_to_device(self, batch: Any, device=None, dataloader_idx: int = 0) -> Any:
        """No move (the IPU call streams the batch); with 16-bit precision, floats become half."""
        if not self.precision_plugin._casts_inputs:
            return batch
        return tree_map(lambda x: x.half() if isinstance(x, torch.Tensor)
                        and x.is_floating_point() else x, batch)

    # --- steps ---------------------------------------------------------------------------------
    def _step(self, stage: RunningStage, *args, **kwargs):
        model = self.poptorch_models[stage]
        # as Lightning's IPUStrategy._prepare_input: a Python number (batch_idx) becomes a
        # tensor, since a compiled PopTorch model refuses a changed non-tensor argument
        args = tree_map(lambda x: torch.tensor(x) if isinstance(x, (int, float))
                        and not isinstance(x, bool) else x, args)
        output = model(*args, **kwargs)
        stats = self._stats.setdefault(REPORT_NAMES.get(stage, "validation"), StageStats())
        batch = next((t for t in tree_flatten((args, kwargs))[0]
                      if isinstance(t, torch.Tensor) and t.dim()), None)
        stats.calls += 1
        stats.samples += 0 if batch is None else batch.shape[0]
        stats.simulated_seconds += model.plan.call_seconds
        return output

    def training_step(self, *args, **kwargs):
        """One IPU training call: forward, backward and weight update of every micro-batch
        in the batch. A learning-rate scheduler's change reaches the device first through
        `setOptimizer` (Lightning 2.0.9 called it at every batch start).

        Returns:
            What the module's `training_step` returned, as the wrapped model's output mode
            gives it (by default the last micro-batch's).
        """
        self._push_optimizer_changes()
        with self.precision_plugin.train_step_context():
            return self._step(RunningStage.TRAINING, *args, **kwargs)

    def _push_optimizer_changes(self) -> None:
        """A learning-rate scheduler edits the host optimizer; the IPU sees it only through
        setOptimizer (as the real strategy does at every batch start), so push it when the
        hyperparameters changed, and skip the re-plan when they did not."""
        optimizer = self.lightning_module.trainer.optimizers[0]
        settings = [{k: v for k, v in group.items() if k != "params"}
                    for group in optimizer.param_groups]
        model = self.poptorch_models[RunningStage.TRAINING]
        if model.isCompiled() and settings != self._pushed_settings:
            model.setOptimizer(optimizer)
        self._pushed_settings = settings

    def validation_step(self, *args, **kwargs):
        """One inference call of the module's `validation_step` (also for the sanity check)."""
        stage = self.lightning_module.trainer.state.stage
        with self.precision_plugin.val_step_context():
            return self._step(stage, *args, **kwargs)

    def test_step(self, *args, **kwargs):
        """One inference call of the module's `test_step`."""
        with self.precision_plugin.test_step_context():
            return self._step(RunningStage.TESTING, *args, **kwargs)

    def predict_step(self, *args, **kwargs):
        """One inference call of the module's `predict_step`."""
        with self.precision_plugin.predict_step_context():
            return self._step(RunningStage.PREDICTING, *args, **kwargs)

    def _attach_only(self, stage: RunningStage) -> None:
        """The stage's executable is loaded on the IPUs; the others are detached."""
        current = self.poptorch_models.get(stage)
        for model in set(self.poptorch_models.values()):
            if model is not current and model.isCompiled() and model.isAttachedToDevice():
                model.detachFromDevice()
        if current is not None and current.isCompiled() and not current.isAttachedToDevice():
            current.attachToDevice()

    def on_train_start(self) -> None:
        """Attach the training model to the IPUs and detach the others (Lightning 2.0.9
        detached every model at each stage's end instead: docs/lightning.md)."""
        self._attach_only(RunningStage.TRAINING)

    def on_validation_start(self) -> None:
        """Attach the validation (or sanity-check) model and detach the others."""
        self._attach_only(self.lightning_module.trainer.state.stage)

    def on_test_start(self) -> None:
        """Attach the test model and detach the others."""
        self._attach_only(RunningStage.TESTING)

    def on_predict_start(self) -> None:
        """Attach the predict model and detach the others."""
        self._attach_only(RunningStage.PREDICTING)

    @classmethod
    def register_strategies(cls, strategy_registry) -> None:
        """Register "ipu_strategy" in Lightning's strategy registry (done on import)."""
        strategy_registry.register(cls.strategy_name, cls,
                                   description="Simulated Graphcore IPUs (ipu_tutorials)")
