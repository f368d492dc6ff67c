"""Exercises that check themselves: check(answer) gives specific feedback; hint(); solution()."""
from __future__ import annotations

import ast
import dataclasses
import math
import numbers
from typing import Callable


@dataclasses.dataclass
class Feedback:
    """The result of a check; true when the answer is right. Shown as one line in a notebook."""

    correct: bool
    message: str

    def __bool__(self) -> bool:
        return self.correct

    def __repr__(self) -> str:
        return ("Correct! " if self.correct else "Not yet: ") + self.message

    __str__ = __repr__


def right(message: str) -> Feedback:
    return Feedback(True, message)


def wrong(message: str) -> Feedback:
    return Feedback(False, message)


class Text(str):
    """A hint or a solution: shown as plain text, not as a quoted string."""

    def __repr__(self) -> str:
        return str(self)


@dataclasses.dataclass(frozen=True)
class Mistake:
    """A typical wrong answer, written as a learner would type it, and a fragment of the
    specific feedback its check must give (the tests run every one)."""

    code: str
    feedback: str


class Exercise:
    """One question. `checker(answer)` returns Feedback; the solution stays hidden until asked.

    A check never raises: an answer the checker cannot handle (None, 0, a list, an object built
    with no arguments, a function that fails) is a "Not yet" naming what was expected.

    Args:
        title: the exercise's name, as the lesson's heading says it.
        checker: takes the learner's answer and returns Feedback.
        hint: one nudge, shown by hint().
        solution: reference code; its last line is the answer (see run_code).
        mistakes: typical wrong answers with the feedback each must get.
        writes_code: true when the answer is code the learner writes (a model annotation,
            options, a function, a fix), which the check runs through the simulator; false
            when it is a number or a choice.
        expects: what the answer is, as the "Not yet" for an answer of the wrong kind says it
            (e.g. "a number", "a poptorch.Options").
        starting_code: the exercise cell as the learner's copy holds it before any answer.
        skill: what the exercise trains, in a few words (the teacher's page lists it).
    """

    def __init__(self, title: str, checker: Callable[..., Feedback], hint: str, solution: str,
                 mistakes: tuple[Mistake, ...] = (), writes_code: bool = False,
                 expects: str = "your answer", starting_code: str = "", skill: str = ""):
        self.title, self._checker, self._hint, self._solution = title, checker, hint, solution
        self.mistakes, self.writes_code = tuple(mistakes), writes_code
        self.expects, self.starting_code, self.skill = expects, starting_code, skill

    def check(self, *answer, **named) -> Feedback:
        """The feedback on `answer`; never raises (Exception), whatever the answer is."""
        if answer and answer[0] is Ellipsis:
            return wrong("replace the `...` with your answer, then run the cell again.")
        try:
            feedback = self._checker(*answer, **named)
        except Exception as error:  # the learner's answer, or code it runs, broke the check
            return wrong(f"the check expected {self.expects}, got {_describe(answer, named)}; "
                         f"using it raised {type(error).__name__}: {_first_line(error)}")
        if not isinstance(feedback, Feedback):
            raise TypeError(f"the checker of {self.title!r} returned {feedback!r}, not Feedback")
        return feedback

    def hint(self) -> Text:
        return Text(f"Hint: {self._hint}")

    def solution(self) -> Text:
        return Text(f"Solution:\n{self._solution.strip()}")

    def run_solution(self, namespace: dict | None = None) -> Feedback:
        """Run the reference solution as a learner would paste it, and check its answer."""
        return self.run_code(self._solution, namespace)

    def run_code(self, code: str, namespace: dict | None = None) -> Feedback:
        """Run an answer written as a notebook cell, and check it.

        The answer is the value of the code's last line when it is an expression (a Feedback
        it returns is passed through), else the variable its last line assigns or defines.

        Args:
            code: the cell, e.g. the reference solution or a typical mistake.
            namespace: the names the lesson defined before the exercise (models, options...).
        Returns:
            The check's feedback on that answer.
        Raises:
            ValueError: the code's last line neither is an expression nor binds a name.
        """
        answer = self.answer_of(code, namespace)
        return answer if isinstance(answer, Feedback) else self.check(answer)

    def answer_of(self, code: str, namespace: dict | None = None):
        """The value a cell gives as its answer (see run_code), without checking it."""
        import torch

        from ... import poptorch

        names = {"poptorch": poptorch, "torch": torch, **(namespace or {})}
        tree = ast.parse(code.strip())
        last = tree.body[-1]
        if isinstance(last, ast.Expr):
            exec(compile(ast.Module(tree.body[:-1], []), "<answer>", "exec"), names)
            return eval(compile(ast.Expression(last.value), "<answer>", "eval"), names)
        exec(compile(tree, "<answer>", "exec"), names)
        return names[_bound_name(last, self.title)]

    def __repr__(self) -> str:
        return f"Exercise({self.title!r}): call .check(answer), .hint() or .solution()"


def _describe(answer: tuple, named: dict) -> str:
    """The answer as the learner gave it, in a few words: its type and a short repr."""
    values = list(answer) + list(named.values())
    if len(values) != 1:
        return f"{len(values)} values"
    text = repr(values[0])
    text = text if len(text) <= 60 else text[:57] + "..."
    return f"{type(values[0]).__name__} {text}"


def _first_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [""])[0][:200]


def _bound_name(statement: ast.stmt, title: str) -> str:
    """The name an assignment, function or class definition binds."""
    if isinstance(statement, (ast.FunctionDef, ast.ClassDef)):
        return statement.name
    target = getattr(statement, "targets", [getattr(statement, "target", None)])[0]
    if not isinstance(target, ast.Name):
        raise ValueError(f"the answer to {title!r} ends in neither an expression nor an "
                         f"assignment to a name")
    return target.id


def as_number(answer) -> float | int | None:
    """A real number given as int, float, a NumPy scalar or a one-element tensor; else None
    (bool and strings are not numbers here)."""
    if isinstance(answer, (bool, str, bytes)) or answer is None:
        return None
    if isinstance(answer, numbers.Integral):
        return int(answer)
    if isinstance(answer, numbers.Real):
        return float(answer)
    import torch

    if isinstance(answer, torch.Tensor) and answer.numel() == 1 \
            and (answer.dtype.is_floating_point or str(answer.dtype) in _INTEGER_DTYPES):
        return answer.item()
    return None


_INTEGER_DTYPES = ("torch.int8", "torch.int16", "torch.int32", "torch.int64", "torch.uint8")


def check_number(answer, expected: float, what: str, explain: str, tolerance: float = 0.0,
                 typical: dict[float, str] | None = None) -> Feedback:
    """Numeric answers: right within a relative tolerance; a typical wrong value (a key of
    `typical`, matched within the same tolerance) gets its own explanation; any other value is
    said to be too high or too low."""
    number = as_number(answer)
    if number is None:
        return wrong(f"{what} should be a number, got {type(answer).__name__} {answer!r}.")
    if not math.isfinite(number):
        return wrong(f"{what} should be a finite number, got {answer!r}.")
    answer = number
    if abs(answer - expected) <= tolerance * abs(expected):
        return right(explain)
    for value, mistake in (typical or {}).items():
        if abs(answer - value) <= max(tolerance * abs(value), 1e-12 * abs(value)):
            return wrong(f"{answer:,} for {what}: {mistake}")
    direction = "too high" if answer > expected else "too low"
    return wrong(f"{answer} is {direction} for {what}.")
