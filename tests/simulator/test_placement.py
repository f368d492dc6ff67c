"""Every placement rule gives a clear error naming what is at fault and how to fix it."""
import pytest
import torch
import torch.nn as nn

import ipu_tutorials
from ipu_tutorials import poptorch
from ipu_tutorials.tutorial.models import Network


class ThreeBlocks(nn.Module):
    """Blocks A, B, C on IPUs given at construction (None: no ipu_id)."""

    def __init__(self, ipus=(0, 1, 2), tie=False):
        super().__init__()
        self.ipus = ipus
        self.a, self.b, self.c = nn.Linear(4, 4), nn.Linear(4, 4), nn.Linear(4, 4)
        if tie:
            self.c.weight = self.a.weight

    def forward(self, x, y):
        with poptorch.Block("A", ipu_id=self.ipus[0]):
            x = self.a(x)
        with poptorch.Block("B", ipu_id=self.ipus[1]):
            x = self.b(x)
        with poptorch.Block("C", ipu_id=self.ipus[2]):
            x = self.c(x)
            loss = nn.functional.mse_loss(x, y)
        return x, loss


def compile_training(model, opts=None, micro_batch=4):
    opts = opts or poptorch.Options()
    if opts.Training.gradient_accumulation == 1:
        opts.Training.gradientAccumulation(8)
    training = poptorch.trainingModel(model, opts)
    samples = micro_batch * opts.Training.gradient_accumulation * opts.replication_factor
    training.compile(torch.randn(samples, 4), torch.randn(samples, 4))
    return training


def test_same_as_ipu_puts_blocks_on_their_ipus():
    plan = compile_training(ThreeBlocks((0, 1, 1))).plan
    assert [(s.ipu, s.blocks) for s in plan.placement.stages] == [(0, ["A"]), (1, ["B", "C"])]


def test_plain_block_ids_land_on_successive_ipus_unless_blocks_name_theirs():
    opts = poptorch.Options().setExecutionStrategy(poptorch.ShardedExecution("A", "B", "C"))
    opts.autoRoundNumIPUs(True)
    with pytest.warns(UserWarning):
        plan = compile_training(ThreeBlocks((None, None, None)), opts).plan
    assert [s.ipu for s in plan.placement.stages] == [0, 1, 2]
    opts = poptorch.Options().setExecutionStrategy(poptorch.ShardedExecution("A", "B", "C"))
    plan = compile_training(ThreeBlocks((1, 0, 1)), opts).plan
    assert [s.ipu for s in plan.placement.stages] == [1, 0, 1]


def test_block_without_ipu_under_same_as_ipu_says_how_to_fix_it():
    # PopTorch asserts it (python/options.py: _DefaultStageManager.getStage)
    with pytest.raises(AssertionError, match=r"^poptorch\.AutoStage\.SameAsIpu was selected but "
                                             r"no IPU was specified for block A\. .*block 'A' has "
                                             r"no ipu_id.*Block\('A', ipu_id=0\)"):
        compile_training(ThreeBlocks((None, None, None)))


def test_stage_ids_must_ascend_when_pipelining():
    with pytest.raises(poptorch.Error, match=r"block 'C' \(stage 0\) runs after block 'B' "
                                             r"\(stage 1\).*AutoIncrement"):
        compile_training(ThreeBlocks((0, 1, 0)))


def test_auto_increment_fixes_descending_ipus():
    opts = poptorch.Options().setExecutionStrategy(
        poptorch.PipelinedExecution(poptorch.AutoStage.AutoIncrement))
    opts.Training.gradientAccumulation(5)
    plan = compile_training(ThreeBlocks((0, 1, 0)), opts).plan
    assert [s.ipu for s in plan.placement.stages] == [0, 1, 0]
    assert plan.placement.ipus_per_replica == 2


