"""_json_collectives.py: instances exchange JSON in tensors, never pickles."""
import pytest
import torch.distributed as dist

from ipu_tutorials.poptorch import _json_collectives


@pytest.fixture
def one_instance(tmp_path):
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0,
                            world_size=1)
    yield
    dist.destroy_process_group()


def test_values_come_back_as_json_in_rank_order(one_instance):
    value = {"host": "a", "shape": (2, 3), "nested": [{"x": 1.5}, None]}
    assert (_json_collectives.all_gather_json(value) ==
            [{"host": "a", "shape": [2, 3], "nested": [{"x": 1.5}, None]}])


def test_a_value_longer_than_the_limit_is_refused(one_instance, monkeypatch):
    monkeypatch.setattr(_json_collectives, "MAX_BYTES", 10)
    with pytest.raises(ValueError, match=r"an instance sent 12 bytes of JSON \(at most 10\); "
                                         r"refused"):
        _json_collectives.all_gather_json("x" * 10)  # "xxxxxxxxxx" with its quotes


# was wrong: on torch 2.6 this file's teardown, dist.destroy_process_group(), could hang for ever:
# gloo's worker thread still held the collective's tensors and needed the GIL to free them, and
# the teardown held the GIL while it waited for that thread (_collective_tensors.py)
def test_no_other_thread_holds_the_tensors_once_it_returns(one_instance, monkeypatch):
    handed = []
    all_gather = dist.all_gather

    def recording(outputs, tensor, *args, **kwargs):
        handed.extend([tensor, *outputs])
        return all_gather(outputs, tensor, *args, **kwargs)

    monkeypatch.setattr(dist, "all_gather", recording)
    _json_collectives.all_gather_json({"x": 1})
    assert len(handed) == 4 and [t._use_count() for t in handed] == [1, 1, 1, 1]
