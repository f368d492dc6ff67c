"""Phased execution: PopTorch's phase ids per liveness, what each IPU holds, and the timeline."""
import pytest
import torch
import torch.nn as nn

from ipu_tutorials import poptorch
from ipu_tutorials.simulator import phases
from ipu_tutorials.simulator.phases import PhaseWork, program
from ipu_tutorials.simulator.timeline import Timeline


def ids(liveness, separate=False, n=3):
    works = [PhaseWork(0, q) for q in range(n)]
    runs = program(works, liveness, separate, training=True)
    return {(r.kind, works[r.stage].phase): r.id for r in runs}


@pytest.mark.parametrize("liveness, separate, forward, backward", [
    # the tables of popart_compiler/CompilerOptions.hpp and tests/phased_execution_test.py
    (phases.ALWAYS_LIVE, False, [0, 1, 2], [4, 3, 2]),
    (phases.ALWAYS_LIVE, True, [0, 1, 2], [6, 5, 4]),
    (phases.OFF_CHIP_AFTER_FWD, False, [0, 1, 2], [8, 7, 6]),
    (phases.OFF_CHIP_AFTER_FWD_NO_OVERLAP, False, [0, 2, 4], [12, 10, 8]),
    (phases.OFF_CHIP_AFTER_EACH_PHASE, False, [0, 4, 8], [20, 16, 12]),
])
def test_phase_ids_follow_poptorch(liveness, separate, forward, backward):
    got = ids(liveness, separate)
    assert [got[("F", q)] for q in range(3)] == forward
    assert [got[("B", q)] for q in range(3)] == backward


def test_strided_livenesses_need_serial_phases():
    phases.verify_liveness(phases.OFF_CHIP_AFTER_FWD, parallel=True)  # allowed
    with pytest.raises(ValueError, match=r"OffChipAfterEachPhase is only supported for serial"):
        phases.verify_liveness(phases.OFF_CHIP_AFTER_EACH_PHASE, parallel=True)


def weights_peak(liveness, ipus=(0, 0, 0), training=True):
    works = [PhaseWork(ipu, q, weights=size) for q, (ipu, size) in enumerate(zip(ipus, (1, 2, 4)))]
    runs = program(works, liveness, False, training)
    return {ipu: p["weights"] for ipu, p in phases.peaks(works, runs).items()}


def test_weights_on_chip_depend_on_the_liveness():
    # stride 1: the previous, running and next phase overlap (1 + 2 + 4); stride 2: two
    # phases meet in the empty id between them (2 + 4); stride 4: one phase at a time
    assert weights_peak(phases.ALWAYS_LIVE) == {0: 7}
    assert weights_peak(phases.OFF_CHIP_AFTER_FWD_NO_OVERLAP) == {0: 6}
    assert weights_peak(phases.OFF_CHIP_AFTER_EACH_PHASE) == {0: 4}
    # parallel phases alternate IPUs: IPU 0 holds phases 0 and 2, which meet at id 1
    assert weights_peak(phases.ALWAYS_LIVE, ipus=(0, 1, 0)) == {0: 5, 1: 2}


def test_activations_stay_on_chip_only_near_the_turn():
    works = [PhaseWork(0, q, activations=10) for q in range(3)]
    always = phases.peaks(works, program(works, phases.ALWAYS_LIVE, False, True))
    after_fwd = phases.peaks(works, program(works, phases.OFF_CHIP_AFTER_FWD, False, True))
    # AlwaysLive keeps phases 1 and 2's activations into their backward (ids 1 -> 3, 2 -> 2)
    assert always[0]["activations"] == 20
    traffic = phases.streams(works, program(works, phases.OFF_CHIP_AFTER_FWD, False, True), 1)
    assert sum(traffic.values()) == 2 * 3 * 10  # every phase stored and loaded back
    assert after_fwd[0]["activations"] == 20  # stored at id q+1 while q+1 runs


