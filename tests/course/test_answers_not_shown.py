"""No output above an exercise gives its answer away.

An exercise that asks for a number or a choice is spoiled when a cell the learner has already
run printed it (lesson 16 once printed the 655,360 bytes exercise 16.2 asks for; lesson 6's
timeline title named the liveness exercise 6.2 asks for). Each value an output above the answer
cell shows (its text, its HTML, its stream, a figure's alt text) that could be an answer is
handed to the exercise's own check: if the check says "Correct!", the lesson gave it away.

A value a learner could not mistake for an answer by itself is not tried: numbers of fewer than
three significant digits (a "4 IPUs" printed above is no spoiler), and code answers (options,
models, strategies), which no printed value can be.
"""
import enum
import numbers
import re

import pytest
from bs4 import BeautifulSoup

from ipu_tutorials import poptorch
from ipu_tutorials.course import editions

from .stored import LESSONS, notebook

NUMBER = re.compile(r"(?<![\w.])-?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w.])")
ENUMS = [value for value in vars(poptorch).values()
         if isinstance(value, type) and issubclass(value, enum.Enum)]


def shown_texts(cell) -> list[str]:
    """What each of a code cell's outputs shows a reader: its text, its HTML's text, a figure's
    alt text."""
    texts = []
    for output in cell.get("outputs", []):
        data = output.get("data", {})
        html = "".join(data.get("text/html", ""))
        texts.append("\n".join(["".join(output.get("text", "")), "".join(data.get("text/plain", "")),
                                 BeautifulSoup(html, "html.parser").get_text(" ") if html else "",
                                 str(output.get("metadata", {}).get("image/png", {}).get("alt", ""))]))
    return texts


def candidates(text: str) -> list:
    """The values in one output that could be an exercise's answer: numbers of three
    significant digits or more, and a member of one of PopTorch's enums when the output names
    it alone of its enum (a table of every liveness lists the choices; a title naming one
    liveness singles it out)."""
    found = []
    for token in NUMBER.findall(text):
        digits = token.replace(",", "").lstrip("-")
        significant = re.sub(r"[eE].*", "", digits).replace(".", "").lstrip("0")
        if len(significant) < 3 or ("," in token and not re.fullmatch(r"-?\d{1,3}(,\d{3})+", token)):
            continue
        value = float(digits) if re.search(r"[.eE]", digits) else int(digits)
        found.append(-value if token.startswith("-") else value)
    for kind in ENUMS:
        named = [member for member in kind if re.search(rf"\b{member.name}\b", text)]
        found += named if len(named) == 1 else []
    return list(dict.fromkeys(found))


def kind_of(exercise) -> type | None:
    """The kind of value an exercise's answer is, as its `expects` says: a number, one of
    PopTorch's enums, or None for the answers no printed value can be (code, choices, names)."""
    if "number" in exercise.expects:
        return numbers.Number
    return next((kind for kind in ENUMS if f"poptorch.{kind.__name__} member" in exercise.expects),
                None)


def spoilers(lesson: str) -> list[str]:
    nb = notebook(lesson)
    found = []
    for graded in editions.exercises_of(nb):
        kind = kind_of(graded.exercise)
        if kind is None:
            continue
        shown = [value for cell in nb.cells[:graded.answer_cell] if cell.cell_type == "code"
                 for text in shown_texts(cell) for value in candidates(text)]
        for value in dict.fromkeys(shown):
            right_kind = isinstance(value, enum.Enum) == (kind is not numbers.Number)
            if right_kind and isinstance(value, kind) and graded.exercise.check(value).correct:
                found.append(f"{graded.name}: {value!r} is shown above its answer cell")
    return found


@pytest.mark.parametrize("lesson", LESSONS)
def test_no_output_above_an_exercise_gives_its_answer(lesson):
    assert spoilers(lesson) == []


def test_a_number_and_an_enum_shown_above_are_found():
    text = "rank 0 holds 655,360 bytes; plan: Liveness.OffChipAfterFwdNoOverlap; 4 IPUs, 0.5 s"
    assert candidates(text) == [655360, poptorch.Liveness.OffChipAfterFwdNoOverlap]
    # a list of the choices singles none out
    assert candidates("AlwaysLive: 1.1 GiB\nOffChipAfterEachPhase: 0.5 GiB") == []


def test_the_lessons_answers_the_test_can_look_for_are_of_known_kinds():
    kinds = {graded.name: kind_of(graded.exercise) for lesson in LESSONS
             for graded in editions.exercises_of(notebook(lesson))}
    assert kinds["zero_fullest_rank"] is numbers.Number
    assert kinds["fitting_liveness"] is poptorch.Liveness
    assert kinds["two_ipus"] is None
