"""PopTorch's enumerations, with the real names and values."""
import enum


class OutputMode(enum.IntEnum):
    """Which results of a call's micro-batches are returned to the host."""

    Final = 0  # the last micro-batch of each replica
    EveryN = 1  # every N-th micro-batch (N = output_return_period)
    All = 2  # every micro-batch
    Sum = 3  # the sum over micro-batches, per replica
    Default = 4  # Final for training, All for inference


class DataLoaderMode(enum.IntEnum):
    Sync = 0
    Async = 1
    AsyncRebatched = 2


class AutoStage(enum.IntEnum):
    SameAsIpu = 0  # stage id = the block's ipu_id
    AutoIncrement = 1  # a new stage for every block


class Liveness(enum.IntEnum):
    AlwaysLive = 0
    OffChipAfterFwd = 1
    OffChipAfterFwdNoOverlap = 2
    OffChipAfterEachPhase = 3


class HalfFloatCastingBehavior(enum.IntEnum):
    FloatDowncastToHalf = 0
    HalfUpcastToFloat = 1
    Default = 2


class ReductionType(enum.IntEnum):
    Sum = 0
    Mean = 1
    NoReduction = 2


class MeanReductionStrategy(enum.IntEnum):
    Running = 0
    Post = 1


class SyncPattern(enum.IntEnum):
    Full = 0
    SinglePipeline = 1
    ReplicaAndLadder = 2


class ConnectionType(enum.IntEnum):
    Always = 0
    OnDemand = 1
    Never = 2


class CommGroupType(enum.IntEnum):
    All = 0
    Consecutive = 1
    Orthogonal = 2
    NoGrouping = 3


class MultiConvPlanType(enum.IntEnum):
    Parallel = 0
    Serial = 1


class MatMulSerializationMode(enum.Enum):
    InputChannels = "input_channels"  # split the rows of the left-hand side
    ReducingDim = "reducing_dim"  # split the shared dimension and sum the partial products
    OutputChannels = "output_channels"  # split the columns of the right-hand side
    Disabled = "none"


class OverlapMode(enum.Enum):
    """How far host I/O of one input or output runs ahead of (overlaps) the computation."""
    NoOverlap = "no_overlap"  # copied when needed
    OverlapAccumulationLoop = "overlap_accumulation_loop"  # the next micro-batch, on I/O tiles
    OverlapDeviceIterationLoop = "overlap_device_iteration_loop"  # the next device iteration too
