"""IPU chip and system specifications used by the cost model.

A new hardware generation is one more IpuSpec here, added to IPUS. The comment beside each
figure names its public source from this list; [derived] marks a value computed from other
figures, [2nd] one that only a secondary (third-party) source gives.

- [JIA19] Z. Jia, B. Tillman, M. Maggioni, D. P. Scarpazza, "Dissecting the Graphcore IPU
  Architecture via Microbenchmarking", arXiv:1912.03413 (2019): the GC2 figures [2nd].
- [GC200] Graphcore, Colossus Mk2 GC200 product page, https://www.graphcore.ai/products/ipu
  (the July 2020 launch figures): 1,472 tiles, 900 MB In-Processor-Memory, 47.5 TB/s of memory
  bandwidth, 250 TFLOP/s FP16 and 62.5 TFLOP/s FP32, 10 IPU-Links of 320 GB/s in all.
- [M2000] Graphcore, IPU-M2000 datasheet,
  https://docs.graphcore.ai/projects/graphcore-ipu-m2000-datasheet/ : 4 IPUs per machine.
- [POPART] graphcore/popart@sdk/poplar/3.4.0:tests/integration/available_memory_proportion_test.py
  : a Mk2 tile's memory is 638,976 bytes (the per-tile limit PopLibs plans with is that times
  the available memory proportion).
- [HC33] S. Knowles, "Graphcore Colossus Mk2 IPU", Hot Chips 33 (2021),
  https://www.graphcore.ai/posts/designing-the-colossus-mk2-ipu-simon-knowles-at-hot-chips-2021
  : the GC200's design; Mk2 doubles the GC2's compute per tile.
- [BOW] Graphcore, Bow-2000 datasheet, https://docs.graphcore.ai/projects/bow-2000-datasheet/
  (4 Bow IPUs, 1.4 PFLOP/s FP16.16, 5,888 cores, 3.6 GB In-Processor-Memory, up to 256 GB
  Streaming Memory, IPU-Links 512 Gbit/s, 2 x 100 Gbit/s GW-Links, a PCIe Gen4 RoCEv2 host
  link) and Bow Pod256 datasheet, https://docs.graphcore.ai/projects/bow-pod256-datasheet/
  (89.23 PFLOP/s FP16.16 and 22.31 PFLOP/s FP32 over 256 IPUs).

PopTorch's version names are ipu1 (Mk1), ipu2 (Mk2: GC200 and Bow) and ipu21 (Mk2 with FP8
support, the C600 card; graphcore/poptorch@sdk/poptorch/3.4.0:python/options.py,
useOfflineIpuTarget). The simulator keeps the Bow under "ipu21" so that a Bow Pod can be chosen
by name (docs/differences.md).
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
    sram_per_tile=638_976,  # [POPART] 624 KiB: 1,472 x 624 KiB = 897 MiB, the "900 MB" of [GC200]
    # ~1.33 GHz [derived from the peak: 250e12 / (1472 tiles x 128 FLOP/cycle), assuming Mk2's
    # AMP does twice GC2's 64 FLOP/cycle ([JIA19]: 124.5e12 / (1216 x 1.6e9)), as [HC33] says]
    clock_hz=1.33e9,
    peak_fp16_flops=250e12,  # [GC200]
    peak_fp32_flops=62.5e12,  # [GC200] a quarter of the FP16 peak
    memory_bandwidth=47.5e12,  # [GC200] 47.5 TB/s
    link_bandwidth=32 * GB,  # [GC200] 320 GB/s over 10 links [derived per link]
)

BOW = IpuSpec(
    name="Bow",
    version="ipu21",
    tiles=1472,  # [BOW] 5,888 cores over 4 IPUs
    sram_per_tile=638_976,  # [BOW] 3.6 GB over 4 IPUs: 900 MB each, as the GC200 [POPART]
    # 1.85 GHz [derived from [BOW]: 349e12 / (1472 x 128 FLOP/cycle); the March 2022 launch
    # coverage gives the same clock [2nd]]
    clock_hz=1.85e9,
    peak_fp16_flops=349e12,  # ~349 TFLOP/s [derived from [BOW]: Bow Pod256's 89.23 PF / 256]
    peak_fp32_flops=87e12,  # ~87 TFLOP/s [derived from [BOW]: Bow Pod256's 22.31 PF / 256]
    memory_bandwidth=47.5e12 * 1.85 / 1.33,  # [GC200] figure scaled by clock [derived]
    link_bandwidth=32 * GB,  # same IPU-Links as GC200 [derived from [GC200]]
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
    # An IPU-Machine reaches its host through one RoCEv2 NIC ([BOW]: "PCIe Gen4 RoCEv2
    # NIC/SmartNIC Interface") on the Pod's 100 GbE network ([BOW] Pod256 datasheet: 100G
    # switches): 12.5 GB/s shared by its 4 IPUs [derived]. The 64 GB/s PCIe Gen4 x16 of [GC200]
    # is the chip's own interface, not the machine's host link.
    host_bandwidth: float = 12.5 * GB
    ipus_per_host_link: int = 4  # IPUs of one IPU-M2000 / Bow-2000 ([M2000], [BOW])
    # Streaming Memory bandwidth has no public figure: 16 GB/s per direction is an assumption
    # (the order of one PCIe Gen4 x8 link), a teaching default, not a measurement.
    streaming_bandwidth: float = 16 * GB
    # [BOW] up to 256 GB per machine of 4 IPUs (the M2000's 2020 launch coverage gave up to
    # 448 GB [2nd]; the smaller figure is kept)
    streaming_bytes_per_ipu: int = 64 * GB

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
    from ..support.environment import read

    env = read()
    return CHOICE.current(env.ipu_version, env.num_ipus)


def set_system(ipu: str | int | IpuSpec = "ipu2", num_ipus: int = 16) -> System:
    """Choose the simulated machine for models compiled from now on and return it."""
    spec = ipu if isinstance(ipu, IpuSpec) else ipu_spec(ipu)
    return CHOICE.set(System(ipu=spec, num_ipus=num_ipus))


def reset_system() -> None:
    """Forget set_system(): go back to the environment's defaults."""
    CHOICE.reset()
