"""popdist.poptorch.Options: poptorch.Options already set for this instance's share of the run."""
from __future__ import annotations

import os
import warnings

from .. import poptorch as _poptorch
from ..poptorch import _instances
from . import (ENV_UNDER_POPRUN, getInstanceIndex, getNumInstances, getNumIpusPerReplica,
               getNumLocalReplicas, isPopdistEnvSet)


class Options(_poptorch.Options):
    """poptorch.Options with the local replication factor and the process id and count set.

    Set the rest (device iterations, gradient accumulation, randomSeed for a shuffling
    DataLoader) as usual, and the same in every instance; a mismatch is reported at compile.

    Args:
        ipus_per_replica: the IPUs one replica of this program uses (as in real popdist); a
            warning says so when poprun was given a different --ipus-per-replica.
    """

    def __init__(self, ipus_per_replica: int | None = None):
        super().__init__()
        self.replicationFactor(getNumLocalReplicas())
        self.Distributed.configureProcessId(getInstanceIndex(), getNumInstances())
        if not isPopdistEnvSet():
            return
        if ipus_per_replica is not None and ipus_per_replica != getNumIpusPerReplica():
            warnings.warn(f"the program uses {ipus_per_replica} IPU(s) per replica but poprun "
                          f"was given --ipus-per-replica {getNumIpusPerReplica()}: pass the same "
                          f"number to poprun", stacklevel=2)
        if os.environ.get(ENV_UNDER_POPRUN):
            _instances.stop_on_sigterm()
