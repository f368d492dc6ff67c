"""SharpClassifier: float32 holds its logits, float16 overflows, and the replay names the op."""
import pytest
import torch

from ipu_tutorials import poptorch
from ipu_tutorials.tutorial.datasets import load_mnist
from ipu_tutorials.tutorial.overflow import (HandWrittenLogSoftmax, SharpClassifier, replay,
                                             train_until_not_finite)


def test_the_hand_written_log_softmax_is_log_softmax_in_float32():
    z = torch.randn(4, 10) * 5
    torch.testing.assert_close(HandWrittenLogSoftmax()(z), torch.log_softmax(z, -1),
                               atol=1e-5, rtol=1e-5)


def test_float32_trains_where_float16_fails_and_the_replay_names_exp():
    digits = load_mnist(train=True, source="embedded")
    torch.manual_seed(0)
    float32 = train_until_not_finite(SharpClassifier(), digits, 40, half=False)
    torch.manual_seed(0)
    float16 = train_until_not_finite(SharpClassifier(), digits, 40)
    assert float32["failed_step"] is None
    assert float16["failed_step"] is not None
    assert torch.isnan(replay(HandWrittenLogSoftmax(), float16["weights_before"],
                              float16["batch"], exceptions=False))
    with pytest.raises(poptorch.Error, match="exp") as error:
        replay(HandWrittenLogSoftmax(), float16["weights_before"], float16["batch"])
    assert (error.value.op, error.value.module) == ("exp", "log_softmax")
