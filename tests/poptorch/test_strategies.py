"""Execution strategies and their stages and phases: what they record and what they refuse.

Each class has PopTorch 3.4's surface (python/options.py): what the simulator reads is kept
under PopTorch's own private names, and each rule PopTorch asserts is an AssertionError.
"""
import pytest

from ipu_tutorials import poptorch

Stage, Phase = poptorch.Stage, poptorch.Phase


def ipus(phase) -> list:
    return [stage._ipu for stage in phase.stages]


# --- Stage ------------------------------------------------------------------------------------------
def test_stage_holds_blocks_and_an_ipu():
    stage = Stage("A", "B")
    assert stage.blocks == ("A", "B") and stage._ipu is None
    assert repr(stage) == 'Stage("A", "B")'
    assert stage.ipu(2) is stage  # as PopTorch's: it chains
    assert stage._ipu == 2 and repr(stage) == 'Stage("A", "B").ipu(2)'


@pytest.mark.parametrize("ids, error, message", [
    ((), ValueError, r"poptorch.Stage needs at least one block id, e.g. Stage\(\"B1\"\)"),
    # PopTorch's assert and words (python/options.py: Stage.__init__)
    ((1,), AssertionError, r"Block IDs are supposed to be strings but got \(1,\)"),
    (("A", None), AssertionError, r"supposed to be strings but got \('A', None\)"),
])
def test_stage_rejects_bad_block_ids(ids, error, message):
    with pytest.raises(error, match=message):
        Stage(*ids)


@pytest.mark.parametrize("ipu, error, message", [
    (-1, ValueError, r"Stage.ipu\(\) must be an integer >= 0, got -1"),
    ("0", AssertionError, r"Stage.ipu\(\) expects an integer, got str '0'"),
    (1.0, AssertionError, r"Stage.ipu\(\) expects an integer, got float 1.0"),
])
def test_stage_ipu_must_be_a_non_negative_integer(ipu, error, message):
    with pytest.raises(error, match=message):
        Stage("A").ipu(ipu)


# --- Pipelined and sharded -----------------------------------------------------------------------------
@pytest.mark.parametrize("cls", [poptorch.PipelinedExecution, poptorch.ShardedExecution])
def test_staged_strategy_defaults_to_same_as_ipu(cls):
    strategy = cls()
    assert strategy._auto_stage == poptorch.AutoStage.SameAsIpu and strategy._stages is None
    assert repr(strategy) == f"{cls.__name__}(AutoStage.SameAsIpu)"
    auto = cls(poptorch.AutoStage.AutoIncrement)
    assert auto._auto_stage == poptorch.AutoStage.AutoIncrement and auto._stages is None
    assert repr(auto) == f"{cls.__name__}(AutoStage.AutoIncrement)"


def test_block_ids_become_stages_without_an_ipu_of_their_own():
    # placement puts such a stage on its blocks' ipu_id, else on the IPU numbered like the stage
    strategy = poptorch.PipelinedExecution("A", "B", "C")
    assert [s.blocks for s in strategy._stages] == [("A",), ("B",), ("C",)]
    assert [s._ipu for s in strategy._stages] == [None, None, None]
    assert repr(strategy) == 'PipelinedExecution(Stage("A"), Stage("B"), Stage("C"))'


def test_explicit_stages_keep_their_ipus_and_stage_finds_a_block():
    strategy = poptorch.ShardedExecution(Stage("A", "B").ipu(1), Stage("C"))
    assert strategy.stage("B") is strategy.stage("A") and strategy.stage("A")._ipu == 1
    assert strategy.stage("C")._ipu is None
    assert repr(strategy) == 'ShardedExecution(Stage("A", "B").ipu(1), Stage("C"))'
    with pytest.raises(AssertionError, match=r"Unknown block D; the stages hold \['A', 'B', 'C'\]"):
        strategy.stage("D")


def test_a_list_of_block_ids_is_one_stage():
    strategy = poptorch.PipelinedExecution(["A", "B"], "C")
    assert [s.blocks for s in strategy._stages] == [("A", "B"), ("C",)]


