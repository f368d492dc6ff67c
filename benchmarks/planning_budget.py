"""The budget both planning benchmarks hold: planning seconds and peak memory added."""
import resource


def peak_mb() -> float:
    """The process's peak resident memory so far, in MB (ru_maxrss is KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def verdict(seconds: float, added_mb: float, imported_mb: float,
            target_seconds: float, target_mb: float) -> int:
    """Prints the planning time and memory against their targets; 0 when both hold, else 1."""
    print(f"planning: {seconds:.2f} s (target <= {target_seconds}), peak memory added "
          f"{added_mb:.0f} MB (target <= {target_mb:.0f}); process peak {peak_mb():.0f} MB, of "
          f"which {imported_mb:.0f} MB after importing torch")
    return 0 if seconds <= target_seconds and added_mb <= target_mb else 1
