"""Schedules: literal staircases, cycle counts, one-IPU-at-a-time sharding, the 1/N limit."""
import pytest

from ipu_tutorials.simulator.schedule import (StageTimes, StepCosts, call_timeline, clock_cycles,
                                              pipeline_cycles, pipeline_grid, pipelined_step,
                                              sharded_order)
from ipu_tutorials.simulator.timeline import Timeline


def cells(cycles, ipu_of_stage, ipu):
    return [" ".join(str(a) for a in c if ipu_of_stage[a.stage] == ipu) or "." for c in cycles]


def test_the_clock_of_four_micro_batches_over_three_stages():
    assert clock_cycles(4, 3) == [
        [(0, 0)],
        [(1, 0), (0, 1)],
        [(2, 0), (1, 1), (0, 2)],
        [(3, 0), (2, 1), (1, 2)],
        [(3, 1), (2, 2)],
        [(3, 2)],
    ]


def test_the_clock_of_one_stage_runs_the_micro_batches_in_turn():
    assert clock_cycles(3, 1) == [[(0, 0)], [(1, 0)], [(2, 0)]]
    assert clock_cycles(1, 3) == [[(0, 0)], [(0, 1)], [(0, 2)]]


COUNTS = [(1, 1), (4, 3), (3, 4), (7, 7), (10, 4), (2, 9)]  # (micro-batches, stages)


@pytest.mark.parametrize("m, s", COUNTS)
def test_the_clock_runs_every_micro_batch_on_every_stage_once(m, s):
    pairs = [pair for cycle in clock_cycles(m, s) for pair in cycle]
    assert sorted(pairs) == [(i, j) for i in range(m) for j in range(s)]
    assert len(clock_cycles(m, s)) == m + s - 1


@pytest.mark.parametrize("m, s", COUNTS)
def test_the_clock_keeps_each_stage_to_one_micro_batch_and_in_order(m, s):
    cycle_of = {pair: k for k, cycle in enumerate(clock_cycles(m, s)) for pair in cycle}
    for k, cycle in enumerate(clock_cycles(m, s)):
        assert len({stage for _, stage in cycle}) == len(cycle), f"cycle {k}: a stage runs twice"
    for (i, j), k in cycle_of.items():
        if j > 0:
            assert k > cycle_of[(i, j - 1)], f"stage {j} of micro-batch {i} before stage {j - 1}"
        if i > 0:
            assert k > cycle_of[(i - 1, j)], f"micro-batch {i} on stage {j} before {i - 1}"


def test_an_inference_pipeline_is_the_clock_itself():
    cycles = pipeline_cycles(3, 4, training=False)
    assert [[(a.micro_batch, a.stage) for a in cycle] for cycle in cycles] == clock_cycles(4, 3)
    assert all(a.kind == "F" for cycle in cycles for a in cycle)


def test_two_stage_training_staircase():
    cycles = pipeline_cycles(2, 3, training=True)
    assert cells(cycles, [0, 1], 0) == ["F0", "F1", "F2 B0", "B1", "B2"]
    assert cells(cycles, [0, 1], 1) == [".", "F0 B0", "F1 B1", "F2 B2", "."]


def test_four_stage_grid_fill_main_and_flush():
    grid = pipeline_grid([0, 1, 2, 3], 8, training=True)
    assert grid.splitlines() == [
        "IPU 0  F0     F1     F2     F3     F4     F5     F6 B0  F7 B1  B2     B3     B4     B5     B6     B7",
        "IPU 1  .      F0     F1     F2     F3     F4 B0  F5 B1  F6 B2  F7 B3  B4     B5     B6     B7     .",
        "IPU 2  .      .      F0     F1     F2 B0  F3 B1  F4 B2  F5 B3  F6 B4  F7 B5  B6     B7     .      .",
        "IPU 3  .      .      .      F0 B0  F1 B1  F2 B2  F3 B3  F4 B4  F5 B5  F6 B6  F7 B7  .      .      .",
    ]


def test_inference_pipeline_is_a_forward_staircase():
    cycles = pipeline_cycles(3, 4, training=False)
    assert cells(cycles, [0, 1, 2], 2) == [".", ".", "F0", "F1", "F2", "F3"]
    assert len(cycles) == 4 + 3 - 1


@pytest.mark.parametrize("n, a", [(1, 1), (2, 3), (4, 7), (4, 10), (8, 15), (3, 100)])
def test_a_step_takes_a_plus_2n_minus_2_cycles(n, a):
    assert len(pipeline_cycles(n, a, training=True)) == a + 2 * n - 2