@pytest.mark.parametrize("args, error, message", [
    ((poptorch.AutoStage.AutoIncrement, "A"), TypeError,
     r"PipelinedExecution: pass either one AutoStage or stages/block ids, not both"),
    ((["A", None],), AssertionError, r"Block IDs are supposed to be strings"),
    # PopTorch's rule and words (python/options.py: PipelinedExecution.__init__)
    (("A", Stage("A", "B")), AssertionError, r"A associated with more than one stage"),
])
def test_staged_strategy_rejects_bad_arguments(args, error, message):
    with pytest.raises(error, match=message):
        poptorch.PipelinedExecution(*args)


# --- Phase and phased strategies ------------------------------------------------------------------------
def test_phase_ipus_places_its_stages_and_returns_none():
    # was wrong: ipus() returned the phase (PopTorch's returns None), so chaining it worked here
    phase = Phase(Stage("A"), Stage("B"))
    assert ipus(phase) == [None, None]
    assert phase.ipus(0, 2) is None
    assert ipus(phase) == [0, 2] and phase.stage(1) is phase.stages[1]
    assert repr(phase) == 'Phase(Stage("A").ipu(0), Stage("B").ipu(2))'


def test_phase_of_block_ids_is_one_stage_made_of_those_blocks():
    phase = Phase("A", "B")  # as in PopTorch: one Stage made of 2 blocks
    assert [s.blocks for s in phase.stages] == [("A", "B")]


@pytest.mark.parametrize("args, error, message", [
    ((), ValueError, r"poptorch.Phase needs at least one stage or block id"),
    # PopTorch's assert and words (python/options.py: Phase.__init__)
    (("A", Stage("B")), AssertionError,
     r"All arguments must either be block IDs \(strings\) or Stages: \[<class 'str'>, "),
    ((1,), AssertionError, r"All arguments must either be block IDs"),
    ((["A", "B"],), AssertionError, r"All arguments must either be block IDs"),
])
def test_phase_rejects_bad_arguments(args, error, message):
    with pytest.raises(error, match=message):
        Phase(*args)


def test_phase_ipus_needs_one_ipu_per_stage():
    phase = Phase(Stage("A"), Stage("B"))
    with pytest.raises(AssertionError, match=r"Phase contains 2 stages but you provided 1 ipus "
                                             r"\[0\]; give one IPU per stage"):
        phase.ipus(0)
    with pytest.raises(AssertionError, match=r"but you provided 3 ipus \[0, 1, 2\]"):
        phase.ipus(0, 1, 2)
    assert ipus(phase) == [None, None]


def test_phased_strategies_leave_unnamed_ipus_to_the_blocks_as_poptorch_does():
    strategy = poptorch.SerialPhasedExecution(
        Phase(Stage("A"), Stage("A2")), Phase(Stage("B").ipu(0), Stage("B2").ipu(1)))
    assert [ipus(p) for p in strategy._phases] == [[None, None], [0, 1]]
    assert strategy._tensors_liveness == poptorch.Liveness.AlwaysLive
    assert strategy._separate_backward_phase is False
    assert repr(strategy) == ('SerialPhasedExecution(Phase(Stage("A"), Stage("A2")), '
                              'Phase(Stage("B").ipu(0), Stage("B2").ipu(1)))')
    parallel = poptorch.ParallelPhasedExecution(Phase(Stage("0"), Stage("1")),
                                                Phase(Stage("2"), Stage("3")))
    assert [ipus(p) for p in parallel._phases] == [[None, None], [None, None]]
    assert parallel._tensors_liveness == poptorch.Liveness.AlwaysLive


def test_a_phase_is_placed_on_the_strategy_as_poptorch_documents():
    strategy = poptorch.ParallelPhasedExecution(Phase(Stage("A").ipu(2)), Phase(Stage("B").ipu(5)))
    assert [ipus(p) for p in strategy._phases] == [[2], [5]]
    strategy.phase(1).ipus(3)
    assert ipus(strategy.phase(1)) == [3]


