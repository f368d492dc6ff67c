"""Finding the final loss: marked by loss functions and identity_loss, returned or not."""
import types

import pytest
import torch
import torch.nn.functional as F

from ipu_tutorials import poptorch
from ipu_tutorials.errors import Error
from ipu_tutorials.simulator import tracing
from ipu_tutorials.simulator.losses import LossLocator, verify_loss


def forward(x, y):
    first = F.mse_loss(x, y)
    second = poptorch.identity_loss(first * 2, reduction="mean")
    return (second - second) + 1


def test_a_returned_loss_is_picked_from_the_outputs_with_no_mode():
    x = torch.ones(2)
    locator = LossLocator(output=1, computed=0)
    with locator.collecting() as computed:
        outputs = (x, F.l1_loss(x, torch.zeros(2)))
    assert computed is None and tracing.STATE.losses is None
    assert locator.pick(outputs, computed) is outputs[1]


def test_losses_forward_computes_are_collected_in_order_and_picked_by_place():
    x, y = torch.ones(3), torch.zeros(3)
    locator = LossLocator(output=None, computed=1)
    with locator.collecting() as computed:
        returned = forward(x, y)
    assert tracing.STATE.losses is None  # collected for this pass only
    assert [float(t) for t in computed] == [1.0, 2.0]  # mse_loss, then identity_loss
    assert float(returned) == 1.0 and float(locator.pick(returned, computed)) == 2.0


def test_a_loss_missing_from_a_later_call_is_an_error():
    with pytest.raises(Error, match=r"^forward computed 1 loss\(es\) in this call, but its final "
                                    r"loss at compile was loss number 3: forward must compute"):
        LossLocator(output=None, computed=2).pick(None, [torch.ones(())])


@pytest.mark.parametrize("found, message", [
    (0, r"^Couldn't find a loss in graph"),
    (2, r"^Multiple independent losses found in graph\. .* Found 2 independent losses")])
def test_a_training_graph_needs_exactly_one_final_loss(found, message):
    with pytest.raises(Error, match=message):
        verify_loss(types.SimpleNamespace(losses_found=found))
    verify_loss(types.SimpleNamespace(losses_found=1))