def test_a_block_the_model_runs_in_no_stage_is_poptorchs_unknown_block():
    # was wrong: a typo'd Stage("X") was reported as X never running, not as PopTorch's getStage
    # reports it (python/options.py): the block the model runs, C, is unknown
    opts = poptorch.Options().setExecutionStrategy(poptorch.PipelinedExecution("A", "B", "X"))
    with pytest.raises(AssertionError, match=r"^Unknown Block 'C' list of expected Blocks: "
                                             r"\['A', 'B', 'X'\]\. .*add 'C' to one"):
        compile_training(ThreeBlocks(), opts)


def test_a_stage_naming_a_block_the_model_never_runs_lists_the_ones_it_ran():
    opts = poptorch.Options().setExecutionStrategy(poptorch.PipelinedExecution("A", "B", "C", "X"))
    with pytest.raises(poptorch.Error, match=r"block 'X'.*never ran.*'A', 'B', 'C'"):
        compile_training(ThreeBlocks(), opts)


def test_block_in_two_stages():
    # PopTorch asserts it when the strategy is made (python/options.py: PipelinedExecution)
    with pytest.raises(AssertionError, match=r"B associated with more than one stage"):
        poptorch.PipelinedExecution(poptorch.Stage("A", "B").ipu(0), poptorch.Stage("B", "C").ipu(1))


def test_block_in_no_stage():
    opts = poptorch.Options().setExecutionStrategy(poptorch.PipelinedExecution(
        poptorch.Stage("A").ipu(0), poptorch.Stage("B").ipu(1)))
    with pytest.raises(AssertionError, match=r"Unknown Block 'C' list of expected Blocks: "
                                             r"\['A', 'B'\]"):
        compile_training(ThreeBlocks(), opts)


def test_shared_weights_must_stay_on_one_ipu():
    with pytest.raises(poptorch.Error, match=r"share weights.*'a.weight'.*block 'A' \(IPU 0\).*"
                                             r"block 'C' \(IPU 2\)"):
        compile_training(ThreeBlocks((0, 1, 2), tie=True))


def test_shared_weights_on_one_ipu_compile():
    opts = poptorch.Options().setExecutionStrategy(poptorch.ShardedExecution(
        poptorch.Stage("A").ipu(0), poptorch.Stage("B").ipu(1), poptorch.Stage("C").ipu(0)))
    plan = compile_training(ThreeBlocks(tie=True), opts).plan
    assert plan.placement.ipus_per_replica == 2


def test_ops_outside_every_block_are_named():
    class Leaky(ThreeBlocks):
        def forward(self, x, y):
            with poptorch.Block("A", ipu_id=0):
                x = self.a(x)
            x = x * 2  # between blocks: belongs to none
            with poptorch.Block("B", ipu_id=1):
                x = self.b(x)
                loss = nn.functional.mse_loss(x, y)
            return x, loss

    with pytest.raises(poptorch.Error, match=r"^No active Block, all the ops must belong to a Block: "
                       r"1 op\(s\) ran outside every poptorch.Block \(aten.mul"):
        compile_training(Leaky())


def test_ipu_count_must_be_a_power_of_two():
    with pytest.raises(poptorch.Error, match=r"^The model specifies the use of 3 IPUs, however "
                                             r"PopTorch must reserve a minimum of 4 .*3 is not a "
                                             r"power of two.*autoRoundNumIPUs"):
        compile_training(ThreeBlocks((0, 1, 2)))


def test_auto_round_reserves_the_next_power_of_two_with_a_warning():
    opts = poptorch.Options().autoRoundNumIPUs(True)
    opts.Training.gradientAccumulation(5)
    with pytest.warns(UserWarning, match="reserving 4 IPUs for a model that needs 3"):
        plan = compile_training(ThreeBlocks((0, 1, 2)), opts).plan
    assert plan.placement.ipus_acquired == 4


def test_more_ipus_than_the_system_has():
    ipu_tutorials.set_system("ipu2", num_ipus=2)
    opts = poptorch.Options().replicationFactor(2).autoRoundNumIPUs(True)
    with (pytest.raises(poptorch.Error, match=r"failed to acquire 8 IPUs.*system has 2"),
          pytest.warns(UserWarning)):
        compile_training(ThreeBlocks((0, 1, 2)), opts)


