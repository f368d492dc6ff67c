"""Exercises that check themselves: check(answer) gives specific feedback; hint(); solution()."""
from __future__ import annotations

import ast
import dataclasses
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

    Args:
        title: the exercise's name, as the lesson's heading says it.
        checker: takes the learner's answer and returns Feedback.
        hint: one nudge, shown by hint().
        solution: reference code; its last line is the answer (see run_code).
        mistakes: typical wrong answers with the feedback each must get.
        writes_code: true when the answer is code the learner writes (a model annotation,
            options, a function, a fix), which the check runs through the simulator; false
            when it is a number or a choice.
    """

    def __init__(self, title: str, checker: Callable[..., Feedback], hint: str, solution: str,
                 mistakes: tuple[Mistake, ...] = (), writes_code: bool = False):
        self.title, self._checker, self._hint, self._solution = title, checker, hint, solution
        self.mistakes, self.writes_code = tuple(mistakes), writes_code

    def check(self, *answer, **named) -> Feedback:
        if answer and answer[0] is Ellipsis:
            return wrong("replace the `...` with your answer, then run the cell again.")
        return self._checker(*answer, **named)

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
        import torch

        from ... import poptorch

        names = {"poptorch": poptorch, "torch": torch, **(namespace or {})}
        tree = ast.parse(code.strip())
        last = tree.body[-1]
        if isinstance(last, ast.Expr):
            exec(compile(ast.Module(tree.body[:-1], []), "<answer>", "exec"), names)
            answer = eval(compile(ast.Expression(last.value), "<answer>", "eval"), names)
        else:
            exec(compile(tree, "<answer>", "exec"), names)
            answer = names[_bound_name(last, self.title)]
        return answer if isinstance(answer, Feedback) else self.check(answer)

    def __repr__(self) -> str:
        return f"Exercise({self.title!r}): call .check(answer), .hint() or .solution()"


def _bound_name(statement: ast.stmt, title: str) -> str:
    """The name an assignment, function or class definition binds."""
    if isinstance(statement, (ast.FunctionDef, ast.ClassDef)):
        return statement.name
    target = getattr(statement, "targets", [getattr(statement, "target", None)])[0]
    if not isinstance(target, ast.Name):
        raise ValueError(f"the answer to {title!r} ends in neither an expression nor an "
                         f"assignment to a name")
    return target.id


def check_number(answer, expected: float, what: str, explain: str, tolerance: float = 0.0,
                 typical: dict[float, str] | None = None) -> Feedback:
    """Numeric answers: right within a relative tolerance; a typical wrong value (a key of
    `typical`, matched within the same tolerance) gets its own explanation; any other value is
    said to be too high or too low."""
    if isinstance(answer, bool) or not isinstance(answer, (int, float)):
        return wrong(f"{what} should be a number, got {type(answer).__name__} {answer!r}.")
    if abs(answer - expected) <= tolerance * abs(expected):
        return right(explain)
    for value, mistake in (typical or {}).items():
        if abs(answer - value) <= max(tolerance * abs(value), 1e-12 * abs(value)):
            return wrong(f"{answer:,} for {what}: {mistake}")
    direction = "too high" if answer > expected else "too low"
    return wrong(f"{answer} is {direction} for {what}.")
