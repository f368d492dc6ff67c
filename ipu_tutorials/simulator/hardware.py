"""IPU chip and system specifications used by the cost model.

Every figure comes from shared/reference/ipu-hardware.md; the comment beside it says which row.
[2nd] marks a secondary source, [derived] a value computed from other figures.
"""
from __future__ import annotations

import dataclasses
import os

KiB = 1024
MiB = 1024**2
GB = 10**9


@dataclasses.dataclass(frozen=True)
class IpuSpec:
    """One IPU chip."""

    name: str  # marketing name, e.g. "GC200"
    version: str  # PopTorch's name: "ipu1", "ipu2", "ipu21"
    tiles: int
    sram_per_tile: int  # bytes
    clock_hz: float
    peak_fp16_flops: float  # FLOP/s, fp16 inputs with fp16 partials
    peak_fp32_flops: float  # FLOP/s
    memory_bandwidth: float  # B/s, tile memory, whole chip
    link_bandwidth: float  # B/s, one IPU-Link, one direction

    @property
    def memory_bytes(self) -> int:
        """In-processor memory of the whole chip."""
        return self.tiles * self.sram_per_tile

    def peak_flops(self, dtype_bytes: int) -> float:
        """Peak arithmetic rate for operands of the given width (2 = fp16, 4 = fp32)."""
        return self.peak_fp16_flops if dtype_bytes <= 2 else self.peak_fp32_flops


GC2 = IpuSpec(
    name="GC2",
    version="ipu1",
    tiles=1216,  # table "tiles" [2nd]
    sram_per_tile=256 * KiB,  # table "SRAM per tile" [2nd]
    clock_hz=1.6e9,  # table "clock" [2nd]
    peak_fp16_flops=124.5e12,  # table "peak FP16" [2nd]
    peak_fp32_flops=31.1e12,  # table "peak FP32" [2nd]
    memory_bandwidth=45e12,  # table "on-chip memory bandwidth" ~45 TB/s [2nd]
    link_bandwidth=64 * GB,  # table "IPU-Links" 64 GB/s per link [2nd]
)

GC200 = IpuSpec(
    name="GC200",
    version="ipu2",
    tiles=1472,  # table "tiles"
    sram_per_tile=638_976,  # table "SRAM per tile": the real OOM message's "638976 bytes"
    clock_hz=1.33e9,  # table "clock" ~1.33 GHz [derived from peak]
    peak_fp16_flops=250e12,  # table "peak FP16"
    peak_fp32_flops=62.5e12,  # table "peak FP32"
    memory_bandwidth=47.5e12,  # table "on-chip memory bandwidth" ~47.5 TB/s (memory guide)
    link_bandwidth=32 * GB,  # table "IPU-Links": 320 GB/s over 10 links [2nd, derived per link]
)

BOW = IpuSpec(
    name="Bow",
    version="ipu21",
    tiles=1472,  # table "tiles"
    sram_per_tile=638_976,  # table "SRAM per tile" 624 KiB
    clock_hz=1.85e9,  # table "clock" [2nd]
    peak_fp16_flops=349e12,  # table "peak FP16" ~349 TFLOP/s [derived from Bow Pod256]
    peak_fp32_flops=87e12,  # table "peak FP32" ~87 TFLOP/s [derived]
    memory_bandwidth=47.5e12 * 1.85 / 1.33,  # GC200 figure scaled by clock [derived]
    link_bandwidth=32 * GB,  # same IPU-Links as GC200 [derived]
)

IPUS = {spec.version: spec for spec in (GC2, GC200, BOW)}
# PopTorch's ipu_version integers (useOfflineIpuTarget) and POPTORCH_IPU_MODEL_VERSION strings.
VERSION_NUMBERS = {1: "ipu1", 2: "ipu2", 21: "ipu21"}


def ipu_spec(version: str | int) -> IpuSpec:
    """Look up a chip by PopTorch version name ("ipu2") or number (2).

    Raises:
        ValueError: for an unknown version, listing the known ones.
    """
    name = VERSION_NUMBERS.get(version, version) if isinstance(version, int) else version
    if name not in IPUS:
        known = ", ".join(f"{v!r} ({s.name})" for v, s in IPUS.items())
        raise ValueError(f"unknown IPU version {version!r}; known versions: {known}")
    return IPUS[name]


@dataclasses.dataclass(frozen=True)
class System:
    """A machine of identical IPUs joined by IPU-Links, attached to a host.

    Defaults describe an IPU-POD16 of GC200s (four IPU-M2000s).
    """

    ipu: IpuSpec = GC200
    num_ipus: int = 16
    # table "host link": an IPU-M2000's host link is 100 GbE RoCE, 12.5 GB/s, shared by its
    # 4 IPUs (the 64 GB/s PCIe Gen4 x16 figure is the host server's bus, not the M2000's link)
    host_bandwidth: float = 12.5 * GB
    ipus_per_host_link: int = 4  # IPUs of one IPU-M2000 / Bow-2000
    # table "streaming memory": no reliable figure; ~16 GB/s per direction [derived, uncertain]
    streaming_bandwidth: float = 16 * GB
    streaming_bytes_per_ipu: int = 64 * GB  # table: up to 256 GB per IPU-M2000 of 4 IPUs

    def __post_init__(self):
        if not isinstance(self.num_ipus, int) or self.num_ipus < 1:
            raise ValueError(f"a system needs at least one IPU (num_ipus: {self.num_ipus!r})")

    def describe(self) -> str:
        mem = self.ipu.memory_bytes / MiB
        return (f"{self.num_ipus} x {self.ipu.name} ({self.ipu.version}): {self.ipu.tiles} tiles, "
                f"{mem:,.0f} MiB in-processor memory and "
                f"{self.ipu.peak_fp16_flops / 1e12:,.1f} TFLOP/s fp16 peak per IPU")


_system: System | None = None


def default_system() -> System:
    """The system the simulator acquires IPUs from: set_system(), else the environment."""
    if _system is not None:
        return _system
    version = os.environ.get("POPTORCH_IPU_MODEL_VERSION", "ipu2")
    count = os.environ.get("IPU_TUTORIALS_NUM_IPUS", "16")
    if not count.isdigit():
        raise ValueError(f"IPU_TUTORIALS_NUM_IPUS must be a positive integer, got {count!r}")
    return System(ipu=ipu_spec(version), num_ipus=int(count))


def set_system(ipu: str | int | IpuSpec = "ipu2", num_ipus: int = 16) -> System:
    """Choose the simulated machine for models compiled from now on and return it."""
    global _system
    spec = ipu if isinstance(ipu, IpuSpec) else ipu_spec(ipu)
    _system = System(ipu=spec, num_ipus=num_ipus)
    return _system


def reset_system() -> None:
    """Forget set_system(): go back to the environment's defaults."""
    global _system
    _system = None
