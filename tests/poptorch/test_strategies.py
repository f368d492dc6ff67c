"""Execution strategies and their stages and phases: what they record and what they refuse."""
import pytest

from ipu_tutorials import poptorch


# --- Stage ------------------------------------------------------------------------------------------
def test_stage_holds_blocks_and_an_ipu():
    stage = poptorch.Stage("A", "B")
    assert stage.blocks == ["A", "B"] and stage.ipu_id is None
    assert repr(stage) == 'Stage("A", "B")'
    assert stage.ipu(2) is stage
    assert stage.ipu_id == 2 and repr(stage) == 'Stage("A", "B").ipu(2)'


def test_an_int_block_id_names_the_block_by_its_digits():
    # PopTorch's own pipelining tests give BeginBlock int ids (user_id=1); a Stage names them too
    assert poptorch.Stage(1, "B").blocks == ["1", "B"]
    assert poptorch.PipelinedExecution([0, 1], 2).stages[1].blocks == ["2"]


@pytest.mark.parametrize("ids, error, message", [
    ((), ValueError, r"poptorch.Stage needs at least one block id, e.g. Stage\(\"B1\"\)"),
    ((1.0,), TypeError, r"poptorch.Stage: block ids are strings or ints \(the user_id given to "
                        r"poptorch.Block or BeginBlock\), got float 1.0"),
    (("A", None), TypeError, r"block ids are strings or ints .*, got NoneType None"),
    ((True,), TypeError, r"block ids are strings or ints .*, got bool True"),
])
def test_stage_rejects_bad_block_ids(ids, error, message):
    with pytest.raises(error, match=message):
        poptorch.Stage(*ids)


@pytest.mark.parametrize("ipu, error, message", [
    (-1, ValueError, r"Stage.ipu\(\) must be an integer >= 0, got -1"),
    ("0", TypeError, r"Stage.ipu\(\) expects an integer, got str '0'"),
    (1.0, TypeError, r"Stage.ipu\(\) expects an integer, got float 1.0"),
])
def test_stage_ipu_must_be_a_non_negative_integer(ipu, error, message):
    with pytest.raises(error, match=message):
        poptorch.Stage("A").ipu(ipu)


# --- Pipelined and sharded -----------------------------------------------------------------------------
@pytest.mark.parametrize("cls", [poptorch.PipelinedExecution, poptorch.ShardedExecution])
def test_staged_strategy_defaults_to_same_as_ipu(cls):
    strategy = cls()
    assert strategy.auto_stage == poptorch.AutoStage.SameAsIpu and strategy.stages is None
    assert repr(strategy) == f"{cls.__name__}(AutoStage.SameAsIpu)"
    auto = cls(poptorch.AutoStage.AutoIncrement)
    assert auto.auto_stage == poptorch.AutoStage.AutoIncrement and auto.stages is None
    assert repr(auto) == f"{cls.__name__}(AutoStage.AutoIncrement)"


def test_block_ids_become_stages_without_an_ipu_of_their_own():
    # placement puts such a stage on its blocks' ipu_id, else on the IPU numbered like the stage
    strategy = poptorch.PipelinedExecution("A", "B", "C")
    assert [s.blocks for s in strategy.stages] == [["A"], ["B"], ["C"]]
    assert [s.ipu_id for s in strategy.stages] == [None, None, None]
    assert repr(strategy) == 'PipelinedExecution(Stage("A"), Stage("B"), Stage("C"))'


def test_explicit_stages_keep_their_ipus():
    strategy = poptorch.ShardedExecution(poptorch.Stage("A", "B").ipu(1), poptorch.Stage("C"))
    assert [s.blocks for s in strategy.stages] == [["A", "B"], ["C"]]
    assert [s.ipu_id for s in strategy.stages] == [1, None]
    assert repr(strategy) == 'ShardedExecution(Stage("A", "B").ipu(1), Stage("C"))'


def test_a_list_of_block_ids_is_one_stage():
    strategy = poptorch.PipelinedExecution(["A", "B"], "C")
    assert [s.blocks for s in strategy.stages] == [["A", "B"], ["C"]]


