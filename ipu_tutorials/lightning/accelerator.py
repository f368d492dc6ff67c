"""IPUAccelerator: the simulated IPUs as a Lightning accelerator named "ipu"."""
from __future__ import annotations

from typing import Any

import torch
from lightning.pytorch.accelerators import Accelerator
from lightning.pytorch.utilities.exceptions import MisconfigurationException

from ..simulator.hardware import default_system

# IPUs ship in units of four (one IPU-M2000 or Bow-2000 holds 4), so "auto" asks for 4.
IPUS_PER_MACHINE = 4


def _is_power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


class IPUAccelerator(Accelerator):
    """The simulated IPU system as a Lightning accelerator.

    `devices` counts model replicas, as on real IPUs: a model whose Blocks span two IPUs, trained
    with `devices=4`, uses 8 IPUs. The host keeps the weights; the simulator runs the numerics.
    """

    def setup_device(self, device: torch.device) -> None:
        """Nothing to do: the simulated device needs no set-up."""

    def teardown(self) -> None:
        """Nothing to release."""

    def get_device_stats(self, device: Any) -> dict[str, Any]:
        """An empty dict, as Lightning 2.0.9's IPUAccelerator returned (IPUs report no device
        statistics to Lightning; the simulator's figures are in the strategy's reports)."""
        return {}

    @staticmethod
    def parse_devices(devices: Any) -> int:
        """The replica count from `Trainer(devices=...)`.

        Raises:
            MisconfigurationException: `devices` is not a positive power of two (1, 2, 4, 8...).
        """
        if isinstance(devices, str) and devices.strip().isdigit():
            devices = int(devices)
        if isinstance(devices, bool) or not isinstance(devices, int):
            raise MisconfigurationException(
                f"`Trainer(accelerator='ipu', devices={devices!r})`: IPU devices are a count of "
                f"replicas, not a list of ids; pass an int such as devices=4 (or devices='auto')")
        if not _is_power_of_two(devices):
            lower = 1 << max(devices.bit_length() - 1, 0)
            raise MisconfigurationException(
                f"`Trainer(accelerator='ipu', devices={devices})`: IPUs are acquired in powers "
                f"of two (1, 2, 4, 8, 16...); use devices={lower} or devices={lower * 2}")
        return devices

    @staticmethod
    def get_parallel_devices(devices: int) -> list[int]:
        """Replica ids 0..devices-1 (ints, as real Lightning gave them)."""
        return list(range(devices))

    @staticmethod
    def auto_device_count() -> int:
        """4, the smallest unit IPUs ship in (fewer if the simulated system is smaller)."""
        return min(IPUS_PER_MACHINE, default_system().num_ipus)

    @staticmethod
    def is_available() -> bool:
        """Always True: the IPUs are simulated."""
        return True

    @staticmethod
    def name() -> str:
        """"ipu", the name `Trainer(accelerator="ipu")` and the accelerator registry use."""
        return "ipu"