@pytest.mark.parametrize("n, a", [(2, 3), (4, 10)])
def test_every_micro_batch_goes_forward_and_back_through_every_stage_once(n, a):
    actions = [x for cycle in pipeline_cycles(n, a, training=True) for x in cycle]
    assert sorted((x.kind, x.stage, x.micro_batch) for x in actions) == sorted(
        (kind, s, m) for kind in "BF" for s in range(n) for m in range(a))


def test_a_pipelined_steps_events_carry_their_cycle():
    stages = [StageTimes(ipu=i, forward=1.0, backward=2.0, send=0.5) for i in range(2)]
    events, _ = pipelined_step(stages, 3, True, 0.0, step=0)
    work = [(e.cycle, f"{e.kind}{e.micro_batch}", e.ipu) for e in events if e.kind in "FB"]
    cycles = pipeline_cycles(2, 3, training=True)
    assert work == [(c, str(a), a.stage) for c, cycle in enumerate(cycles) for a in cycle]
    assert all(e.cycle is not None for e in events if e.kind == "copy")


def test_sharded_order_is_forward_up_then_backward_down():
    assert [str(x) + f"s{x.stage}" for x in sharded_order(3, 1, training=True)] == [
        "F0s0", "F0s1", "F0s2", "B0s2", "B0s1", "B0s0"]


def balanced(n, seconds=1e-3):
    return [StageTimes(ipu=i, forward=seconds, backward=2 * seconds, send=0.0) for i in range(n)]


NO_COSTS = StepCosts(host_in=0.0, host_out=0.0, host_latency=0.0, update={})


def test_sharded_execution_keeps_one_ipu_busy_at_a_time():
    events = call_timeline("sharded", balanced(4), NO_COSTS, a=10, d=2, training=True)
    assert Timeline(events, 4).max_concurrency() == 1


def test_pipelined_execution_keeps_every_ipu_busy_in_the_main_phase():
    events = call_timeline("pipelined", balanced(4), NO_COSTS, a=10, d=1, training=True)
    assert Timeline(events, 4).max_concurrency() == 4


@pytest.mark.parametrize("n", [2, 4, 8])
def test_balanced_pipeline_approaches_one_nth_of_sharded_time(n):
    ratios = []
    for a in (2 * n - 1, 64, 1024):
        piped = Timeline(call_timeline("pipelined", balanced(n), NO_COSTS, a, 1, True), n).duration
        shard = Timeline(call_timeline("sharded", balanced(n), NO_COSTS, a, 1, True), n).duration
        ratios.append(piped / shard)
    assert ratios[0] > ratios[1] > ratios[2]  # more micro-batches, less fill and flush
    assert ratios[2] == pytest.approx(1 / n, rel=0.02)


def test_pipelined_step_time_is_cycles_times_the_slowest_ipu():
    stages = [StageTimes(0, 1.0, 2.0, 0.0), StageTimes(1, 3.0, 1.0, 0.0)]
    events = call_timeline("pipelined", stages, NO_COSTS, a=3, d=1, training=True)
    # cycles: IPU0 [F, F, F+B, B, B] = [1, 1, 3, 2, 2]; IPU1 [-, F+B, F+B, F+B, -] = [0, 4, 4, 4, 0]
    assert Timeline(events, 2).duration == pytest.approx(1 + 4 + 4 + 4 + 2)


def test_weight_update_follows_the_flush_on_every_ipu():
    costs = StepCosts(host_in=0.0, host_out=0.0, host_latency=0.0, update={0: 0.5, 1: 0.25})
    events = call_timeline("pipelined", balanced(2), costs, a=3, d=2, training=True)
    updates = Timeline(events, 2).of_kind("update")
    assert len(updates) == 4  # 2 IPUs x 2 device iterations
    last_compute = max(e.end for e in events if e.kind in "FB" and e.step == 0)
    assert all(u.start >= last_compute for u in updates if u.step == 0)


def test_gradients_go_back_with_the_size_of_what_a_stage_received():
    # was wrong: gradients went back down with the size of the activations sent up.
    stages = [StageTimes(0, 1.0, 2.0, send=0.25, receive=0.0),
              StageTimes(1, 1.0, 2.0, send=0.0, receive=0.5)]
    costs = StepCosts(host_in=0.0, host_out=0.0, host_latency=0.0, update={})
    for kind in ("pipelined", "sharded"):
        copies = sorted({e.duration for e in call_timeline(kind, stages, costs, 3, 1, True)
                         if e.kind == "copy"})
        assert copies == [0.25, 0.5], kind  # activations up, their gradients back