def test_pipelined_training_needs_accumulation_of_2n_minus_1():
    opts = poptorch.Options().setExecutionStrategy(poptorch.PipelinedExecution("B1", "B2", "B3", "B4"))
    opts.Training.gradientAccumulation(6)
    model = poptorch.trainingModel(_with_loss(Network()), opts)
    with pytest.raises(poptorch.Error, match=r"4 stages.*2N-1 = 7.*gradientAccumulation\(7\)"):
        model.compile(torch.randn(6 * 2, 1, 28, 28), torch.randint(0, 10, (12,)))


def test_sharded_training_has_no_accumulation_rule():
    opts = poptorch.Options().setExecutionStrategy(poptorch.ShardedExecution("B1", "B2", "B3", "B4"))
    model = poptorch.trainingModel(_with_loss(Network()), opts)
    model.compile(torch.randn(2, 1, 28, 28), torch.randint(0, 10, (2,)))
    assert len(model.plan.placement.stages) == 4


def test_pipelined_inference_needs_device_iterations_of_n():
    opts = poptorch.Options().deviceIterations(3)
    opts.setExecutionStrategy(poptorch.PipelinedExecution("B1", "B2", "B3", "B4"))
    model = poptorch.inferenceModel(Network(), opts)
    with pytest.raises(poptorch.Error, match=r"device iterations must be at least 4; it is 3"):
        model.compile(torch.randn(6, 1, 28, 28))


def test_parallel_phases_alternate_even_and_odd_ipus():
    strategy = poptorch.ParallelPhasedExecution(poptorch.Phase("A"), poptorch.Phase("B"),
                                                poptorch.Phase("C"))
    strategy.phase(1).ipus(2)
    opts = poptorch.Options().setExecutionStrategy(strategy)
    with pytest.raises(poptorch.Error, match=r"^When phases are executed in parallel: even phases "
                                             r"must run on even IPUs and odd phases on odd IPUs\. "
                                             r"Phase 1.*IPU 2"):
        compile_training(ThreeBlocks((None, None, None)), opts)


def test_serial_phases_reuse_the_same_ipus():
    strategy = poptorch.SerialPhasedExecution(poptorch.Phase("A"), poptorch.Phase("B"),
                                              poptorch.Phase("C"))
    plan = compile_training(ThreeBlocks((None, None, None)),
                            poptorch.Options().setExecutionStrategy(strategy)).plan
    assert [(s.phase, s.ipu) for s in plan.placement.stages] == [(0, 0), (1, 0), (2, 0)]


def test_a_phased_stage_without_an_ipu_runs_on_its_blocks_ipu_id():
    strategy = poptorch.SerialPhasedExecution(poptorch.Phase("A"), poptorch.Phase("B"),
                                              poptorch.Phase("C"))
    plan = compile_training(ThreeBlocks((1, 1, 0)),
                            poptorch.Options().setExecutionStrategy(strategy)).plan
    assert [(s.phase, s.ipu) for s in plan.placement.stages] == [(0, 1), (1, 1), (2, 0)]


@pytest.mark.parametrize("cls, ipus", [(poptorch.SerialPhasedExecution, [0, 1, 0, 1]),
                                       (poptorch.ParallelPhasedExecution, [0, 2, 1, 3])])
