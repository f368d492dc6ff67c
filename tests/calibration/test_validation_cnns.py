"""validation_cnns.py: the grouped-convolution validation runs and their G16 convolutions."""
import pytest
import torch

from ipu_tutorials.calibration import validation_cnns


@pytest.fixture(scope="module")
def runs():
    return validation_cnns.cnn_runs()


def test_the_g16_convolutions_have_16_channels_per_group():
    depthwise = torch.nn.Conv2d(96, 96, 3, stride=2, padding=1, groups=96)
    grouped = validation_cnns._grouped(depthwise)
    assert (grouped.groups, grouped.stride, grouped.padding, grouped.bias) == (6, (2, 2), (1, 1), None)
    with torch.device("meta"):
        net = validation_cnns.efficientnet_b4_g16().net
    grouped_convs = [m for m in net.modules() if isinstance(m, torch.nn.Conv2d) and m.groups > 1]
    assert grouped_convs and all(m.in_channels // m.groups == 16 for m in grouped_convs)


def test_the_classifier_casts_8_bit_images_and_returns_logits_and_loss():
    with torch.device("meta"):
        model = validation_cnns.resnext101().half()  # as cnn_plan builds it
    logits, loss = model(torch.zeros(2, 3, 64, 64, dtype=torch.uint8, device="meta"),
                         torch.zeros(2, dtype=torch.long, device="meta"))
    assert logits.shape == (2, 1000) and logits.dtype == torch.float16 and loss.shape == ()


def test_the_grouped_convolution_models_land_within_1_25x(runs):
    grouped = [run for run in runs if run.name.startswith(("ResNeXt", "EfficientNet"))]
    assert len(grouped) == 3
    assert all(1 / 1.25 <= run.ratio <= 1.25 for run in grouped)
