"""Exercise and Feedback: answers, hints and solutions on demand, shown as a learner and nbgrader
see them."""
import pytest
from IPython.core.interactiveshell import InteractiveShell

from ipu_tutorials.classroom.exercises import offload, pipelining
from ipu_tutorials.classroom.exercises.base import (GRADING, Exercise, Feedback, answer_names,
                                                  is_verdict, right)


def test_an_unanswered_exercise_asks_for_an_answer_and_says_which_cell_to_run():
    message = repr(pipelining.combined_batch.check(...))
    # was wrong: "then run the cell again" did not say the answer cell runs before the check
    assert ("replace the `...` in the answer cell above with your answer, run that cell, then "
            "run this check again" in message)
    assert "replace the `...`" in repr(offload.make_it_fit.check(offload=..., half=...))


def test_hints_and_solutions_only_when_asked():
    assert repr(pipelining.combined_batch).endswith("call .check(answer), .hint() or .solution()")
    assert "8000" not in repr(pipelining.combined_batch)
    assert repr(pipelining.combined_batch.hint()).startswith("Hint: ")
    assert "40 * 10 * 10 * 2" in repr(pipelining.combined_batch.solution())


def test_numeric_answers_must_be_numbers_and_the_feedback_says_so():
    feedback = pipelining.smallest_accumulation.check("7")
    # was wrong: "4 pipelined IPUs should be a number": the answer should be
    assert not feedback and repr(feedback) == "Not yet: the answer should be a number, got str '7'."


def test_feedback_is_truthy_only_when_correct():
    assert Feedback(True, "x") and not Feedback(False, "x")
    exercise = Exercise("t", lambda a: Feedback(a == 1, "m"), hint="h", solution="s = 1")
    assert exercise.check(1) and not exercise.check(2)


def test_a_typical_wrong_number_gets_its_own_explanation():
    from ipu_tutorials.classroom.exercises.base import check_number
    typical = {6: "round up to a power of two."}
    assert "round up to a power of two" in check_number(6, 8, "IPUs", "ok", typical=typical).message
    assert check_number(5, 8, "IPUs", "ok", typical=typical).message == "5 is too low for IPUs."
    assert check_number(8, 8, "IPUs", "ok", typical={8: "never shown"}).correct


def test_the_starting_code_is_declared_or_a_placeholder_per_name_the_solution_binds():
    assert pipelining.smallest_accumulation.starting_code == "my_accumulation = ...  # your answer"
    assert offload.make_it_fit.starting_code == ("my_offload = ...  # your answer\n"
                                                "my_half = ...  # your answer")
    assert answer_names("opts = 1\nmy_options = opts\nmy_options") == ["my_options"]
    assert answer_names("def body(x, a):\n    return x, a") == ["body"]
    assert answer_names("print(1)") == [] and answer_names("for d in range(3):\n    x = d") == []


def test_a_solution_that_binds_two_names_passes_both_to_the_check():
    assert offload.make_it_fit.run_solution().correct


@pytest.fixture
def shell():
    """An IPython shell as a notebook kernel has one: what a cell's last expression shows."""
    shell = InteractiveShell.instance()
    yield shell
    InteractiveShell.clear_instance()


def shown(shell, capsys, value) -> tuple[list, str]:
    """(display data, stderr) of `value` as a cell's last expression; asserts that the cell
    has no execute result."""
    published = []
    shell.display_pub.publish = lambda data, metadata=None, **_: published.append(data)
    execute_result, _ = shell.display_formatter.format(value)  # what the displayhook sends
    assert execute_result == {}
    return published, capsys.readouterr().err


def test_feedback_shows_as_display_data_with_html_that_wraps_between_words(shell, capsys):
    published, err = shown(shell, capsys, pipelining.combined_batch.check(...))
    # was wrong: an execute result in a <pre>, which JupyterLab breaks mid-word and nbgrader
    # tries to read as a partial score ("cannot be converted to a float")
    assert len(published) == 1 and not err
    assert published[0]["text/plain"].startswith("Not yet: replace the `...`")
    assert published[0]["text/html"].startswith("<p><b>Not yet:</b> replace the <code>...</code>")


def test_under_nbgrader_a_not_yet_goes_to_stderr_and_a_correct_shows_as_usual(
        shell, capsys, monkeypatch):
    monkeypatch.setenv(GRADING, "validate")
    published, err = shown(shell, capsys, pipelining.combined_batch.check(8000 // 2))
    assert not published and err.startswith("Not yet: 4,000 for the combined batch size")
    published, err = shown(shell, capsys, pipelining.combined_batch.check(8000))
    assert published[0]["text/plain"].startswith("Correct! ") and not err


def test_hints_wrap_as_prose_and_solutions_show_as_code():
    hint, solution = pipelining.combined_batch.hint(), pipelining.balance_two_ipus.solution()
    assert hint._repr_html_().startswith("<p><b>Hint:</b> multiply the micro-batch")
    assert solution._repr_html_().startswith("<p><b>Solution:</b></p><pre>my_split = poptorch")
    assert str(solution).startswith("Solution:\nmy_split = poptorch.PipelinedExecution(")


def test_a_verdict_is_told_from_what_a_check_printed_before_it():
    assert is_verdict(repr(Feedback(True, "4 IPUs"))) and is_verdict(repr(Feedback(False, "no")))
    assert not is_verdict("Graph compilation: 100%|##########| 100/100")


def test_a_right_answer_that_warns_is_not_yet_and_the_warning_is_said_not_shown(capsys):
    import logging
    import warnings

    def warns_then_passes(answer):
        warnings.warn("a default was filled in")
        return right("fine")

    def logs_then_passes(answer):
        logging.getLogger("poptorch").warning("stage 3 names no IPU.")
        return right("fine")

    for checker, said in ((warns_then_passes, "a default was filled in"),
                          (logs_then_passes, "stage 3 names no IPU")):
        feedback = Exercise("T", checker, hint="h", solution="x = 1").check(1)
        assert not feedback.correct
        assert feedback.message == (f"the check passes, but running your answer warned: {said}. "
                                    f"A right answer runs without warnings.")
    assert capsys.readouterr().err == ""
    assert Exercise("T", lambda a: right("fine"), hint="h", solution="x = 1").check(1).correct
