"""Wrong answers near the right one, generated: numbers a little off and functions a little
off must get a "Not yet"; the right value in another numeric form must pass."""
import pytest
import torch
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from .standard import namespace_of
from .test_answers import NAMED

# Exercises whose answer is a number, with the relative tolerance their check allows (a value
# read from a printed table may be rounded that much).
NUMBERS = {"blocks.ipus_reserved": 0, "pipelining.smallest_accumulation": 0,
           "pipelining.combined_batch": 0, "sharding.busy_ipus": 0, "sharding.speedup": 0.01,
           "offload.adamw_state_bytes": 0, "replication.samples_per_update": 0,
           "replication.sum_learning_rate": 1e-6, "observing.compute_share": 1e-3,
           "ipuconfig.pod64_batch": 0, "lightning.images_per_batch": 0,
           "capstone.samples_per_update": 0, "torch_engines.zero_fullest_rank": 0}
SLOW = settings(max_examples=8, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])
FAST = settings(max_examples=40, deadline=None)


def right_value(key: str):
    module, exercise = NAMED[key]
    return exercise.answer_of(exercise.solution_code, namespace_of(module))


def check(key: str, answer):
    return NAMED[key][1].check(answer)


@pytest.mark.parametrize("key", sorted(NUMBERS))
@FAST
@given(offset=st.floats(-0.9, 3.0, allow_nan=False))
def test_a_number_off_by_more_than_the_tolerance_is_not_yet(key, offset):
    assume(abs(offset) > 2 * NUMBERS[key] + 1e-9)
    value = right_value(key) * (1 + offset)
    assert not check(key, value).correct, f"{value} passed for {key}"


@pytest.mark.parametrize("key", sorted(k for k, t in NUMBERS.items() if t == 0))
@FAST
@given(step=st.integers(-50, 50).filter(bool))
def test_a_whole_number_one_or_more_off_is_not_yet(key, step):
    value = right_value(key) + step
    assert not check(key, value).correct, f"{value} passed for {key}"


@pytest.mark.parametrize("key", sorted(NUMBERS))
@pytest.mark.parametrize("form", [float, torch.tensor, lambda v: torch.tensor([v])])
def test_the_right_number_in_another_numeric_form_passes(key, form):
    feedback = check(key, form(right_value(key)))
    assert feedback.correct, repr(feedback)


@FAST
@given(scale=st.floats(1e-3, 1.0) | st.floats(2.0 ** 16, 1e9))
def test_a_loss_scale_that_lifts_nothing_or_overflows_is_not_yet(scale):
    assert not check("half_precision.loss_scale", scale).correct


@SLOW
@given(factor=st.floats(0.5, 1.5).filter(lambda f: abs(f - 1) > 1e-3))
def test_a_newton_step_scaled_a_little_is_not_yet(factor):
    def body(x, a):
        return factor * (x + a / x) / 2, a
    assert not check("custom_ops.newton_body", body).correct


@SLOW
@given(shift=st.floats(-1.0, 1.0).filter(lambda s: abs(s) > 0.05),
       scale=st.sampled_from([1.0, 0.9, 1.1]))
def test_a_log_softmax_off_by_a_little_is_not_yet(shift, scale):
    def stable_log_softmax(z):
        return scale * (z - torch.logsumexp(z, dim=-1, keepdim=True)) + shift
    assert not check("observing.fix_the_softmax", stable_log_softmax).correct


@SLOW
@given(penalty=st.floats(0.0, 0.1).filter(lambda p: abs(p - 0.01) > 0.002))
def test_a_custom_loss_with_another_penalty_is_not_yet(penalty):
    from ipu_tutorials import poptorch

    def my_loss(out, target, weight):
        total = (out - target).abs().mean() + penalty * weight.pow(2).sum()
        return poptorch.identity_loss(total, reduction="mean")
    assert not check("custom_ops.custom_loss", my_loss).correct
