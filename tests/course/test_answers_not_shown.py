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
import re

import pytest

from ipu_tutorials import poptorch
from ipu_tutorials.course import editions

from .stored import LESSONS, notebook

NUMBER = re.compile(r"(?<![\w.])-?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w.])")
ENUMS = [value for value in vars(poptorch).values()
         if isinstance(value, type) and issubclass(value, enum.Enum)]


def shown_text(cell) -> str:
    """What a code cell's outputs show a reader: their text, their HTML, a figure's alt text."""
    parts = []
    for output in cell.get("outputs", []):
        parts.append("".join(output.get("text", "")))
        for kind in ("text/plain", "text/html", "text/markdown"):
            parts.append("".join(output.get("data", {}).get(kind, "")))
        parts.append(str(output.get("metadata", {}).get("image/png", {}).get("alt", "")))
    return "\n".join(parts)


def candidates(text: str) -> list:
    """The values in a text that could be an exercise's answer: numbers of three significant
    digits or more, and the members of PopTorch's enums that it names."""
    found = []
    for token in NUMBER.findall(text):
        digits = token.replace(",", "").lstrip("-")
        significant = re.sub(r"[eE].*", "", digits).replace(".", "").lstrip("0")
        if len(significant) < 3 or ("," in token and not re.fullmatch(r"-?\d{1,3}(,\d{3})+", token)):
            continue
        value = float(digits) if re.search(r"[.eE]", digits) else int(digits)
        found.append(-value if token.startswith("-") else value)
    for kind in ENUMS:
        found += [member for member in kind if re.search(rf"\b{member.name}\b", text)]
    return list(dict.fromkeys(found))


def spoilers(lesson: str) -> list[str]:
    nb = notebook(lesson)
    found = []
    for graded in editions.exercises_of(nb):
        if graded.exercise.writes_code:
            continue
        above = "\n".join(shown_text(cell) for cell in nb.cells[:graded.answer_cell]
                          if cell.cell_type == "code")
        for value in candidates(above):
            if graded.exercise.check(value).correct:
                found.append(f"{graded.name}: {value!r} is shown above its answer cell")
    return found


@pytest.mark.parametrize("lesson", LESSONS)
def test_no_output_above_an_exercise_gives_its_answer(lesson):
    assert spoilers(lesson) == []


def test_a_number_and_an_enum_shown_above_are_found():
    text = "rank 0 holds 655,360 bytes; plan: Liveness.OffChipAfterFwdNoOverlap; 4 IPUs, 0.5 s"
    assert candidates(text) == [655360, poptorch.Liveness.OffChipAfterFwdNoOverlap]