@pytest.mark.parametrize("args, error, message", [
    ((poptorch.AutoStage.AutoIncrement, "A"), TypeError,
     r"PipelinedExecution: pass either one AutoStage or stages/block ids, not both"),
    ((3.0,), TypeError, r"PipelinedExecution: block ids are strings or ints .*, got float 3.0"),
    ((["A", None],), TypeError, r"PipelinedExecution: block ids are strings or ints .*, got "
                                r"NoneType None"),
])
def test_staged_strategy_rejects_bad_arguments(args, error, message):
    with pytest.raises(error, match=message):
        poptorch.PipelinedExecution(*args)


# --- Phase and phased strategies ------------------------------------------------------------------------
def test_phase_of_stages_and_its_ipus():
    phase = poptorch.Phase(poptorch.Stage("A"), poptorch.Stage("B"))
    assert phase.ipu_ids == [None, None]
    assert phase.ipus(0, 2) is phase
    assert phase.ipu_ids == [0, 2]
    assert repr(phase) == 'Phase(Stage("A").ipu(0), Stage("B").ipu(2))'


def test_phase_of_block_ids_is_one_stage_made_of_those_blocks():
    phase = poptorch.Phase("A", "B")  # as in PopTorch: one Stage made of 2 blocks
    assert [s.blocks for s in phase.stages] == [["A", "B"]]
    assert [s.blocks for s in poptorch.Phase(["A", "B"]).stages] == [["A", "B"]]


@pytest.mark.parametrize("args, error, message", [
    ((), ValueError, r"poptorch.Phase needs at least one stage or block id"),
    (("A", poptorch.Stage("B")), TypeError,
     r"poptorch.Phase takes either block ids \(strings, which form one Stage\) or poptorch.Stage "
     r"objects, all of one kind; got \['str', 'Stage'\]"),
    ((1,), TypeError, r"got \['int'\]"),
])
def test_phase_rejects_bad_arguments(args, error, message):
    with pytest.raises(error, match=message):
        poptorch.Phase(*args)


def test_phase_ipus_needs_one_ipu_per_stage():
    phase = poptorch.Phase(poptorch.Stage("A"), poptorch.Stage("B"))
    with pytest.raises(ValueError, match=r"Phase.ipus\(\): this phase has 2 stage\(s\) "
                                         r"\[Stage\(\"A\"\), Stage\(\"B\"\)\] but 1 IPU id\(s\) \[0\] "
                                         r"were given; give one IPU per stage"):
        phase.ipus(0)
    with pytest.raises(ValueError, match=r"but 3 IPU id\(s\) \[0, 1, 2\]"):
        phase.ipus(0, 1, 2)
    assert phase.ipu_ids == [None, None]


def test_phased_strategies_leave_unnamed_ipus_to_the_blocks_as_poptorch_does():
    strategy = poptorch.SerialPhasedExecution(
        poptorch.Phase(poptorch.Stage("A"), poptorch.Stage("A2")),
        poptorch.Phase(poptorch.Stage("B"), poptorch.Stage("B2")).ipus(0, 1))
    assert [p.ipu_ids for p in strategy.phases] == [[None, None], [0, 1]]
    assert strategy.liveness == poptorch.Liveness.AlwaysLive
    assert strategy.separate_backward_phase is False
    assert repr(strategy) == ('SerialPhasedExecution(Phase(Stage("A"), Stage("A2")), '
                              'Phase(Stage("B").ipu(0), Stage("B2").ipu(1)).ipus(0, 1))')
    parallel = poptorch.ParallelPhasedExecution(
        poptorch.Phase(poptorch.Stage("0"), poptorch.Stage("1")),
        poptorch.Phase(poptorch.Stage("2"), poptorch.Stage("3")))
    assert [p.ipu_ids for p in parallel.phases] == [[None, None], [None, None]]
    assert parallel.send_tensors_off_chip_after_fwd is False


def test_phased_strategy_keeps_ipus_the_user_chose():
    strategy = poptorch.ParallelPhasedExecution(
        poptorch.Phase(poptorch.Stage("A").ipu(2)), poptorch.Phase(poptorch.Stage("B").ipu(5)))
    assert [p.ipu_ids for p in strategy.phases] == [[2], [5]]
    strategy.phase(1).ipus(3)
    assert strategy.phase(1).ipu_ids == [3]