def test_phased_strategy_argument_forms():
    # PopTorch: each argument is one phase (a Phase, a list of stages or ids, or one of them)
    of_stages = poptorch.SerialPhasedExecution([Stage("A"), Stage("B")], [Stage("C")])
    assert [[s.blocks for s in p.stages] for p in of_stages._phases] == [[("A",), ("B",)],
                                                                         [("C",)]]
    one_phase = poptorch.SerialPhasedExecution([Stage("A"), Stage("B")])
    assert len(one_phase._phases) == 1 and ipus(one_phase.phase(0)) == [None, None]
    of_ids = poptorch.ParallelPhasedExecution("A", "B")
    assert [[s.blocks for s in p.stages] for p in of_ids._phases] == [[("A",)], [("B",)]]
    # a single list of Phases is one phase made of Phases, which PopTorch refuses
    with pytest.raises(AssertionError, match=r"All arguments must either be block IDs"):
        poptorch.SerialPhasedExecution([Phase("A"), Phase("B")])


def test_phased_strategy_setters_chain_and_validate():
    serial = poptorch.SerialPhasedExecution(Phase("A"))
    assert serial.setTensorsLiveness(poptorch.Liveness.OffChipAfterEachPhase) is serial
    assert serial._tensors_liveness == poptorch.Liveness.OffChipAfterEachPhase
    assert serial.useSeparateBackwardPhase() is serial and serial._separate_backward_phase
    with pytest.raises(AssertionError, match=r"setTensorsLiveness\(\) expects a poptorch.Liveness"):
        serial.setTensorsLiveness("OffChipAfterFwd")
    with pytest.raises(AssertionError, match=r"useSeparateBackwardPhase\(\) expects a bool"):
        serial.useSeparateBackwardPhase(1)
    parallel = poptorch.ParallelPhasedExecution(Phase("A"))
    assert parallel.sendTensorsOffChipAfterFwd() is parallel
    assert parallel._tensors_liveness == poptorch.Liveness.OffChipAfterFwd
    with pytest.raises(AssertionError, match=r"sendTensorsOffChipAfterFwd\(\) expects a bool"):
        parallel.sendTensorsOffChipAfterFwd("yes")


@pytest.mark.parametrize("cls", [poptorch.SerialPhasedExecution, poptorch.ParallelPhasedExecution])
def test_phased_strategy_needs_phases_and_valid_indices(cls):
    with pytest.raises(AssertionError, match=r"There is currently no AutoStage for "
                                             r"PhasedExecution, please explicitly specify"):
        cls()
    strategy = cls(Phase("A"), Phase("B"))
    with pytest.raises(IndexError, match=rf"{cls.__name__} has phases 0..1, not 2"):
        strategy.phase(2)
    with pytest.raises(AssertionError, match=r"Phases are identified by positive integers"):
        strategy.phase(-1)
    with pytest.raises(AssertionError, match=r"Phases are identified by positive integers"):
        strategy.phase("0")


def test_strategies_are_accepted_by_options():
    for strategy in (poptorch.PipelinedExecution("A"), poptorch.ShardedExecution(),
                     poptorch.SerialPhasedExecution(Phase("A")),
                     poptorch.ParallelPhasedExecution(Phase("A"))):
        opts = poptorch.Options().setExecutionStrategy(strategy)
        assert opts._execution_strategy is strategy  # PopTorch's private name
        assert f"execution_strategy={strategy!r}," in repr(opts)


def test_a_phased_strategy_finds_the_stage_of_a_block_to_move_it():
    strategy = poptorch.SerialPhasedExecution(Phase("A", "B"), Phase("C"))
    assert strategy.stage("C") is strategy.phase(1).stages[0]
    strategy.stage("C").ipu(1)
    assert ipus(strategy.phase(1)) == [1]
    with pytest.raises(AssertionError, match=r"Unknown block D; the stages hold "
                                             r"\['A', 'B', 'C'\]"):
        strategy.stage("D")
    with pytest.raises(AssertionError, match=r"A associated with more than one stage"):
        poptorch.SerialPhasedExecution(Phase("A"), Phase("A"))
