"""trainingModel, inferenceModel and the PoplarExecutor they return."""
from __future__ import annotations

import copy
import os
import time
import warnings
import weakref

import torch
from torch.utils._pytree import tree_flatten, tree_map
from torch.utils.weak import WeakIdKeyDictionary

from ..errors import Error
from ..simulator.capture import Graph, capture
from ..simulator.compile import Plan, compile_plan
from ..simulator.runtime import (MIXED_DOWNCAST, MIXED_UPCAST, micro_batch_size,
                                 run_inference, run_training)
from ..profiling import autoreport
from . import _to_simulator
from ._progress import compilation_bar
from .enums import ConnectionType, MeanReductionStrategy, OutputMode, ReductionType
from .options import Options
from .perf_counters import PerfCounters

NOT_COMPILED = "the model has not been compiled, or has been destroyed: call it (or .compile()) first"
_TRAINING_WRAPPERS: "weakref.WeakKeyDictionary[torch.nn.Module, weakref.ref]" = \
    weakref.WeakKeyDictionary()  # model -> its training wrapper, while either lives
_WEIGHT_VERSIONS = WeakIdKeyDictionary()  # weight -> _VERSION when a training model last wrote it
_VERSION = [0]  # bumped each time a training model writes weights back to the host


def _mark_written(params) -> None:
    _VERSION[0] += 1
    for p in params:
        _WEIGHT_VERSIONS[p] = _VERSION[0]


def _batched(tensors) -> list[torch.Tensor]:
    return [t for t in tensors if isinstance(t, torch.Tensor)]


