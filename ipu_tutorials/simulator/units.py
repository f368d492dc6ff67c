"""Byte units, and sizes written the way the memory tables print them."""
from __future__ import annotations

KiB = 1024
MiB = 1024**2
GiB = 1024**3
GB = 10**9  # vendors quote bandwidths and streaming memory in decimal gigabytes


def format_bytes(num_bytes: float) -> str:
    """1536 -> '1.5 KiB'."""
    for unit, size in (("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if abs(num_bytes) >= size:
            return f"{num_bytes / size:,.1f} {unit}"
    return f"{int(num_bytes)} B"
