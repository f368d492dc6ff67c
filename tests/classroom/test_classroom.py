"""Explorers driven headless (their numbers are the runtime's) and every exercise, right and wrong."""
import matplotlib
import pytest
import torch

from ipu_tutorials import poptorch
from ipu_tutorials.classroom import memory_planner, pipeline_explorer, precision_explorer
from ipu_tutorials.classroom.exercises import lesson1, lesson2, lesson3, lesson4, lesson5
from ipu_tutorials.classroom.exercises.base import Exercise, Feedback
from ipu_tutorials.classroom.explorers.memory import even_split, plan_memory_for
from ipu_tutorials.classroom.explorers.pipeline import StageStack, pipeline_options
from ipu_tutorials.classroom.explorers.precision import accumulate_in_half, survival

matplotlib.use("Agg")


def figure_bytes(explorer) -> str:
    return explorer.output.outputs[0]["data"]["image/png"]


# --- pipeline explorer -----------------------------------------------------------------------
def runtime_plan(ipus, accumulation, device_iterations, imbalance, strategy):
    """The same configuration wrapped and compiled directly with poptorch."""
    with torch.device("meta"):
        model = StageStack(ipus, imbalance)
    opts = pipeline_options(ipus, accumulation, device_iterations, strategy)
    training = poptorch.trainingModel(model, opts, poptorch.optim.SGD(model.parameters(), lr=0.01))
    data = torch.empty(16 * accumulation * device_iterations, 512, device="meta")
    training.compile(data, data)
    return training.plan


def test_pipeline_explorer_redraws_and_matches_the_runtime():
    explorer = pipeline_explorer(ipus=4, accumulation=8)
    before_text, before_png = explorer.text, figure_bytes(explorer)
    explorer.controls["accumulation"].value = 32
    assert explorer.text != before_text and figure_bytes(explorer) != before_png
    plan = runtime_plan(4, 32, 1, 0.0, "pipelined")
    assert explorer.result["plan"].samples_per_second == plan.samples_per_second
    assert f"{plan.samples_per_second:,.0f} samples/s" in explorer.text
    assert "38 cycles per step (fill 6, main 26, flush 6)" in explorer.text


@pytest.mark.parametrize("control, value", [("ipus", 8), ("device_iterations", 3),
                                            ("imbalance", 1.5), ("strategy", "sharded")])
def test_every_pipeline_control_reaches_the_runtime(control, value):
    explorer = pipeline_explorer(ipus=4, accumulation=16)
    before = explorer.result["plan"].device_samples_per_second
    explorer.controls[control].value = value
    values = explorer.values
    assert explorer.result["plan"].samples_per_second == runtime_plan(**values).samples_per_second
    assert explorer.result["plan"].device_samples_per_second != before


def test_pipeline_explorer_shows_the_rule_it_breaks():
    explorer = pipeline_explorer(ipus=4, accumulation=8)
    explorer.controls["accumulation"].value = 3
    assert "gradient accumulation must be at least 7; it is 3" in explorer.text
    assert explorer.output.outputs == ()


def test_sharding_keeps_one_ipu_busy_in_the_explorer():
    explorer = pipeline_explorer(ipus=4, accumulation=8, strategy="sharded")
    assert explorer.result["plan"].timeline.max_concurrency() == 1


# --- memory planner --------------------------------------------------------------------------
def test_memory_planner_marks_out_of_memory_and_offload_fixes_it():
    planner = memory_planner(size="1.3B", ipus=16, optimizer="AdamW")
    assert "out of memory" in planner.text
    png = figure_bytes(planner)
    planner.controls["offload"].value = True
    planner.controls["half"].value = True
    assert "fits" in planner.text and figure_bytes(planner) != png
    assert [m.total for m in planner.result["memory"].ipus] == [
        m.total for m in plan_memory_for("1.3B", 16, "AdamW", True, True).ipus]


def test_memory_planner_numbers_are_the_runtime_plan():
    from ipu_tutorials.tutorial.models import TransformerLM, split_layers

    with torch.device("meta"):
        model = TransformerLM(width=768, depth=12, heads=12, recompute_checkpoint_every_layer=True)
    split_layers(model, even_split(12, 4))
    opts = poptorch.Options()
    opts.Training.gradientAccumulation(8)
    opts.TensorLocations.setOptimizerLocation(poptorch.TensorLocationSettings().useOnChipStorage(False))
    training = poptorch.trainingModel(model, opts, poptorch.optim.LAMB(model.parameters()))
    tokens = torch.zeros(32, 128, dtype=torch.long, device="meta")
    training.compile(tokens, tokens)
    planner = memory_planner(size="125M", ipus=4, optimizer="LAMB", offload=True)
    assert [m.as_dict() for m in planner.result["memory"].ipus] == [
        m.as_dict() for m in training.plan.memory.ipus]


@pytest.mark.parametrize("optimizer, state", [("SGD", 0), ("SGD + momentum", 1), ("AdamW", 2)])
def test_optimizer_choice_changes_the_state_bar(optimizer, state):
    memory = plan_memory_for("125M", 4, optimizer)
    assert all(m.optimizer == state * m.weights for m in memory.ipus if m.weights)


