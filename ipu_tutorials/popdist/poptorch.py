"""popdist.poptorch.Options: poptorch.Options already set for this instance's share of the run."""
from __future__ import annotations

import os

from .. import poptorch as _poptorch
from ..poptorch import _instances
from . import (ENV_UNDER_POPRUN, getInstanceIndex, getNumInstances, getNumLocalReplicas,
               isPopdistEnvSet)


class Options(_poptorch.Options):
    """poptorch.Options with the local replication factor and the process id and count set.

    Set the rest (device iterations, gradient accumulation, randomSeed for a shuffling
    DataLoader) as usual, and the same in every instance; a mismatch is reported at compile.
    """

    def __init__(self):
        super().__init__()
        self.replicationFactor(getNumLocalReplicas())
        self.Distributed.configureProcessId(getInstanceIndex(), getNumInstances())
        if isPopdistEnvSet() and os.environ.get(ENV_UNDER_POPRUN):
            _instances.stop_on_sigterm()