def test_phased_strategy_argument_forms():
    listed = poptorch.SerialPhasedExecution([poptorch.Phase("A"), poptorch.Phase("B")])
    assert [[s.blocks for s in p.stages] for p in listed.phases] == [[["A"]], [["B"]]]
    of_stages = poptorch.SerialPhasedExecution([poptorch.Stage("A"), poptorch.Stage("B")],
                                               [poptorch.Stage("C")])
    assert [[s.blocks for s in p.stages] for p in of_stages.phases] == [[["A"], ["B"]], [["C"]]]
    one_phase = poptorch.SerialPhasedExecution([poptorch.Stage("A"), poptorch.Stage("B")])
    assert len(one_phase.phases) == 1 and one_phase.phase(0).ipu_ids == [None, None]
    of_ids = poptorch.ParallelPhasedExecution("A", "B")
    assert [[s.blocks for s in p.stages] for p in of_ids.phases] == [[["A"]], [["B"]]]
    assert [p.ipu_ids for p in of_ids.phases] == [[None], [None]]


def test_phased_strategy_setters_chain_and_validate():
    serial = poptorch.SerialPhasedExecution(poptorch.Phase("A"))
    assert serial.setTensorsLiveness(poptorch.Liveness.OffChipAfterEachPhase) is serial
    assert serial.liveness == poptorch.Liveness.OffChipAfterEachPhase
    assert serial.useSeparateBackwardPhase() is serial and serial.separate_backward_phase is True
    with pytest.raises(TypeError, match=r"setTensorsLiveness\(\) expects one of "
                                        r"Liveness.AlwaysLive"):
        serial.setTensorsLiveness("OffChipAfterFwd")
    with pytest.raises(TypeError, match=r"useSeparateBackwardPhase\(\) expects True or False, "
                                        r"got int 1"):
        serial.useSeparateBackwardPhase(1)
    parallel = poptorch.ParallelPhasedExecution(poptorch.Phase("A"))
    assert parallel.sendTensorsOffChipAfterFwd() is parallel
    assert parallel.send_tensors_off_chip_after_fwd is True
    with pytest.raises(TypeError, match=r"sendTensorsOffChipAfterFwd\(\) expects True or False"):
        parallel.sendTensorsOffChipAfterFwd("yes")


@pytest.mark.parametrize("cls", [poptorch.SerialPhasedExecution, poptorch.ParallelPhasedExecution])
def test_phased_strategy_needs_phases_and_valid_indices(cls):
    with pytest.raises(ValueError, match=rf"{cls.__name__} needs at least one poptorch.Phase"):
        cls()
    strategy = cls(poptorch.Phase("A"), poptorch.Phase("B"))
    with pytest.raises(IndexError, match=rf"{cls.__name__} has phases 0..1, not 2"):
        strategy.phase(2)
    with pytest.raises(IndexError, match=r"has phases 0..1, not -1"):
        strategy.phase(-1)
    with pytest.raises(IndexError, match=r"not '0'"):
        strategy.phase("0")


def test_strategies_are_accepted_by_options():
    for strategy in (poptorch.PipelinedExecution("A"), poptorch.ShardedExecution(),
                     poptorch.SerialPhasedExecution(poptorch.Phase("A")),
                     poptorch.ParallelPhasedExecution(poptorch.Phase("A"))):
        opts = poptorch.Options().setExecutionStrategy(strategy)
        assert opts.execution_strategy is strategy
        assert f"execution_strategy={strategy!r}," in repr(opts)


def test_a_phased_strategy_finds_the_stage_of_a_block_to_move_it():
    strategy = poptorch.SerialPhasedExecution(poptorch.Phase("A", "B"), poptorch.Phase("C"))
    assert strategy.stage("C") is strategy.phase(1).stages[0]
    strategy.stage("C").ipu(1)
    assert strategy.phase(1).ipu_ids == [1]
    with pytest.raises(KeyError, match=r"unknown block 'D'; the phases hold \['A', 'B', 'C'\]"):
        strategy.stage("D")
