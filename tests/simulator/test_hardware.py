"""Hardware figures trace to the reference table; the system is configurable."""
import pytest

import ipu_tutorials
from ipu_tutorials.simulator.hardware import BOW, GC2, GC200, System, default_system, ipu_spec


def test_gc200_memory_is_1472_tiles_of_638976_bytes():
    assert GC200.memory_bytes == 1472 * 638_976
    assert round(GC200.memory_bytes / 1024**2) == 897


def test_fp16_peak_is_four_times_fp32_on_mk2():
    assert GC200.peak_flops(2) == 4 * GC200.peak_flops(4) == 250e12


def test_versions_by_name_and_number():
    assert ipu_spec("ipu1") is GC2 and ipu_spec(2) is GC200 and ipu_spec(21) is BOW


def test_unknown_version_lists_the_known_ones():
    with pytest.raises(ValueError, match=r"unknown IPU version 'ipu3'.*'ipu1' \(GC2\)"):
        ipu_spec("ipu3")


def test_default_system_is_a_pod16_of_gc200_and_set_system_changes_it(monkeypatch):
    assert default_system() == System(GC200, 16)
    ipu_tutorials.set_system("ipu21", num_ipus=64)
    assert default_system().ipu is BOW and default_system().num_ipus == 64
    ipu_tutorials.reset_system()
    monkeypatch.setenv("POPTORCH_IPU_MODEL_VERSION", "ipu1")
    assert default_system().ipu is GC2


def test_a_system_needs_ipus():
    with pytest.raises(ValueError, match="at least one IPU"):
        System(GC200, 0)