def test_even_split_favours_the_middle_ipus():
    assert even_split(24, 16) == [1] + [2] * 8 + [1] * 7
    assert sum(even_split(13, 4)) == 13


# --- precision explorer ----------------------------------------------------------------------
def test_precision_explorer_counts_what_survives():
    explorer = precision_explorer(loss_scale_log2=0)
    low = explorer.result["survived"]
    png = figure_bytes(explorer)
    explorer.controls["loss_scale_log2"].value = 10
    assert explorer.result["survived"] > low and figure_bytes(explorer) != png
    assert explorer.result["survived"] == survival(1024.0, torch.float16)["survived"]
    explorer.controls["dtype"].value = "float32"
    assert explorer.result["survived"] == explorer.result["total"]
    assert "100.0% of" in explorer.text


def test_too_large_a_scale_overflows():
    assert survival(2.0**16, torch.float16)["overflowed"] > 0
    assert survival(2.0**16, torch.bfloat16)["overflowed"] == 0  # bfloat16 has float32's range


def test_stochastic_rounding_keeps_small_addends_on_average():
    assert accumulate_in_half(1e-4, 2000, stochastic=False) == 1.0
    assert accumulate_in_half(1e-4, 2000, stochastic=True) == pytest.approx(1.2, abs=0.03)


# --- exercises -------------------------------------------------------------------------------
S = poptorch.Stage
RIGHT_AND_WRONG = [
    (lesson1.two_ipus, (poptorch.PipelinedExecution(S("B1", "B2").ipu(0), S("B3", "B4").ipu(1)),),
     (poptorch.PipelinedExecution(S("B1", "B2", "B3").ipu(0), S("B4").ipu(1)),),
     "B3 is on IPU 0, not IPU 1"),
    (lesson1.fix_descending_stages, (poptorch.AutoStage.AutoIncrement,),
     (poptorch.AutoStage.SameAsIpu,), "SameAsIpu is the rule that failed"),
    (lesson1.ipus_reserved, (8,), (6,), "6 is too low"),
    (lesson2.smallest_accumulation, (7,), (4,), "4 is too low"),
    (lesson2.combined_batch, (8000,), (4000,), "4000 is too low"),
    (lesson2.balance_two_ipus, (poptorch.PipelinedExecution(S("B1", "B2").ipu(0), S("B3", "B4").ipu(1)),),
     (poptorch.PipelinedExecution(S("B1", "B2", "B3").ipu(0), S("B4").ipu(1)),),
     "IPU 0 (B1, B2, B3) does 74% of the work"),
    (lesson3.busy_ipus, (1,), (4,), "4 is too high"),
    (lesson3.speedup, (lesson3.measured_speedup(),), (4.0,), "4.0 is too high"),
    (lesson4.adamw_state_bytes, (720_208,), (360_104,), "too low"),
    (lesson4.make_it_fit, (), (), "IPU 15 is still"),
    (lesson5.loss_scale, (1024,), (1,), "only 69.1% of the gradients survive"),
    (lesson5.half_partials, (), (poptorch.Options(),), "did not shrink"),
]


@pytest.mark.parametrize("exercise, right, wrong, says", RIGHT_AND_WRONG,
                         ids=[e.title for e, *_ in RIGHT_AND_WRONG])
def test_every_exercise_accepts_the_right_answer_and_explains_a_wrong_one(exercise, right, wrong, says):
    right_kwargs = {"offload": True, "half": True} if exercise is lesson4.make_it_fit else {}
    if exercise is lesson5.half_partials:
        options = poptorch.Options()
        options.Precision.setPartialsType(torch.half)
        right = (options,)
    assert exercise.check(*right, **right_kwargs)
    feedback = exercise.check(*wrong)
    assert not feedback and says in repr(feedback)
    assert repr(feedback).startswith("Not yet: ")


def test_an_unanswered_exercise_asks_for_an_answer():
    assert "replace the `...`" in repr(lesson2.combined_batch.check(...))


def test_hints_and_solutions_only_when_asked():
    assert repr(lesson2.combined_batch).endswith("call .check(answer), .hint() or .solution()")
    assert "8000" not in repr(lesson2.combined_batch)
    assert repr(lesson2.combined_batch.hint()).startswith("Hint: ")
    assert "40 * 10 * 10 * 2" in repr(lesson2.combined_batch.solution())


def test_numeric_answers_must_be_numbers():
    feedback = lesson2.combined_batch.check("8000")
    assert not feedback and "should be a number" in repr(feedback)


def test_feedback_is_truthy_only_when_correct():
    assert Feedback(True, "x") and not Feedback(False, "x")
    exercise = Exercise("t", lambda a: Feedback(a == 1, "m"), hint="h", solution="s")
    assert exercise.check(1) and not exercise.check(2)


def test_gradient_survival_does_not_depend_on_the_thread_count():
    from ipu_tutorials.classroom.explorers.precision import small_loss_network
    threads = torch.get_num_threads()
    counts = []
    try:
        for n in (1, 2):
            torch.set_num_threads(n)
            small_loss_network.cache_clear()
            counts.append(survival(1.0, torch.float16)["lost"])
    finally:
        torch.set_num_threads(threads)
        small_loss_network.cache_clear()
    assert counts[0] == counts[1]
