"""torch's pipeline orders as data: literal staircases, torch's own rules, and their timing."""
from types import SimpleNamespace

import pytest
import torch

from ipu_tutorials.profiling.diagrams import unit_stages
from ipu_tutorials.simulator.schedule import Action
from ipu_tutorials.torch_engines.schedules import (bubble, check_micro_batches, ipu_step,
                                                            order_text, orders_of, parse_order,
                                                            peak_in_flight, replay, torch_orders)


# The lesson quotes torch 2.14.1's schedules. Older releases differ: torch 2.6 (the package's
# floor, .ci/torch-floor) has no dry run (`pipeline_order`) and lets 1F1B take fewer
# micro-batches than stages.
TORCH_2_14 = pytest.mark.skipif(
    tuple(int(part) for part in torch.__version__.split("+")[0].split(".")[:2]) < (2, 14),
    reason="compares with torch 2.14's pipeline schedules, which lesson 16 quotes")


def test_the_docstrings_staircases():
    assert order_text(torch_orders("GPipe", 2, 3)) == ("stage 0  F0 F1 F2 B0 B1 B2\n"
                                                       "stage 1  F0 F1 F2 B0 B1 B2")
    assert order_text(torch_orders("1F1B", 2, 3)) == ("stage 0  F0 F1 B0 F2 B1 B2\n"
                                                      "stage 1  F0 B0 F1 B1 F2 B2")


def torch_ir(kind, stages, micro_batches):
    """torch's own dry run of a schedule (its pipeline_order IR), forwards and backwards only."""
    from torch.distributed.pipelining import Schedule1F1B, ScheduleGPipe

    cls = {"GPipe": ScheduleGPipe, "1F1B": Schedule1F1B}[kind]
    ir = cls(SimpleNamespace(num_stages=stages), micro_batches).pipeline_order
    return [[Action(a.computation_type.value, rank, a.microbatch_index) for a in ir[rank]
             if a is not None and a.computation_type.value in "FB"] for rank in range(stages)]


@TORCH_2_14
@pytest.mark.parametrize("kind", ["GPipe", "1F1B"])
@pytest.mark.parametrize("stages, micro_batches", [(2, 2), (4, 4), (4, 10), (3, 7), (8, 16)])
def test_the_orders_are_torchs_own_dry_run(kind, stages, micro_batches):
    ours, torchs = torch_orders(kind, stages, micro_batches), torch_ir(kind, stages, micro_batches)
    if kind == "GPipe":
        assert ours == torchs
        return
    assert ours[:-1] == torchs[:-1]
    # torch 2.14.1's dry run of 1F1B numbers the last stage's forwards one too high (F1 B0 F2 B1
    # ... F{M}), while its _step_microbatches, which runs, does F0 B0 F1 B1 (test_runs.py records
    # it from four processes). When torch fixes its dry run, this fails: compare every stage.
    assert ([(a.kind, a.micro_batch + (a.kind == "F")) for a in ours[-1]] ==
            [(a.kind, a.micro_batch) for a in torchs[-1]])


@TORCH_2_14
def test_1f1b_refuses_fewer_micro_batches_than_stages_as_torch_does():
    from torch.distributed.pipelining import Schedule1F1B

    with pytest.raises(ValueError) as torchs:
        Schedule1F1B(SimpleNamespace(num_stages=4), 3)
    with pytest.raises(ValueError) as ours:
        torch_orders("1F1B", 4, 3)
    assert " ".join(str(ours.value).split()) == " ".join(str(torchs.value).split())
    assert torch_orders("GPipe", 4, 3)  # GPipe takes any count


@pytest.mark.parametrize("schedule, count, message", [
    ("Zero", 4, "unknown schedule 'Zero'; choose one of GPipe, 1F1B"),
    ("GPipe", 0, "a step needs at least one micro-batch, got 0")])
def test_bad_counts_and_names_are_one_clear_line(schedule, count, message):
    with pytest.raises(ValueError, match=message):
        check_micro_batches(schedule, 4, count)


@pytest.mark.parametrize("stages, micro_batches", [(2, 3), (4, 10), (4, 12), (8, 15)])
def test_equal_stages_idle_p_minus_1_over_m_plus_p_minus_1_on_every_schedule(stages, micro_batches):
    times, expected = unit_stages(stages), (stages - 1) / (micro_batches + stages - 1)
    for kind in ("GPipe", "1F1B"):
        events = replay(torch_orders(kind, stages, micro_batches), times)
        assert max(e.end for e in events) == 3 * (micro_batches + stages - 1)
        assert bubble(events, stages) == pytest.approx(expected)
    if micro_batches >= 2 * stages - 1:  # PopTorch's rule
        assert bubble(ipu_step(times, micro_batches), stages) == pytest.approx(expected)


def test_replay_starts_each_action_when_its_input_arrives():
    times = unit_stages(2)
    events = {(e.kind, e.stage, e.micro_batch): (e.start, e.end)
              for e in replay(torch_orders("1F1B", 2, 2), times)}
    assert events[("F", 0, 0)] == (0, 1) and events[("F", 1, 0)] == (1, 2)
    assert events[("B", 1, 0)] == (2, 4) and events[("B", 0, 0)] == (4, 6)


def test_an_order_that_waits_on_itself_is_refused():
    deadlock = [[Action("B", 0, 0), Action("F", 0, 0)], [Action("F", 1, 0), Action("B", 1, 0)]]
    stuck = "wait on each other for ever: stage 0 at B0, stage 1 at F0"
    with pytest.raises(ValueError, match=stuck):
        replay(deadlock, unit_stages(2))


def test_what_stage_0_keeps():
    assert [peak_in_flight(o) for o in torch_orders("GPipe", 4, 10)] == [10] * 4
    assert [peak_in_flight(o) for o in torch_orders("1F1B", 4, 10)] == [4, 3, 2, 1]
    ipu = orders_of(ipu_step(unit_stages(4), 10), 4)
    assert [peak_in_flight(o) for o in ipu] == [7, 5, 3, 1]  # 2(N-1-s)+1, the stash depth


def test_recorded_orders_parse_back():
    assert parse_order(["F0", "F1", "B0", "B1"], 2) == [
        Action("F", 2, 0), Action("F", 2, 1), Action("B", 2, 0), Action("B", 2, 1)]


def test_only_the_first_and_last_n_minus_1_ipu_cycles_run_one_kind():
    # lesson 16's claim: lesson 4's fill (2N-2 cycles) already holds backwards after N-1 cycles
    from ipu_tutorials.simulator import pipeline_cycles

    n, a = 4, 10
    kinds = [{action.kind for action in cycle} for cycle in pipeline_cycles(n, a, training=True)]
    assert len(kinds) == a + 2 * n - 2
    assert kinds[:n - 1] == [{"F"}] * (n - 1) and kinds[-(n - 1):] == [{"B"}] * (n - 1)
    assert all(k == {"F", "B"} for k in kinds[n - 1:-(n - 1)])  # lesson 4's fill and flush too
    # so with equal stages the IPU's step is as long as torch's: (A+N-1)(forward+backward)
    times = unit_stages(n)
    ipu = max(e.end for e in ipu_step(times, a) if e.kind in "FB")
    assert ipu == max(e.end for e in replay(torch_orders("1F1B", n, a), times)) == 3 * (a + n - 1)
