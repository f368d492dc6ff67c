"""popdist.poptorch.Options: poptorch.Options already set for this instance's share of the run."""
from __future__ import annotations

import os
import warnings

from ... import poptorch as _poptorch
from ...poptorch import _instances
from ...poptorch import option_groups as _option_groups
from . import (ENV_UNDER_POPRUN, getInstanceIndex, getNumInstances, getNumIpusPerReplica,
               getNumLocalReplicas, isPopdistEnvSet)


def _refuse(setter: str):
    """The setters popdist owns: poprun's arguments decide them for every instance."""
    raise RuntimeError(f"Cannot call `{setter}` with popdist.poptorch.Options: poprun's "
                       f"arguments set it for each instance (use poptorch.Options to set it "
                       f"by hand)")


class _Distributed(_option_groups._DistributedOptions):
    """opts.Distributed of popdist's Options: the process id and count are popdist's."""

    def disable(self):
        _refuse("Distributed.disable")

    def setEnvVarNames(self, *args, **kwargs):
        _refuse("Distributed.setEnvVarNames")

    def configureProcessId(self, *args, **kwargs):  # refused whatever it is given, as popdist does
        if self.__dict__.get("_popdist_set"):
            _refuse("Distributed.configureProcessId")
        super().configureProcessId(*args, **kwargs)
        object.__setattr__(self, "_popdist_set", True)
        return self


class Options(_poptorch.Options):
    """poptorch.Options with the local replication factor and the process id and count set.

    Set the rest (device iterations, gradient accumulation, randomSeed for a shuffling
    DataLoader) as usual, and the same in every instance; a mismatch is reported at compile.
    The settings popdist owns (replicationFactor, useIpuId and opts.Distributed's setters)
    raise RuntimeError, as they do with popdist.

    Args:
        ipus_per_replica: the IPUs one replica of this program uses (as in real popdist); a
            warning says so when poprun was given a different --ipus-per-replica.
    """

    def __init__(self, ipus_per_replica: int | None = None):
        super().__init__()
        super().replicationFactor(getNumLocalReplicas())
        self.Distributed.__class__ = _Distributed  # from now on its setters are refused
        self.Distributed.configureProcessId(getInstanceIndex(), getNumInstances())
        if not isPopdistEnvSet():
            return
        if ipus_per_replica is not None and ipus_per_replica != getNumIpusPerReplica():
            warnings.warn(f"the program uses {ipus_per_replica} IPU(s) per replica but poprun "
                          f"was given --ipus-per-replica {getNumIpusPerReplica()}: pass the same "
                          f"number to poprun", stacklevel=2)
        if os.environ.get(ENV_UNDER_POPRUN):
            _instances.stop_on_sigterm()

    def useIpuId(self, *args, **kwargs):
        _refuse("useIpuId")

    def replicationFactor(self, *args, **kwargs):
        _refuse("replicationFactor")
