"""PopTorch's enumerations, with the real names and values."""
import enum


class SharingStrategy(enum.IntEnum):
    """How PopTorch's asynchronous loader process receives data; recorded only (the
    simulator's AsynchronousDataAccessor loads in a thread, which shares memory)."""

    SharedMemory = 0
    FileSystem = 1
    Fork = 2
    ForkServer = 3


class OutputMode(enum.IntEnum):
    """Which results of a call's micro-batches are returned to the host."""

    Final = 0  # the last micro-batch of each replica
    EveryN = 1  # every N-th micro-batch (N = output_return_period)
    All = 2  # every micro-batch
    Sum = 3  # the sum over micro-batches, per replica
    Default = 4  # Final for training, All for inference


class DataLoaderMode(enum.IntEnum):
    """How `poptorch.DataLoader` prepares a call's batch (PopTorch 3.4's values).

    `Sync` reads each batch when the call asks for it; `Async` reads ahead through an
    `AsynchronousDataAccessor`; `AsyncRebatched` also reads ahead, with workers reading one
    sample at a time and the accessor building the batches (for an iterable dataset, so that
    fewer samples are dropped; a map-style dataset behaves as `Async`). The simulator's
    accessor is a thread, not PopTorch's worker process (docs/differences.md).
    """

    Sync = 0
    Async = 1
    AsyncRebatched = 2


class AutoStage(enum.IntEnum):
    """How blocks become stages when a pipelined or sharded strategy is given no stages.

    `SameAsIpu` (PopTorch's default) numbers a block's stage by its `ipu_id`, so two blocks on
    one IPU share a stage; `AutoIncrement` gives every new block the next stage.
    """

    SameAsIpu = 0  # stage id = the block's ipu_id
    AutoIncrement = 1  # a new stage for every block


class Liveness(enum.IntEnum):
    """When phased execution moves a phase's tensors off the chip (PopTorch 3.4's values).

    `AlwaysLive` keeps them on chip between phases; `OffChipAfterFwd` stores them off chip
    from the end of the forward pass to the start of the backward; `OffChipAfterFwdNoOverlap`
    does the same without overlapping loads and stores across phases (less memory, more
    time); `OffChipAfterEachPhase` stores them at the end of every phase. The simulator's
    memory plan and timeline follow each value (`simulator/phases.py`).
    """

    AlwaysLive = 0
    OffChipAfterFwd = 1
    OffChipAfterFwdNoOverlap = 2
    OffChipAfterEachPhase = 3


class HalfFloatCastingBehavior(enum.IntEnum):
    """Deprecated in PopTorch 3.x: how an op mixing float16 and float32 was typed.

    PopTorch 3.4 keeps the values only for `Precision.halfFloatCasting`, which it ignores
    (float16 meeting float32 is upcast, as in PyTorch). The simulator records the value and
    honours `FloatDowncastToHalf` as SDK 2.x did (docs/differences.md).
    """

    FloatDowncastToHalf = 0
    HalfUpcastToFloat = 1
    Default = 2


class ReductionType(enum.IntEnum):
    """How values are combined: `Sum`, `Mean` or `NoReduction` (PopTorch's values).

    Used for the reduction of gradients over accumulated micro-batches and replicas
    (`Training.accumulationAndReplicationReductionType`, which takes Sum or Mean).
    """

    Sum = 0
    Mean = 1
    NoReduction = 2


class MeanReductionStrategy(enum.IntEnum):
    """When a Mean reduction of gradients divides (PopTorch's values 0 and 1).

    `Running` keeps the reduction buffer as the mean so far (never larger than the largest
    micro-batch gradient, the safer choice in float16); `Post` sums every gradient and
    divides once at the end (faster, but the sum can overflow). PopTorch 3.4 also has the
    deprecated `PostAndLoss` (2), which the simulator does not offer (docs/differences.md).
    """

    Running = 0
    Post = 1


class SyncPattern(enum.IntEnum):
    """How IPUs synchronise for host I/O (`Options.syncPattern`; PopTorch's values).

    `Full` makes every IPU synchronise on each exchange with the host or another IPU;
    `SinglePipeline` lets an IPU exchange with the host without the others; `ReplicaAndLadder`
    lets groups of IPUs take turns at host I/O. The simulator records the value; its timeline
    does not change with it.
    """

    Full = 0
    SinglePipeline = 1
    ReplicaAndLadder = 2


class ConnectionType(enum.IntEnum):
    """When a compiled model attaches to its IPUs (`Options.connectionType`; PopTorch's values).

    `Always` attaches from the start (the default); `OnDemand` once the executable is ready
    to run; `Never` never attaches, for compiling offline (running then raises). The
    simulator's IPUs are always free, so `Always` and `OnDemand` behave alike.
    """

    Always = 0
    OnDemand = 1
    Never = 2


class CommGroupType(enum.IntEnum):
    """How replicas are grouped to share an input (`Options.inputReplicaGrouping`).

    With N replicas in groups of k: `Consecutive` groups replicas 0..k-1, k..2k-1, ...;
    `Orthogonal` groups every (N/k)-th replica together; `NoGrouping` gives each replica its
    own value; `All` shares one value among all replicas (PopTorch refuses it for inputs).
    PopTorch also uses these for per-replica weights (`replicaGrouping`), which the
    simulator lacks (docs/differences.md).
    """

    All = 0
    Consecutive = 1
    Orthogonal = 2
    NoGrouping = 3


class MultiConvPlanType(enum.IntEnum):
    """How a `poptorch.MultiConv` runs its convolutions: `Parallel` (the default, side by side;
    the simulator's group takes as long as its slowest member) or `Serial` (one after another,
    as independent convolutions)."""

    Parallel = 0
    Serial = 1


class MatMulSerializationMode(enum.Enum):
    """Which dimension `serializedMatMul` splits a matrix product along (PopTorch's values);
    `Disabled` computes it whole."""

    InputChannels = "input_channels"  # split the rows of the left-hand side
    ReducingDim = "reducing_dim"  # split the shared dimension and sum the partial products
    OutputChannels = "output_channels"  # split the columns of the right-hand side
    Disabled = "none"


class OverlapMode(enum.Enum):
    """How far host I/O of one input or output runs ahead of (overlaps) the computation."""
    NoOverlap = "no_overlap"  # copied when needed
    OverlapAccumulationLoop = "overlap_accumulation_loop"  # the next micro-batch, on I/O tiles
    OverlapDeviceIterationLoop = "overlap_device_iteration_loop"  # the next device iteration too
