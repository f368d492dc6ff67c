"""host_memory.py: a batch the host cannot hold is refused before it is built."""
import numpy as np
import pytest
import torch

from ipu_tutorials.support import host_memory


def test_the_bytes_of_a_sample_count_every_tensor_and_array():
    sample = (torch.zeros(3, 4), {"ids": torch.zeros(5, dtype=torch.int64),
                                  "pixels": np.zeros(10, dtype=np.uint8)}, "a label", 7)
    assert host_memory.sample_bytes(sample) == 3 * 4 * 4 + 5 * 8 + 10
    assert host_memory.sample_bytes(["no", "tensors"]) == 0


def test_the_host_reports_some_available_memory():
    available = host_memory.available_bytes()
    assert available is None or available > 0


def test_a_batch_twice_the_available_memory_is_refused(monkeypatch):
    monkeypatch.setattr(host_memory, "available_bytes", lambda: 3 * 2**30)
    host_memory.check_fits("a batch", 1024, 2**20, "use fewer")  # 2 GiB built then stacked
    with pytest.raises(MemoryError, match=r"a batch of 2,048 samples needs about 4.0 GiB "
                                          r"\(1,048,576 bytes each, built then stacked\) but the "
                                          r"host has 3.0 GiB available; use fewer"):
        host_memory.check_fits("a batch", 2048, 2**20, "use fewer")


def test_an_unknown_amount_of_memory_refuses_nothing(monkeypatch):
    monkeypatch.setattr(host_memory, "available_bytes", lambda: None)
    host_memory.check_fits("a batch", 10**12, 10**6, "use fewer")
