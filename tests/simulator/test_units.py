"""Byte units and the way memory tables print sizes."""
from ipu_tutorials.simulator.units import GB, GiB, KiB, MiB, format_bytes


def test_binary_and_decimal_units():
    assert (KiB, MiB, GiB, GB) == (1024, 1024**2, 1024**3, 10**9)


def test_format_bytes():
    assert [format_bytes(n) for n in (512, 1536, 3 * 1024**2, 5 * 1024**3)] == [
        "512 B", "1.5 KiB", "3.0 MiB", "5.0 GiB"]
