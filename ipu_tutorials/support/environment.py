"""The environment variables the package honours, read in this one place.

Each is read when the user acts (creates Options, compiles a model, imports poptorch), never
inside the simulator, so a test or notebook that sets one sees it take effect at that point.

| variable | effect |
|---|---|
| POPTORCH_IPU_MODEL=1 | Options start with useIpuModel(True) |
| POPTORCH_CACHE_DIR | Options start with enableExecutableCaching(dir) |
| POPTORCH_DEFAULT_OPTIONS | JSON of option calls applied to every new Options |
| POPTORCH_LOG_LEVEL | poptorch.setLogLevel at import |
| POPTORCH_WAIT_FOR_IPU=1 | explained in the error when too few IPUs are free |
| POPTORCH_IPU_MODEL_VERSION | the simulated chip when set_system() was not called ("ipu2") |
| IPU_TUTORIALS_NUM_IPUS | the simulated IPU count when set_system() was not called (16) |
| POPLAR_ENGINE_OPTIONS | JSON; autoReport.* writes a profiling report at compile |
| OMPI_COMM_WORLD_RANK / _SIZE | Options.Distributed's process id and count |
"""
from __future__ import annotations

import dataclasses
import os


@dataclasses.dataclass(frozen=True)
class Environment:
    ipu_model: bool = False
    cache_dir: str | None = None
    default_options: str | None = None
    log_level: str | None = None
    wait_for_ipu: bool = False
    ipu_version: str = "ipu2"
    num_ipus: str = "16"  # checked where it is used, so the error can name the variable
    engine_options: str = ""
    mpi_rank: str | None = None
    mpi_size: str | None = None


def read() -> Environment:
    """The variables as they are now (unset or empty ones take their defaults)."""
    env = os.environ
    return Environment(
        ipu_model=env.get("POPTORCH_IPU_MODEL") == "1",
        cache_dir=env.get("POPTORCH_CACHE_DIR") or None,
        default_options=env.get("POPTORCH_DEFAULT_OPTIONS") or None,
        log_level=env.get("POPTORCH_LOG_LEVEL") or None,
        wait_for_ipu=env.get("POPTORCH_WAIT_FOR_IPU") == "1",
        ipu_version=env.get("POPTORCH_IPU_MODEL_VERSION", "ipu2"),
        num_ipus=env.get("IPU_TUTORIALS_NUM_IPUS", "16"),
        engine_options=env.get("POPLAR_ENGINE_OPTIONS", ""),
        mpi_rank=env.get("OMPI_COMM_WORLD_RANK"),
        mpi_size=env.get("OMPI_COMM_WORLD_SIZE"))
