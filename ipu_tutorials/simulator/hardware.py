"""IPU chip and system specifications used by the cost model.

A new hardware generation is one more IpuSpec here, added to IPUS. The comment beside each
figure names its public source from this list; [derived] marks a value computed from other
figures, [2nd] one that only a secondary (third-party) source gives.

- [JIA19] Z. Jia, B. Tillman, M. Maggioni, D. P. Scarpazza, "Dissecting the Graphcore IPU
  Architecture via Microbenchmarking", arXiv:1912.03413 (2019): the GC2 figures [2nd].
- [GC200] Graphcore, Colossus Mk2 GC200 and IPU-M2000 announcement (July 2020),
  https://www.graphcore.ai/products/ipu : 1,472 tiles, 900 MB In-Processor-Memory, 250 TFLOP/s.
- [M2000] Graphcore, IPU-M2000 datasheet, https://docs.graphcore.ai/projects/ipu-m2000-datasheet/
  : 4 IPUs, up to 256 GB Streaming Memory, PCIe Gen4 host link.
- [MEMGUIDE] Graphcore, "Memory and Performance Optimisation on the IPU",
  https://docs.graphcore.ai/projects/memory-performance-optimisation/ : 638,976 bytes per tile
  (the out-of-memory report's figure), ~47.5 TB/s of tile memory bandwidth.
- [HC33] S. Knowles, "Graphcore Colossus Mk2 IPU", Hot Chips 33 (2021): 10 IPU-Links,
  320 GB/s per chip.
- [BOW] Graphcore, Bow-2000 datasheet, https://docs.graphcore.ai/projects/bow-2000-datasheet/
  (1.4 PFLOP/s FP16.16 over 4 Bow IPUs, IPU-Link 512 Gbit/s) and the Bow launch (March 2022):
  1.85 GHz, Bow Pod256 ~89 PFLOP/s.
"""
from __future__ import annotations

import dataclasses

from .units import GB, KiB, MiB


@dataclasses.dataclass(frozen=True)
class IpuSpec:
    """One IPU chip."""

    name: str  # marketing name, e.g. "GC200"
    version: str  # "ipu1", "ipu2" as PopTorch; "ipu21" is the simulator's Bow (docs/differences.md)
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
    tiles=1216,  # [JIA19] [2nd]
    sram_per_tile=256 * KiB,  # [JIA19] [2nd]
    clock_hz=1.6e9,  # [JIA19] [2nd]
    peak_fp16_flops=124.5e12,  # [JIA19] mixed precision [2nd]
    peak_fp32_flops=31.1e12,  # [JIA19] single precision [2nd]
    memory_bandwidth=45e12,  # [JIA19] aggregate tile memory, ~45 TB/s [2nd]
    link_bandwidth=64 * GB,  # [JIA19] per IPU-Link [2nd]
)

GC200 = IpuSpec(
    name="GC200",
    version="ipu2",
    tiles=1472,  # [GC200]
    sram_per_tile=638_976,  # [MEMGUIDE]: the real OOM message's "638976 bytes" (624 KiB)
    clock_hz=1.33e9,  # ~1.33 GHz [derived from the peak: 250e12 / (1472 tiles x 128 FLOP/cycle)]
    peak_fp16_flops=250e12,  # [GC200]
    peak_fp32_flops=62.5e12,  # [GC200] a quarter of the FP16 peak
    memory_bandwidth=47.5e12,  # [MEMGUIDE] ~47.5 TB/s
    link_bandwidth=32 * GB,  # [HC33] 320 GB/s over 10 links [derived per link]
)

BOW = IpuSpec(
    name="Bow",
    version="ipu21",
    tiles=1472,  # [BOW] same processor die as the GC200
    sram_per_tile=638_976,  # [BOW] 624 KiB, as the GC200
    clock_hz=1.85e9,  # [BOW]
    peak_fp16_flops=349e12,  # ~349 TFLOP/s [derived from [BOW]: Bow Pod256's 89.23 PF / 256]
    peak_fp32_flops=87e12,  # ~87 TFLOP/s [derived: a quarter of the FP16 peak, as on GC200]
    memory_bandwidth=47.5e12 * 1.85 / 1.33,  # [MEMGUIDE] GC200 figure scaled by clock [derived]
    link_bandwidth=32 * GB,  # same IPU-Links as GC200 [derived from [HC33]]
)

IPUS = {spec.version: spec for spec in (GC2, GC200, BOW)}
# PopTorch's ipu_version integers (useOfflineIpuTarget) and POPTORCH_IPU_MODEL_VERSION strings.
# PopTorch's 21 is "Mk2 with FP8 support" (the C600); the simulator gives it its Bow model, and
# a Bow IPU is PopTorch's 2 (docs/differences.md).
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
    streaming_bytes_per_ipu: int = 64 * GB  # [M2000] up to 256 GB per machine of 4 IPUs

    def __post_init__(self):
        if not isinstance(self.num_ipus, int) or self.num_ipus < 1:
            raise ValueError(f"a system needs at least one IPU (num_ipus: {self.num_ipus!r})")

    def describe(self) -> str:
        mem = self.ipu.memory_bytes / MiB
        return (f"{self.num_ipus} x {self.ipu.name} ({self.ipu.version}): {self.ipu.tiles} tiles, "
                f"{mem:,.0f} MiB in-processor memory and "
                f"{self.ipu.peak_fp16_flops / 1e12:,.1f} TFLOP/s fp16 peak per IPU")


def system_from(version: str | int = "ipu2", num_ipus: int | str = 16) -> System:
    """A system of `num_ipus` chips of one version (as POPTORCH_IPU_MODEL_VERSION names it).

    Raises:
        ValueError: an unknown version, or a count that is not a positive integer.
    """
    if isinstance(num_ipus, str):
        if not num_ipus.isdigit():
            raise ValueError(f"IPU_TUTORIALS_NUM_IPUS must be a positive integer, got {num_ipus!r}")
        num_ipus = int(num_ipus)
    return System(ipu=ipu_spec(version), num_ipus=num_ipus)


class SystemChoice:
    """Owns the one piece of global hardware state: the machine set_system() chose, if any."""

    def __init__(self):
        self.chosen: System | None = None

    def current(self, env_version: str = "ipu2", env_num_ipus: str = "16") -> System:
        """The chosen system, else the one the environment's values describe."""
        return self.chosen if self.chosen is not None else system_from(env_version, env_num_ipus)

    def set(self, system: System) -> System:
        self.chosen = system
        return system

    def reset(self) -> None:
        self.chosen = None


CHOICE = SystemChoice()


def default_system() -> System:
    """The system the simulator acquires IPUs from: set_system(), else the environment."""
    from ..environment import read

    env = read()
    return CHOICE.current(env.ipu_version, env.num_ipus)


def set_system(ipu: str | int | IpuSpec = "ipu2", num_ipus: int = 16) -> System:
    """Choose the simulated machine for models compiled from now on and return it."""
    spec = ipu if isinstance(ipu, IpuSpec) else ipu_spec(ipu)
    return CHOICE.set(System(ipu=spec, num_ipus=num_ipus))


def reset_system() -> None:
    """Forget set_system(): go back to the environment's defaults."""
    CHOICE.reset()
