"""The PopTorch API, running on simulated IPUs: `from ipu_tutorials import poptorch`.

Its names are PopTorch 3.4's (tests/peer/manifests/poptorch-3.4.0.json) and no more: the
simulator's extras are served by `__getattr__` and noted while a recording runs
(ipu_tutorials/support/extras.py), and the facade's own modules (`blocks`, `data`, ...) are
not names of the package, as PopTorch has none of them.
"""
from ..errors import Error, OutOfMemoryError
from ..support import extras as _extras
from . import optim
from .blocks import BeginBlock, Block, BlockFunction, module_repr, removeBlocks
from .data import AsynchronousDataAccessor, DataLoader
from .enums import (AutoStage, CommGroupType, ConnectionType, DataLoaderMode,
                    HalfFloatCastingBehavior, Liveness, MatMulSerializationMode, MeanReductionStrategy,
                    MultiConvPlanType, OutputMode, OverlapMode, ReductionType, SharingStrategy,
                    SyncPattern)
from .executor import PoplarExecutor
from .arg_parsers import ICustomArgParser, registerCustomArgParser
from .compile_hooks import registerPostCompileHook, registerPreCompileHook
from .cpu_op import CPU
from .ctc import ctc_beam_search_decoder
from .control_flow import cond, dynamic_slice, dynamic_update, for_loop
from .ops import (MultiConv, custom_op, identity_loss, ipu_print_tensor,
                  ipuHardwareIsAvailable, ipuHardwareVersion, isRunningOnIpu, nop,
                  recomputationCheckpoint, register_custom_op, serializedMatMul,
                  set_available_memory, setLogLevel)
from .tensor_locations import TensorLocationSettings
from .overlapped_io import set_overlap_for_input, set_overlap_for_output
from .options import Options
from .strategies import (ParallelPhasedExecution, Phase, PipelinedExecution,
                         SerialPhasedExecution, ShardedExecution, Stage)
from .wrapping import inferenceModel, load, trainingModel

__all__ = [
    "AsynchronousDataAccessor", "AutoStage", "BeginBlock", "Block", "BlockFunction", "CPU",
    "CommGroupType", "ConnectionType", "DataLoader", "DataLoaderMode", "Error",
    "HalfFloatCastingBehavior", "ICustomArgParser", "Liveness", "MatMulSerializationMode",
    "MeanReductionStrategy", "MultiConv", "MultiConvPlanType", "Options", "OutputMode",
    "OverlapMode", "ParallelPhasedExecution", "Phase", "PipelinedExecution", "PoplarExecutor",
    "ReductionType", "SerialPhasedExecution", "ShardedExecution", "SharingStrategy", "Stage",
    "SyncPattern", "TensorLocationSettings", "cond", "ctc_beam_search_decoder", "custom_op",
    "dynamic_slice", "dynamic_update", "for_loop", "identity_loss", "inferenceModel",
    "ipuHardwareIsAvailable", "ipuHardwareVersion", "ipu_print_tensor", "isRunningOnIpu",
    "load", "module_repr", "nop", "optim", "recomputationCheckpoint", "registerCustomArgParser",
    "registerPostCompileHook", "registerPreCompileHook", "removeBlocks", "serializedMatMul",
    "set_available_memory", "set_overlap_for_input", "set_overlap_for_output", "setLogLevel",
    "trainingModel",
]

# The simulator's extras (declared in support/extras_registry.py): served on first read
_SERVED = {"OutOfMemoryError": OutOfMemoryError, "register_custom_op": register_custom_op}
del OutOfMemoryError, register_custom_op
__getattr__ = _extras.module_getattr("poptorch", _SERVED)


def __dir__() -> list[str]:
    return sorted([*globals(), *_SERVED])


# PopTorch has no poptorch.blocks, poptorch.data ...: the facade's own modules are imported by
# their full path (ipu_tutorials.poptorch.data), never read as names of the package.
for _module in ("arg_parsers", "blocks", "compile_hooks", "control_flow", "cpu_op", "ctc",
                "data", "executor", "option_groups", "overlapped_io", "perf_counters",
                "strategies", "tensor_locations", "wrapping"):
    globals().pop(_module, None)
del _module