class PoplarExecutor(PerfCounters):
    """A model wrapped for the (simulated) IPU. Call it like the model, with whole-call batches."""

    def __init__(self, model: torch.nn.Module, options: Options | None, training: bool,
                 optimizer=None):
        if isinstance(model, PoplarExecutor):
            model = model._user_model
        if not isinstance(model, torch.nn.Module):
            raise TypeError(f"expected a torch.nn.Module to wrap, got {type(model).__name__}")
        options = Options() if options is None else options
        if not isinstance(options, Options):
            raise TypeError(f"options must be a poptorch.Options, got {type(options).__name__}")
        options._freeze()
        self._options = options.clone()
        if self._options.output_mode == OutputMode.Default:
            self._options.outputMode(OutputMode.Final if training else OutputMode.All)
        self._user_model = model
        self._training = training
        self._optimizer = optimizer
        self._check_options()
        self._options._freeze()
        self._plan: Plan | None = None
        self._graph: Graph | None = None
        self._device_model: torch.nn.Module | None = None
        self._attached = False
        self._example = None
        self._micro_batch = None
        self._mixed = None
        self._compile_seconds = 0.0
        self._calls = 0
        self._clock = 0.0  # simulated seconds of every call so far
        self._last_call_start = None
        self._host_seconds = 0.0  # wall-clock time the host spent on calls
        self._anchors: dict[str, torch.Tensor] = {}

    # --- validation ---------------------------------------------------------------------------
    def _check_options(self):
        opts = self._options
        if not self._training and opts.Training.gradient_accumulation != 1:
            raise Error(f"an inferenceModel has no gradients to accumulate: set "
                        f"opts.Training.gradientAccumulation(1) (it is "
                        f"{opts.Training.gradient_accumulation}); pipelined inference fills the "
                        f"pipeline with deviceIterations instead")
        if opts.output_mode == OutputMode.EveryN and opts.device_iterations % opts.output_return_period:
            raise Error(f"OutputMode.EveryN returns every {opts.output_return_period}th device "
                        f"iteration, so deviceIterations ({opts.device_iterations}) must be a "
                        f"multiple of it")
        if opts.replication_factor % opts.input_group_size:
            raise Error(f"inputReplicaGrouping's group size ({opts.input_group_size}) must divide "
                        f"the replication factor ({opts.replication_factor}); set the grouping "
                        f"again after changing replicationFactor")
        if self._training and self._optimizer is not None:
            self._check_optimizer(self._optimizer)
            if getattr(self._optimizer, "accum_type", None) == torch.float16:
                # PopTorch switches to running means so float16 accumulators cannot overflow.
                opts.Training.setMeanAccumulationAndReplicationReductionStrategy(
                    MeanReductionStrategy.Running)

    def _check_optimizer(self, optimizer):
        if any(g.get("nesterov") for g in optimizer.param_groups):
            raise ValueError("Nesterov momentum is not supported by PopTorch's SGD; use "
                             "nesterov=False")
        owned = {id(p) for p in self._user_model.parameters()}
        if any(id(p) not in owned for g in optimizer.param_groups for p in g["params"]):
            raise ValueError("the optimizer holds parameters that are not in the wrapped "
                             "model; build it from this model's parameters")

    # --- compile ---------------------------------------------------------------------------------
    def compile(self, *args, **kwargs) -> None:
        """Capture, place, plan memory and schedule the model for inputs like these."""
        if self._plan is not None:
            warnings.warn("call to compile() ignored: the model is already compiled", stacklevel=2)
            return
        opts = self._options
        inputs = tree_flatten((args, kwargs))[0]
        self._mixed = _to_simulator.mixed_precision(opts, self._user_model, inputs)
        batching = _to_simulator.batching(opts, 1, self._mixed)
        micro = micro_batch_size(_batched(inputs), batching)
        first = tree_map(lambda x: x[:micro] if isinstance(x, torch.Tensor) and x.dim() else x,
                         (args, kwargs))
        if self._mixed == MIXED_UPCAST:  # PyTorch's promotion: float16 inputs become float32
            first = tree_map(lambda x: x.float() if isinstance(x, torch.Tensor)
                             and x.dtype == torch.float16 else x, first)
        started = time.perf_counter()
        bar = compilation_bar(opts.show_compilation_progress_bar)
        try:
            graph = capture(self._user_model, *first,
                            compute_dtype=torch.float16 if self._mixed == MIXED_DOWNCAST else None)
            bar.update(20)
            if self._training:
                self._check_loss(graph)
            config = _to_simulator.run_config(opts, self._training, micro, self._optimizer)
            plan = compile_plan(graph, config, progress=bar.update)
        finally:
            bar.close()
        self._compile_seconds = time.perf_counter() - started
        self._graph, self._plan, self._micro_batch = graph, plan, micro
        self._example = tree_map(lambda x: torch.empty_like(x, device="meta")
                                 if isinstance(x, torch.Tensor) else x, (args, kwargs))
        self._attached = opts.connection_type != ConnectionType.Never
        if not self._training:  # the weights are uploaded with the executable
            self._device_model = copy.deepcopy(self._user_model).eval()
            self._uploaded = _VERSION[0]
        autoreport.write_if_enabled(self)

    def _check_loss(self, graph: Graph):
        if graph.losses_found == 0:
            raise Error("couldn't find a loss in the model's forward pass: a trainingModel computes "
                        "its loss and returns it (e.g. `return output, loss`). Use a PyTorch loss "
                        "(torch.nn.CrossEntropyLoss, F.mse_loss, ...) or wrap a hand-made one in "
                        "poptorch.identity_loss(x, reduction=\"mean\").")
        if graph.losses_found > 1:
            raise Error(f"found {graph.losses_found} independent losses: the graph must have one "
                        f"final loss. Combine them and wrap the total in poptorch.identity_loss, "
                        f"e.g. poptorch.identity_loss(loss1 + loss2, reduction=\"none\").")
        if graph.loss_output is None:
            raise Error("the model computes a loss but does not return it: return the loss from "
                        "forward (alone or as the last output, e.g. `return output, loss`)")

    # --- run -------------------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        if self._options.connection_type == ConnectionType.Never:
            raise Error("this model was compiled for an offline IPU (useOfflineIpuTarget / "
                        "ConnectionType.Never): it can be compiled with model.compile(inputs) "
                        "but not run")
        if self._plan is None:
            self.compile(*args, **kwargs)
        if any(p.is_meta for p in self._user_model.parameters()):
            raise Error("this model lives on the meta device (shapes without data): compile() "
                        "plans it, but running it needs real weights")
        self._attached = True
        args, kwargs = tree_map(self._detach_input, (args, kwargs))
        batching = _to_simulator.batching(self._options, self._micro_batch, self._mixed)
        micro = micro_batch_size(_batched(tree_flatten((args, kwargs))[0]), batching)
        if micro != self._micro_batch:
            raise Error(f"this model was compiled for micro-batches of {self._micro_batch} "
                        f"({self._micro_batch * batching.factor} samples per call) but got "
                        f"{micro * batching.factor} samples; keep the batch size fixed (a "
                        f"poptorch.DataLoader with drop_last=True does), or wrap the model again")
        started = time.perf_counter()
        if self._training:
            result = self._train(args, kwargs, batching)
        else:
            result = run_inference(self._device(), args, kwargs, batching)
        self._host_seconds += time.perf_counter() - started
        self._last_call_start = self._clock
        self._clock += self._plan.call_seconds
        self._calls += 1
        return result

    def _train(self, args, kwargs, batching):
        model = self._user_model.train()
        optimizer = self._optimizer
        training = self._options.Training
        mean = training.accumulation_and_replication_reduction_type == ReductionType.Mean
        running = (training.meanAccumulationAndReplicationReductionStrategy
                   == MeanReductionStrategy.Running)
        on_update = self._record_anchors if self._options.anchored_tensors else None
        result = run_training(model, optimizer, args, kwargs, batching, self._graph.loss_output,
                              mean, running, on_update)
        _mark_written(model.parameters())
        return result

    def _record_anchors(self, grads: dict, scale: float):
        names = {p: n for n, p in self._user_model.named_parameters()}
        for short, anchor in self._options.anchored_tensors.items():
            kind, _, name = anchor["long_name"].rpartition("___")
            for p, g in grads.items():
                if names.get(p) == name:
                    value = g.float() * scale if kind == "Gradient" else p.detach()
                    self._anchors[short] = value.clone()

    @staticmethod
    def _detach_input(x):
        if isinstance(x, torch.Tensor) and x.requires_grad:
            warnings.warn("an input tensor has requires_grad=True: it is detached, because the "
                          "backward pass does not flow into inputs", stacklevel=4)
            return x.detach()
        return x

    def _device(self) -> torch.nn.Module:
        """The inference model's on-device weights, refreshed when a trainingModel changed them."""
        if any(_WEIGHT_VERSIONS.get(p, 0) > self._uploaded for p in self._user_model.parameters()):
            self.copyWeightsToDevice()
        return self._device_model

    # --- weights and device ---------------------------------------------------------------------
    def _require_compiled(self):
        if self._plan is None:
            raise Error(NOT_COMPILED)

    def copyWeightsToDevice(self) -> None:
        """Upload the host model's weights (needed after training it on the CPU)."""
        self._require_compiled()
        if self._device_model is not None:
            self._device_model.load_state_dict(self._user_model.state_dict())
        self._uploaded = _VERSION[0]

    def copyWeightsToHost(self) -> None:
        """Download the device weights into the host model (training models do this implicitly)."""
        self._require_compiled()
        if self._device_model is not None:
            self._user_model.load_state_dict(self._device_model.state_dict())

    def detachFromDevice(self) -> None:
        self._require_compiled()
        if not self._attached:
            raise Error("the device is not attached: nothing to detach")
        self._attached = False

    def attachToDevice(self) -> None:
        self._require_compiled()
        if self._options.connection_type == ConnectionType.Never:
            raise Error("cannot attach: the model was compiled for an offline IPU (ConnectionType.Never)")
        if self._attached:
            raise Error("the device is already attached")
        self._attached = True

    def isAttachedToDevice(self) -> bool:
        return self._attached

    def isCompiled(self) -> bool:
        return self._plan is not None

    def destroy(self) -> None:
        """Free the (simulated) device; a training model's module can then be wrapped again."""
        wrapper = _TRAINING_WRAPPERS.get(self._user_model)
        if self._training and wrapper is not None and wrapper() is self:
            del _TRAINING_WRAPPERS[self._user_model]
        self._plan = self._graph = self._device_model = None
        self._attached = False

    def setOptimizer(self, optimizer) -> None:
        """Use a new optimizer's hyperparameters from the next call; optimizer state carries over."""
        if not self._training:
            raise Error("setOptimizer() is for training models; an inferenceModel has no optimizer")
        if type(optimizer) is not type(self._optimizer):
            raise TypeError(f"setOptimizer() expects a {type(self._optimizer).__name__} like the "
                            f"one the model was compiled with, got {type(optimizer).__name__}")
        self._check_optimizer(optimizer)
        running = (self._options.Training.meanAccumulationAndReplicationReductionStrategy
                   == MeanReductionStrategy.Running)
        if getattr(optimizer, "accum_type", None) == torch.float16 and not running:
            raise ValueError("float16 accumulators need MeanReductionStrategy.Running, but this "
                             "model was compiled with Post: wrap the model again with the new "
                             "optimizer instead")
        for p, state in self._optimizer.state.items():
            optimizer.state.setdefault(p, state)
        self._optimizer = optimizer
        if self._plan is not None:  # its state and update cost may differ: plan again
            config = _to_simulator.run_config(self._options, True, self._micro_batch, optimizer)
            self._plan = compile_plan(self._graph, config)

    # --- tensors, state and files ----------------------------------------------------------------
    def getTensorNames(self) -> list[str]:
        if self._graph is None:
            raise Error("compile the model before calling getTensorNames()")
        return list(self._graph.params) + [f"output{i}" for i in range(len(self._graph.outputs))]

    def getAnchoredTensor(self, short_name: str) -> torch.Tensor:
        if short_name not in self._options.anchored_tensors:
            known = ", ".join(self._options.anchored_tensors) or "none (use opts.anchorTensor)"
            raise Error(f"no anchored tensor named {short_name!r}; anchored: {known}")
        if short_name not in self._anchors:
            raise Error(f"{short_name!r} has no value yet: run a training step first")
        return self._anchors[short_name]

    @property
    def rng_state(self) -> torch.Tensor:
        self._require_compiled()
        return torch.get_rng_state()

    @rng_state.setter
    def rng_state(self, state: torch.Tensor):
        self._require_compiled()
        torch.set_rng_state(state)

    def save(self, filename: str, export_model: bool = True, save_rng_state: bool = True) -> None:
        """Save what poptorch.load needs to rebuild and recompile this model."""
        self._require_compiled()
        if os.path.isdir(filename):
            filename = os.path.join(filename, "model.poptorch")
        os.makedirs(os.path.dirname(os.path.abspath(filename)), exist_ok=True)
        torch.save({"training": self._training, "options": self._options,
                    "model": self._user_model if export_model else None,
                    "optimizer": self._optimizer, "example": self._example,
                    "rng_state": torch.get_rng_state() if save_rng_state else None}, filename)

    # --- PopTorch attributes and simulator extras -----------------------------------------------
    @property
    def model(self) -> torch.nn.Module:
        return self._user_model

    @property
    def options(self) -> Options:
        return self._options

    @property
    def training(self) -> bool:
        return self._training

    @property
    def plan(self) -> Plan:
        """(Simulator) placement, memory plan, costs and timeline of one call."""
        self._require_compiled()
        return self._plan

    @property
    def simulated_seconds(self) -> float:
        """(Simulator) IPU time of every call so far."""
        return self._clock

    @property
    def host_seconds(self) -> float:
        """(Simulator) host wall-clock time spent running calls."""
        return self._host_seconds

    def report(self):
        """(Simulator) the profiling report of this model, as profiling.Report."""
        from ..profiling import Report

        return Report.from_executor(self)

    def __repr__(self) -> str:
        kind = "trainingModel" if self._training else "inferenceModel"
        state = "compiled" if self._plan else "not compiled"
        return f"PoplarExecutor({kind}, {type(self._user_model).__name__}, {state})"


