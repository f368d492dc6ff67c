"""Exercise and Feedback: answers, hints and solutions on demand."""
from ipu_tutorials.classroom.exercises import pipelining
from ipu_tutorials.classroom.exercises.base import Exercise, Feedback


def test_an_unanswered_exercise_asks_for_an_answer():
    assert "replace the `...`" in repr(pipelining.combined_batch.check(...))


def test_hints_and_solutions_only_when_asked():
    assert repr(pipelining.combined_batch).endswith("call .check(answer), .hint() or .solution()")
    assert "8000" not in repr(pipelining.combined_batch)
    assert repr(pipelining.combined_batch.hint()).startswith("Hint: ")
    assert "40 * 10 * 10 * 2" in repr(pipelining.combined_batch.solution())


def test_numeric_answers_must_be_numbers():
    feedback = pipelining.combined_batch.check("8000")
    assert not feedback and "should be a number" in repr(feedback)


def test_feedback_is_truthy_only_when_correct():
    assert Feedback(True, "x") and not Feedback(False, "x")
    exercise = Exercise("t", lambda a: Feedback(a == 1, "m"), hint="h", solution="s")
    assert exercise.check(1) and not exercise.check(2)


def test_a_typical_wrong_number_gets_its_own_explanation():
    from ipu_tutorials.classroom.exercises.base import check_number
    typical = {6: "round up to a power of two."}
    assert "round up to a power of two" in check_number(6, 8, "IPUs", "ok", typical=typical).message
    assert check_number(5, 8, "IPUs", "ok", typical=typical).message == "5 is too low for IPUs."
    assert check_number(8, 8, "IPUs", "ok", typical={8: "never shown"}).correct