def test_phased_stages_naming_no_ipu_get_the_simulators_default_with_a_warning(cls, ipus, caplog):
    class FourBlocks(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList(nn.Linear(4, 4) for _ in range(4))

        def forward(self, x):
            for name, layer in zip("ABCD", self.layers):
                with poptorch.Block(name):
                    x = layer(x)
            with poptorch.Block("D"):
                return poptorch.identity_loss(x.sum(), reduction="sum")

    strategy = cls(poptorch.Phase(poptorch.Stage("A"), poptorch.Stage("B")),
                   poptorch.Phase(poptorch.Stage("C"), poptorch.Stage("D")))
    opts = poptorch.Options().setExecutionStrategy(strategy).showCompilationProgressBar(False)
    net = FourBlocks()
    model = poptorch.trainingModel(net, opts, poptorch.optim.SGD(net.parameters(), lr=0.1))
    with caplog.at_level("WARNING", logger="poptorch"):
        model.compile(torch.randn(4, 4))
    assert [s.ipu for s in model.plan.placement.stages] == ipus
    assert len(caplog.records) == 1  # one message per compile, not one per stage
    assert caplog.records[0].getMessage() == (
        "4 phased stage(s) name no IPU (no Stage.ipu(), phase(i).ipus(...) or Block ipu_id); "
        "PopTorch has no default for phased stages, so name them. The simulator uses: "
        + "; ".join(f"phase {p} {[b]} -> IPU {i}" for p, b, i in zip([0, 0, 1, 1], "ABCD", ipus)))


def _with_loss(net):
    from ipu_tutorials.tutorial.models import TrainingModelWithLoss
    return TrainingModelWithLoss(net)


def test_waiting_for_ipus_cannot_help_the_simulated_system(monkeypatch):
    monkeypatch.setenv("POPTORCH_WAIT_FOR_IPU", "1")
    ipu_tutorials.set_system("ipu2", num_ipus=2)
    with pytest.raises(poptorch.Error, match=r"failed to acquire 4 IPUs.*nothing to wait for"):
        compile_training(ThreeBlocks((0, 1, 3)))


def test_a_pipeline_refuses_activations_flowing_back_to_an_earlier_stage(options):
    # was wrong: only the order of blocks was checked, not where their activations flow.
    class Back(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(4, 4), nn.Linear(4, 4)

        def forward(self, x):
            with poptorch.Block("A", ipu_id=0):
                x = self.a(x)
            with poptorch.Block("B", ipu_id=1):
                y = self.b(x)
            with poptorch.Block("A", ipu_id=0):
                return x + y

    with pytest.raises(poptorch.Error, match=r"block 'B' \(stage 1\) feeds block 'A'.*earlier"):
        poptorch.inferenceModel(Back(), options(d=2)).compile(torch.randn(4, 4))
class FiveBlocks(nn.Module):
    """Blocks on IPUs 0, 0, 1, 1, 0: AutoIncrement makes five blocks, PopTorch three stages."""

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(4, 4) for _ in range(5))

    def forward(self, x, y):
        for index, (layer, ipu) in enumerate(zip(self.layers, (0, 0, 1, 1, 0))):
            with poptorch.Block(f"L{index}", ipu_id=ipu):
                x = layer(x)
                if index == 4:
                    return x, nn.functional.mse_loss(x, y)


def auto_increment(accumulation):
    opts = poptorch.Options().setExecutionStrategy(
        poptorch.PipelinedExecution(poptorch.AutoStage.AutoIncrement))
    opts.Training.gradientAccumulation(accumulation)
    return opts


def test_consecutive_blocks_on_one_ipu_merge_into_one_pipeline_stage():
    model = compile_training(FiveBlocks(), auto_increment(5))  # K = 3 stages: 2K-1 = 5
    stages = model.plan.placement.stages
    assert [(s.ipu, s.blocks) for s in stages] == [(0, ["L0", "L1"]), (1, ["L2", "L3"]),
                                                   (0, ["L4"])]


def test_the_accumulation_rule_counts_merged_stages_with_poptorchs_wording():
    with pytest.raises(poptorch.Error, match=r"gradientAccumulation must be greater than or equal "
                                             r"to the number of pipeline stages \(5\) when using "
                                             r"poptorch\.PipelinedExecution\. Please note that a "
                                             r"model with 3 pipeline stages in PopTorch will have "
                                             r"an additional 2 stages when training\..*it is 4"):
        compile_training(FiveBlocks(), auto_increment(4))
