"""PoplarExecutor: a model wrapped for the (simulated) IPU, as trainingModel and inferenceModel return it.

It is PopTorch's API over jobs that live elsewhere: checks in _validation, the simulator
behind the _to_simulator door, device weights and wrappers in _device_state, latencies in
perf_counters, anchored tensors in _anchors; wrapping and loading in wrapping.
"""
from __future__ import annotations

import os
import time
import warnings

import torch
from torch.utils._pytree import tree_map

from ..errors import Error, OfflineDeviceError
from ..profiling import autoreport
from ..support import environment
from ..support import extras as _extras
from ..support.atomic_io import atomic_open
from . import _instances, overlapped_io
from . import _lowering_rules as lowering_rules
from . import _to_simulator as simulator
from ._anchors import Anchors
from ._device_link import DeviceLink
from ._device_optimizer import AttributeTracker, DeviceOptimizer
from ._ipu_state import DeviceOptimizerState, IpuStateDict
from ._loss_scaling import AutomaticLossScaling, step_scaling
from ._host_types import detach_inputs, ipu_output_types
from ._logging import log_compiled
from ._option_rules import resolved_output_mode
from ._device_state import (TRAINING_WRAPPERS, WEIGHT_VERSIONS, DeviceWeights, buffer_ids,
                            check_buffers_kept, in_modes)
from ._input_signature import bind, check_inputs, check_not_zero_sized
from ._progress import compilation_bar
from ._saved_file import read_saved
from .blocks import module_repr
from .compile_hooks import run_post_compile_hooks, run_pre_compile_hooks
from ._validation import (check_new_optimizer, check_optimizer, check_popart_options,
                          check_run_options, check_updatable_buffers, settle_reduction,
                          updatable_buffers)
from .control_flow import training_graph
from .enums import ConnectionType
from .options import Options
from .perf_counters import (NOT_COMPILED, CallRecord, PerfCounters, PerfQueries, streams,
                            tensor_count)


def _wrapped_module(model) -> torch.nn.Module:
    if isinstance(model, PoplarExecutor):
        model = model.model
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"expected a torch.nn.Module to wrap, got {type(model).__name__}")
    return model


def _frozen_copy(options: Options | None, training: bool) -> Options:
    options = Options() if options is None else options
    if not isinstance(options, Options):
        raise Error(f"Invalid type: 'options' is of type {type(options).__name__} (Expected "
                    f"poptorch.Options)")
    options._freeze()
    copy = options.clone()
    mode = resolved_output_mode(copy._value("output_mode"), training)
    if mode != copy._value("output_mode"):
        copy.outputMode(mode)
    return copy


