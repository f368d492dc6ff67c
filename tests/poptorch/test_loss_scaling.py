"""Automatic loss scaling as PopART runs it: the update factor's rule, finalLossScale, the
factor in ipu_state, and training that stays equal to training without it while the scale moves."""
import pytest
import torch

from ipu_tutorials import poptorch
from ipu_tutorials.poptorch._loss_scaling import AutomaticLossScaling, bin_edge


def half_grads(values):
    weight = torch.nn.Parameter(torch.zeros(len(values), dtype=torch.float16))
    return {weight: torch.tensor(values, dtype=torch.float16)}


# was wrong: SDK 2.4's edge (65535 / 16); since SDK 2.5 PopART puts it at 65504 / 8
def test_the_bin_edge_is_an_eighth_of_float16s_range_as_popart_3_4_sets_it():
    assert bin_edge() == 65504.0 / 8


def test_the_factor_doubles_while_no_float16_gradient_passes_the_bin_edge():
    scaler = AutomaticLossScaling(float16=True)
    assert scaler.observe(half_grads([1.0, 8188.0]), loss_scaling=3.0) == 6.0
    assert scaler.final_loss_scale == 3.0 and scaler.factor == 2.0


def test_one_gradient_above_the_bin_edge_halves_it():
    scaler = AutomaticLossScaling(float16=True)
    scaler.factor = 8.0
    assert scaler.observe(half_grads([1.0] * 99 + [8192.0]), loss_scaling=1.0) == 4.0
    assert scaler.final_loss_scale == 8.0


def test_with_float16_weights_the_loss_scale_stops_at_32768():
    scaler = AutomaticLossScaling(float16=True)
    scaler.factor = 16384.0
    assert scaler.observe(half_grads([1.0]), loss_scaling=1.5) == 32768.0
    assert scaler.factor == pytest.approx(32768.0 / 1.5)


# was wrong: float32 gradients were counted against FLT_MAX / 16; PopART 3.4 tracks float16 only
def test_float32_gradients_do_not_move_the_factor_down():
    scaler = AutomaticLossScaling(float16=False)
    weight = torch.nn.Parameter(torch.zeros(2))
    assert scaler.observe({weight: torch.tensor([float("inf"), 1.0])}, loss_scaling=1.0) == 2.0
    mixed = {weight: torch.tensor([float("inf"), 1.0]), **half_grads([1.0] * 99 + [8192.0])}
    assert scaler.observe(mixed, loss_scaling=1.0) == 1.0  # the float16 gradient halves it


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        return poptorch.identity_loss(self.lin(x).float().pow(2), reduction="sum")


def als_options(iterations=1):
    opts = poptorch.Options().deviceIterations(iterations)
    opts.Training.setAutomaticLossScaling(True)
    opts.anchorTensor("ls", "finalLossScale")
    return opts


def test_each_step_scales_the_loss_by_loss_scaling_times_the_factor_read_before_it():
    torch.manual_seed(0)
    model = Model().half()
    optimizer = poptorch.optim.SGD(model.parameters(), lr=0.0, loss_scaling=2.0)
    training = poptorch.trainingModel(model, als_options(), optimizer)
    training.compile(torch.ones(1, 4).half())
    assert optimizer.state_dict()["ipu_state"]["lossScaleUpdateFactor"].item() == 1.0
    assert "lossScaling_FLOAT16" in optimizer.state_dict()["ipu_param"]  # made variable
    for expected in (2.0, 4.0, 8.0):
        training(torch.ones(1, 4).half())
        assert training.getAnchoredTensor("ls").item() == expected
    assert optimizer.loss_scaling == 2.0  # the user's value stays


def test_the_scale_moves_between_the_steps_of_one_call():
    torch.manual_seed(0)
    model = Model().half()
    optimizer = poptorch.optim.SGD(model.parameters(), lr=0.0)
    training = poptorch.trainingModel(model, als_options(iterations=3), optimizer)
    training(torch.ones(3, 4).half())
    assert training.getAnchoredTensor("ls").item() == 4.0  # the third step's: 1, 2, 4
    assert optimizer.state_dict()["ipu_state"]["lossScaleUpdateFactor"].item() == 8.0


def test_training_with_a_moving_scale_matches_training_without_it():
    # PopART tracks float16 gradients only, so the model is float16; scaling by powers of two
    # is exact in float16, so the weights equal those of the same run with no loss scaling
    torch.manual_seed(0)
    model, reference = Model().half(), Model().half()
    reference.load_state_dict(model.state_dict())
    training = poptorch.trainingModel(
        model, als_options(), poptorch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9))
    plain = poptorch.trainingModel(
        reference, poptorch.Options(), poptorch.optim.SGD(reference.parameters(), lr=0.01,
                                                          momentum=0.9))
    for _ in range(4):
        x = torch.randn(1, 4).half()
        training(x)
        plain(x)
    assert training.getAnchoredTensor("ls").item() == 8.0  # the scale did move
    torch.testing.assert_close(model.lin.weight, reference.lin.weight, rtol=0, atol=0)


# was wrong: a float32 model's factor followed its float32 gradients; PopART 3.4 refuses it
def test_a_model_without_float16_weights_is_refused_as_popart_refuses_it():
    model = Model()
    optimizer = poptorch.optim.SGD(model.parameters(), lr=0.001)
    training = poptorch.trainingModel(model, als_options(), optimizer)
    with pytest.raises(poptorch.Error, match="No tracked gradient tensors of type fp16"):
        training.compile(torch.randn(1, 4))


def test_a_loaded_factor_reaches_the_device():
    model = Model().half()
    optimizer = poptorch.optim.Adam(model.parameters(), lr=0.0)
    training = poptorch.trainingModel(model, als_options(), optimizer)
    training.compile(torch.ones(1, 4).half())
    state = optimizer.state_dict()
    state["ipu_state"]["lossScaleUpdateFactor"] = torch.tensor(64.0)
    optimizer.load_state_dict(state)
    training(torch.ones(1, 4).half())
    assert training.getAnchoredTensor("ls").item() == 64.0


def test_a_torch_optimizer_has_no_loss_scale_to_adjust():
    model = Model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    assert AutomaticLossScaling.for_model(als_options(), optimizer) is None
    training = poptorch.trainingModel(model, als_options(), optimizer)
    training(torch.ones(1, 4))
    with pytest.raises(AssertionError, match="has no value yet"):  # PopTorch asserts
        training.getAnchoredTensor("ls")