def trainingModel(model: torch.nn.Module, options: Options | None = None,
                  optimizer=None) -> PoplarExecutor:
    """Wrap `model` (which returns its loss) for training on the simulated IPU.

    Args:
        model: returns the loss, alone or as its last output.
        options: poptorch.Options (frozen by this call).
        optimizer: defaults to poptorch.optim.SGD(lr=0.01).
    """
    from .optim import SGD

    if isinstance(model, PoplarExecutor):
        model = model._user_model
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"expected a torch.nn.Module to wrap, got {type(model).__name__}")
    wrapper = _TRAINING_WRAPPERS.get(model)
    if wrapper is not None and wrapper() is not None:
        raise RuntimeError("this model is already wrapped in poptorch.trainingModel; call "
                           ".destroy() on that wrapper before wrapping it again")
    if optimizer is None:
        optimizer = SGD(model.parameters(), lr=0.01)
    executor = PoplarExecutor(model, options, training=True, optimizer=optimizer)
    _TRAINING_WRAPPERS[model] = weakref.ref(executor)  # a strong value would keep the model alive
    return executor


def inferenceModel(model: torch.nn.Module, options: Options | None = None) -> PoplarExecutor:
    """Wrap `model` for inference on the simulated IPU; it keeps its own copy of the weights."""
    return PoplarExecutor(model, options, training=False)


def load(filename: str, edit_opts_fn=None) -> PoplarExecutor:
    """Rebuild and recompile a model saved with PoplarExecutor.save()."""
    saved = torch.load(filename, weights_only=False)
    if saved["model"] is None:
        raise Error(f"{filename} was saved with export_model=False: rebuild the model, wrap it, "
                    f"and load its weights yourself")
    options = saved["options"].clone()
    if edit_opts_fn is not None:
        edit_opts_fn(options)
    if saved["training"]:
        executor = trainingModel(saved["model"], options, saved["optimizer"])
    else:
        executor = inferenceModel(saved["model"], options)
    args, kwargs = saved["example"]
    executor.compile(*args, **kwargs)
    if saved["rng_state"] is not None:
        torch.set_rng_state(saved["rng_state"])
    return executor