def step(liveness, training=False, ipus=(0, 0, 0)):
    works = [PhaseWork(ipu, q, weights=10, forward=2.0, backward=3.0) for q, ipu in enumerate(ipus)]
    events, end = phases.phased_step(works, liveness, False, 1, 0.0, 0, training=training,
                                     seconds=lambda b: b * 0.1)
    return Timeline(events, 1 + max(ipus)), end


def test_streaming_overlaps_compute_unless_the_liveness_forbids_it():
    # inference, 3 phases of 2 s, each loading 1 s of weights: overlapped, only the first
    # load is exposed; without overlap every load is
    assert step(phases.ALWAYS_LIVE)[1] == pytest.approx(1 + 3 * 2)
    assert step(phases.OFF_CHIP_AFTER_FWD_NO_OVERLAP)[1] == pytest.approx(3 * (1 + 2))
    timeline, end = step(phases.OFF_CHIP_AFTER_EACH_PHASE)
    assert end == pytest.approx(3 * (1 + 2))
    assert len(timeline.of_kind("stream")) == 3


def test_training_reloads_weights_except_at_the_shared_turn():
    timeline, _ = step(phases.ALWAYS_LIVE, training=True)
    loads = timeline.of_kind("stream")
    assert len(loads) == 3 + 2  # three forward phases, the backward of phases 1 and 0
    assert sum(e.duration for e in loads) == pytest.approx(5 * 1.0)


class Chunks(nn.Module):
    """Four Linear blocks of 256 x 256 and an MSE loss in the last."""

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(256, 256) for _ in range(4))

    def forward(self, x, y):
        for i, layer in enumerate(self.layers):
            with poptorch.Block(f"C{i}"):
                x = torch.relu(layer(x))
        with poptorch.Block("C3"):
            return x, nn.functional.mse_loss(x, y)


def compiled_plan(strategy, accumulation=2):
    opts = poptorch.Options().setExecutionStrategy(strategy)
    opts.Training.gradientAccumulation(accumulation)
    model = Chunks()
    training = poptorch.trainingModel(model, opts, poptorch.optim.SGD(model.parameters(), lr=0.1))
    training.compile(torch.randn(8 * accumulation, 256), torch.randn(8 * accumulation, 256))
    return training.plan


def serial(liveness):
    return (poptorch.SerialPhasedExecution(*[poptorch.Phase(f"C{i}") for i in range(4)])
            .setTensorsLiveness(liveness))


def test_the_memory_plan_holds_one_phase_with_off_chip_after_each_phase():
    layer_bytes = (256 * 256 + 256) * 4
    each = compiled_plan(serial(poptorch.Liveness.OffChipAfterEachPhase)).memory[0]
    always = compiled_plan(serial(poptorch.Liveness.AlwaysLive)).memory[0]
    assert each.weights == layer_bytes and always.weights == 3 * layer_bytes
    assert each.off_chip["weights"] == 4 * layer_bytes


def test_each_micro_batch_streams_the_weights_again():
    one = compiled_plan(serial(poptorch.Liveness.AlwaysLive), accumulation=1)
    two = compiled_plan(serial(poptorch.Liveness.AlwaysLive), accumulation=2)
    step_streams = [e for e in two.timeline.of_kind("stream") if e.micro_batch is not None]
    assert {e.micro_batch for e in step_streams} == {0, 1}
    assert len(step_streams) == 2 * len([e for e in one.timeline.of_kind("stream")
                                         if e.micro_batch is not None])
    assert "F0" in two.grid() and "B3" in two.grid()


def test_send_tensors_off_chip_after_fwd_sets_the_liveness():
    strategy = poptorch.ParallelPhasedExecution(*[poptorch.Phase(f"C{i}") for i in range(4)])
    plan = compiled_plan(strategy.sendTensorsOffChipAfterFwd())
    assert plan.spec.strategy.liveness == int(poptorch.Liveness.OffChipAfterFwd)
    assert [s.ipu for s in plan.placement.stages] == [0, 1, 0, 1]