class PoplarExecutor(PerfQueries, DeviceLink):
    """A model wrapped for the (simulated) IPU. Call it like the model, with whole-call batches."""

    def __init__(self, model: torch.nn.Module, options: Options | None, training: bool,
                 optimizer=None):
        self._user_model = _wrapped_module(model)
        self._training = training
        self._options = _frozen_copy(options, training)
        self._optimizer = optimizer
        check_run_options(self._options, training)
        self._device_optimizer = None  # the optimizer as the executable holds it
        if training and optimizer is not None:
            check_optimizer(self._user_model, optimizer)
            self._device_optimizer = DeviceOptimizer(optimizer)
            settle_reduction(self._options, optimizer)
        self._options._freeze()
        self._attributes = AttributeTracker(self._options._value("relax_optimizer_checks"))
        self._spec = self._plan = self._graph = self._weights = self._example = None
        self._attached = False
        self._record = CallRecord()
        self._anchors = Anchors(self._user_model, self._options.anchored_tensors,
                                self._options.output_mode)
        self._across_instances = None  # gradient hook when several processes share the run
        self._replica_state = None  # each replica's buffers (simulator.replica_state)
        self._modes: dict[torch.nn.Module, bool] = {}  # train/eval flags at compile
        self._optimizer_state = self._loss_scaling = None  # set up by compile (training)

    # --- compile ---------------------------------------------------------------------------------
    def compile(self, *args, **kwargs) -> None:
        """Capture, place, plan memory and schedule the model for inputs like these."""
        if self._plan is not None:
            warnings.warn("call to compile() ignored: the model is already compiled", stacklevel=2)
            return
        run_pre_compile_hooks()
        bind(self._user_model, args, kwargs)  # PopTorch's parser refuses a missing input first
        check_not_zero_sized(self._user_model, args, kwargs)
        if self._device_optimizer is not None:
            self._attributes.check(self._optimizer)
        opts, env = self._options, environment.read()
        spec = simulator.run_spec(opts, self._training, self._optimizer, self._user_model,
                                  args, kwargs, env, self._loss_scale_taken())
        bar = compilation_bar(opts._value("show_compilation_progress_bar"))
        try:
            check_popart_options(opts)
            check_updatable_buffers(opts, self._user_model)
            buffers = buffer_ids(self._user_model)
            with (overlapped_io.watching(self._user_model) as overlap, lowering_rules.checking(),
                  training_graph(self._training)):
                spec, graph, plan = simulator.compile_model(self._user_model, spec, args,
                                                            kwargs, bar.update)
            overlapped_io.check_settings(overlap, opts, self._training)
            check_buffers_kept(buffers, self._user_model)
        finally:
            bar.close()
        self._spec, self._graph, self._plan = spec, graph, plan
        self._across_instances = _instances.prepare(spec, self._user_model, self._optimizer)
        self._example = tree_map(lambda x: torch.empty_like(x, device="meta")
                                 if isinstance(x, torch.Tensor) else x, (args, kwargs))
        self._attached = opts._value("connection_type") != ConnectionType.Never
        # the weights are uploaded with the executable; an inference model keeps its own copy
        self._weights = DeviceWeights(self._user_model, keep_copy=not self._training)
        self._replica_state = simulator.replica_state(
            self._user_model if self._training else self._weights.copy,
            opts.replication_factor, opts.broadcast_buffers)
        self._modes = {m: m.training for m in self._user_model.modules()}
        self._optimizer_state = self._loss_scaling = None  # a new executable starts afresh
        self._follow_optimizer_state()
        log_compiled(plan, type(self._user_model).__name__, self._training, opts.anchored_tensors,
                     opts._value("output_mode"))
        name = opts._value("model_name") or ("training" if self._training else "inference")
        autoreport.write_if_enabled(opts._value("profile_dir"), env.engine_options, name,
                                    self.report)
        run_post_compile_hooks()

    def _loss_scale_taken(self) -> float:
        """The optimizer's loss scale as the device took it (wrap or setOptimizer)."""
        return 1.0 if self._device_optimizer is None else self._device_optimizer.loss_scaling

    def _follow_optimizer_state(self) -> None:
        """PopTorch's ipu_state and automatic loss scaling follow the first poptorch.optim
        optimizer the model is given, at compile or by setOptimizer (never offline)."""
        if self._loss_scaling is None:
            self._loss_scaling = AutomaticLossScaling.for_model(self._options, self._optimizer)
        if (self._optimizer_state is None and isinstance(self._optimizer, IpuStateDict)
                and self._attached):
            self._optimizer_state = DeviceOptimizerState(self._user_model, self._spec,
                                                         self._loss_scaling)
        if self._optimizer_state is not None:
            self._optimizer_state.use(self._optimizer)

    # --- run -------------------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        if self._options._value("connection_type") == ConnectionType.Never:
            raise OfflineDeviceError("Trying to run a model on an offline device (ConnectionType."
                                     "Never, as useOfflineIpuTarget() sets): use model.compile("
                                     "inputs) instead of model(inputs)")
        if self._plan is None:
            self.compile(*args, **kwargs)
        if any(p.is_meta for p in self._user_model.parameters()):
            raise Error("this model lives on the meta device (shapes without data): compile() "
                        "plans it, but running it needs real weights")
        if not self._attached:
            self.attachToDevice()
        args, kwargs = detach_inputs((args, kwargs), warn=self._record.calls == 0)
        check_inputs(self._user_model, self._example, (args, kwargs))
        started = time.perf_counter()
        watched = self._user_model if self._training else self._weights.current()
        buffers = buffer_ids(watched) if self._record.calls == 0 else None
        result = self._train(args, kwargs) if self._training else simulator.run(
            self._weights.current(), self._spec, args, kwargs, replicas=self._replica_state,
            frozen=self._graph.value_reads)
        if buffers is not None:
            check_buffers_kept(buffers, watched)
        self._record.add_call(self._plan.call_seconds, time.perf_counter() - started, result)
        return ipu_output_types(result)

    def _train(self, args: tuple, kwargs: dict):
        """One training call, with the module flags and optimizer values the device holds
        (the user's optimizer is read, never written: the device runs a view of it)."""
        if self._optimizer_state is not None:
            self._optimizer_state.before_run()
        optimizer = self._device_optimizer.view(self._optimizer)
        # a torch.optim optimizer (even one set after a poptorch.optim one) has no loss scale
        scaler = self._loss_scaling if "loss_scaling" in self._device_optimizer.attrs else None
        hook, loss_scale = step_scaling(scaler, self._spec.optimizer.loss_scaling, self._anchors)
        with (in_modes(self._modes), training_graph(True),
              self._anchors.watching(self._spec.replication_factor)):
            result = simulator.run(self._user_model, self._spec, args, kwargs, optimizer,
                                   self._graph.loss, hook, self._across_instances,
                                   self._replica_state, frozen=self._graph.value_reads,
                                   loss_scale=loss_scale)
        self._anchors.record_updated_weights()
        if self._optimizer_state is not None:
            self._optimizer_state.after_run()
        WEIGHT_VERSIONS.mark_written(self._user_model.parameters())
        return result

    # --- weights and device ---------------------------------------------------------------------
    def _require_compiled(self) -> None:
        if self._plan is None:
            raise Error(NOT_COMPILED)

    def copyWeightsToDevice(self) -> None:
        """Upload the host model's weights (needed after training it on the CPU)."""
        self._require_compiled()
        self._weights.upload()
        self._replica_state.reset()

    def copyNamedBuffersToDevice(self) -> None:
        """Upload only the buffers named by opts.updatableNamedBuffers([...])."""
        self._require_compiled()
        names = updatable_buffers(self._options)
        if names is None:
            raise Error("No named buffers marked as updatable via updatableNamedBuffers option")
        self._weights.upload_buffers(names)
        self._replica_state.upload(names)

    def copyWeightsToHost(self) -> None:
        """Download the device weights into the host model (training models do this implicitly)."""
        self._require_compiled()
        self._weights.download()

    def destroy(self) -> None:
        """Free the (simulated) device; a training model's module can then be wrapped again."""
        if self._training:
            TRAINING_WRAPPERS.release(self._user_model, self)
        if self._optimizer_state is not None:
            self._optimizer_state.release()
        self._plan = self._graph = self._weights = self._optimizer_state = None
        self._attached = False

    def setOptimizer(self, optimizer) -> None:
        """Use a new optimizer's hyperparameters from the next call; optimizer state carries over."""
        if not self._training:
            raise Error("setOptimizer() is for training models; an inferenceModel has no optimizer")
        device = check_new_optimizer(self._options, self._user_model,
                                     self._device_optimizer if self._plan else None, optimizer)
        for p, state in self._optimizer.state.items():
            optimizer.state.setdefault(p, state)
        self._optimizer, self._device_optimizer = optimizer, device
        if self._plan is not None:  # its state and update cost may differ: plan again
            self._attributes.check(optimizer)
            self._follow_optimizer_state()
            self._spec, self._plan = simulator.replan(self._graph, self._spec, optimizer,
                                                      self._loss_scale_taken())

    # --- tensors, state and files ----------------------------------------------------------------
    def save(self, filename: str, export_model: bool = True, save_rng_state: bool = True) -> None:
        """Save what poptorch.load needs to rebuild and recompile this model."""
        self._require_compiled()
        if os.path.isdir(filename):
            filename = os.path.join(filename, "model.poptorch")
        os.makedirs(os.path.dirname(os.path.abspath(filename)), exist_ok=True)
        with atomic_open(filename, "wb") as f:  # a crash mid-save keeps the previous file
            torch.save({"training": self._training, "options": self._options,
                        "model": self._user_model if export_model else None,
                        "optimizer": self._optimizer, "example": self._example,
                        "rng_state": torch.get_rng_state() if save_rng_state else None}, f)

    def compileAndExport(self, filename: str, *args, export_model: bool = True, **kwargs) -> None:
        """Compile for inputs like these and save the result to `filename` (PopTorch's
        precompilation). Restore it with poptorch.load, or, when export_model is False, with
        loadExecutable on a new wrapper of the same model."""
        self.compile(*args, **kwargs)
        self.save(filename, export_model)

    def loadExecutable(self, filename: str) -> None:
        """Compile this wrapper for the inputs a compileAndExport file was made for; the weights
        stay this wrapper's model's own.

        Raises:
            Error: when the file was saved from a wrapper of the other kind.
        """
        saved = read_saved(filename)
        if saved["training"] != self._training:
            kinds = {True: "poptorch.trainingModel", False: "poptorch.inferenceModel"}
            raise Error(f"Invalid file {filename}: it holds a {kinds[saved['training']]} "
                        f"executable but this is a {kinds[self._training]}")
        args, kwargs = saved["example"]
        self.compile(*args, **kwargs)

    # --- the wrapped model's attributes ---------------------------------------------------------
    def __getattr__(self, name: str):
        """Anything the executor lacks comes from the wrapped model (poptorch_model.fc.weight,
        .parameters(), .state_dict(), ...), as in PopTorch. A training model's weights are
        always current on the host here, so nothing needs copying first."""
        model = self.__dict__.get("_user_model")
        if model is None or name.startswith("__"):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return getattr(model, name)

    def load_state_dict(self, state_dict: dict, strict: bool = True):
        """Load into the wrapped model, then into the device when attached (as PopTorch does).

        Returns:
            torch's NamedTuple of missing_keys and unexpected_keys.
        """
        result = self._user_model.load_state_dict(state_dict, strict)
        if self.isCompiled() and self.isAttachedToDevice():
            self.copyWeightsToDevice()
        return result

    # --- performance queries (simulated time; the PopTorch-named ones are PerfQueries') ---------
    def _counters(self) -> PerfCounters:
        streamed = None if self._spec is None else streams(self._spec, tensor_count(self._example),
                                                           self._record.outputs)
        return PerfCounters(self._plan, self._record, streamed,
                            self._options._value("log_cycle_count"),
                            self._options._value("show_compilation_progress_bar"))

    # --- PopTorch attributes and simulator extras -----------------------------------------------
    @property
    def model(self) -> torch.nn.Module:
        """The wrapped torch module, as given to `trainingModel` or `inferenceModel` (a
        training model trains its weights in place)."""
        return self._user_model

    @property
    def options(self) -> Options:
        """A copy of the Options the model was wrapped with, its output mode resolved
        (`Default` becomes `Final` or `All`). Both the copy and the user's object are frozen,
        so a later change raises instead of being silently ignored."""
        return self._options

    # `training` is not the executor's: as in PopTorch, it reaches the wrapped module's flag.
    # The simulator's extras (support/extras_registry.py) note each use while recording.
    def _compiled_plan(self) -> simulator.Plan:
        self._require_compiled()
        return self._plan

    plan = _extras.served_property("poptorch.PoplarExecutor.plan", _compiled_plan)
    plan.__doc__ = "(Simulator extra) placement, memory plan, costs and timeline of one call."
    simulated_seconds = _extras.served_property(
        "poptorch.PoplarExecutor.simulated_seconds", lambda self: self._record.simulated_seconds)
    simulated_seconds.__doc__ = "(Simulator extra) IPU time of every call so far, in seconds."
    host_seconds = _extras.served_property(
        "poptorch.PoplarExecutor.host_seconds", lambda self: self._record.host_seconds)
    host_seconds.__doc__ = "(Simulator extra) host wall-clock time spent running calls, in s."

    @_extras.served_method("poptorch.PoplarExecutor.report")
    def report(self):
        """(Simulator extra) the profiling report of this model, as profiling.Report."""
        from ..profiling import Report

        name = self._options._value("model_name") or type(self._user_model).__name__
        return Report.from_plan(self._compiled_plan(), name, self._options.toDict())

    def __repr__(self) -> str:
        """The wrapped model's repr with its BeginBlock annotations, as PopTorch prints it."""
        return module_repr(self._user_model)
