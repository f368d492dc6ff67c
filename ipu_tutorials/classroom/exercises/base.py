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


class Exercise:
    """One question. `checker(answer)` returns Feedback; the solution stays hidden until asked."""

    def __init__(self, title: str, checker: Callable[..., Feedback], hint: str, solution: str):
        self.title, self._checker, self._hint, self._solution = title, checker, hint, solution

    def check(self, *answer, **named) -> Feedback:
        if answer and answer[0] is Ellipsis:
            return wrong("replace the `...` with your answer, then run the cell again.")
        return self._checker(*answer, **named)

    def hint(self) -> Text:
        return Text(f"Hint: {self._hint}")

    def solution(self) -> Text:
        return Text(f"Solution:\n{self._solution.strip()}")

    def run_solution(self, namespace: dict | None = None) -> Feedback:
        """Run the reference solution as a learner would paste it, and check its answer.

        The answer is the value of the solution's last line when it is an expression (a
        Feedback it returns is passed through), else the variable its last line assigns.

        Args:
            namespace: the names the lesson defined before the exercise (models, options...).
        Returns:
            The check's feedback on the reference answer.
        """
        import torch

        from ... import poptorch

        names = {"poptorch": poptorch, "torch": torch, **(namespace or {})}
        tree = ast.parse(self._solution.strip())
        last = tree.body[-1]
        if isinstance(last, ast.Expr):
            exec(compile(ast.Module(tree.body[:-1], []), "<solution>", "exec"), names)
            answer = eval(compile(ast.Expression(last.value), "<solution>", "eval"), names)
        else:
            exec(compile(tree, "<solution>", "exec"), names)
            target = getattr(last, "targets", [getattr(last, "target", None)])[0]
            if not isinstance(target, ast.Name):
                raise ValueError(f"the solution of {self.title!r} ends in neither an "
                                 f"expression nor an assignment to a name")
            answer = names[target.id]
        return answer if isinstance(answer, Feedback) else self.check(answer)

    def __repr__(self) -> str:
        return f"Exercise({self.title!r}): call .check(answer), .hint() or .solution()"


def check_number(answer, expected: float, what: str, explain: str, tolerance: float = 0.0) -> Feedback:
    """Numeric answers: right within a relative tolerance, else say whether it is high or low."""
    if isinstance(answer, bool) or not isinstance(answer, (int, float)):
        return wrong(f"{what} should be a number, got {type(answer).__name__} {answer!r}.")
    if abs(answer - expected) <= tolerance * abs(expected):
        return right(explain)
    direction = "too high" if answer > expected else "too low"
    return wrong(f"{answer} is {direction} for {what}.")
