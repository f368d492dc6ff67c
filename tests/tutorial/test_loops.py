"""The tutorial's training and test loops and their helpers."""
import pytest

from ipu_tutorials import tutorial


def test_whole_calls_respects_the_pipeline_and_explains_impossible_sizes():
    # was wrong: whole_calls ignored the pipeline's minimum and failed with a bare max() error.
    assert tutorial.whole_calls(1000, 8) == 25
    assert tutorial.whole_calls(1000, 40, least=4) == 25
    with pytest.raises(ValueError, match=r"1000 samples in micro-batches of 500 make 2"):
        tutorial.whole_calls(1000, 500, least=4)
    with pytest.raises(ValueError, match="use a smaller batch size"):
        tutorial.whole_calls(4, 8)
