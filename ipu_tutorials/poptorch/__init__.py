"""The PopTorch API, running on simulated IPUs: `from ipu_tutorials import poptorch`."""
from ..errors import Error, OutOfMemoryError
from . import optim
from .blocks import BeginBlock, Block, BlockFunction, module_repr, removeBlocks
from .data import AsynchronousDataAccessor, DataLoader
from .enums import (AutoStage, CommGroupType, ConnectionType, DataLoaderMode,
                    HalfFloatCastingBehavior, Liveness, MatMulSerializationMode, MeanReductionStrategy,
                    MultiConvPlanType, OutputMode, OverlapMode, ReductionType, SyncPattern)
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
    "HalfFloatCastingBehavior", "ICustomArgParser", "Liveness", "MatMulSerializationMode", "MeanReductionStrategy",
    "MultiConv", "MultiConvPlanType", "Options", "OutOfMemoryError", "OutputMode", "OverlapMode",
    "ParallelPhasedExecution", "Phase", "PipelinedExecution", "PoplarExecutor", "ReductionType",
    "SerialPhasedExecution", "ShardedExecution", "Stage", "SyncPattern", "TensorLocationSettings",
    "cond", "ctc_beam_search_decoder", "custom_op", "dynamic_slice", "dynamic_update", "for_loop",
    "identity_loss",
    "inferenceModel", "ipuHardwareIsAvailable",
    "ipuHardwareVersion", "ipu_print_tensor", "isRunningOnIpu", "load", "module_repr", "nop",
    "optim",
    "recomputationCheckpoint", "registerCustomArgParser", "registerPostCompileHook",
    "registerPreCompileHook", "register_custom_op", "removeBlocks", "serializedMatMul",
    "set_available_memory", "set_overlap_for_input", "set_overlap_for_output", "setLogLevel",
    "trainingModel",
]
