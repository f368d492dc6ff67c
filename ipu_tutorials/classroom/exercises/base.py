"""Exercises that check themselves: check(answer) gives specific feedback; hint(); solution()."""
from __future__ import annotations

import ast
import contextlib
import dataclasses
import html
import logging
import math
import numbers
import os
import re
import sys
import textwrap
import warnings
from typing import Callable, Iterator

# Set by nbgrader while it autogrades or validates a notebook (its documented way for a
# notebook to tell): a "Not yet" then goes to stderr, which nbgrader scores as a failed test.
GRADING = "NBGRADER_EXECUTION"


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

    def _ipython_display_(self) -> None:
        # Display data, never an execute result: nbgrader would try to read an execute
        # result's text as a partial score (and warn that it cannot). HTML, because JupyterLab
        # breaks plain-text output anywhere, even mid-word.
        if not self.correct and os.environ.get(GRADING):
            print(textwrap.fill(repr(self), 100), file=sys.stderr)
            return
        from IPython.display import display

        verdict = "Correct!" if self.correct else "Not yet:"
        display({"text/plain": repr(self),
                 "text/html": f"<p><b>{verdict}</b> {_html(self.message)}</p>"}, raw=True)


def is_verdict(text: str) -> bool:
    """Whether a check's output (a notebook's, a grader's, a page's text) is its verdict, a
    Feedback's "Correct! ..." or "Not yet: ...", rather than something printed before it (a
    check that trains prints its compilation bar first)."""
    return text.startswith(("Correct", "Not yet"))


def right(message: str) -> Feedback:
    return Feedback(True, message)


def wrong(message: str) -> Feedback:
    return Feedback(False, message)


class Text(str):
    """A hint or a solution: "Heading: body" as plain text, not as a quoted string; in a
    notebook, prose wraps between words and code shows as code."""

    def __new__(cls, heading: str, body: str = "", code: bool = False):
        text = super().__new__(cls, f"{heading}:{chr(10) if code else ' '}{body}")
        text.heading, text.body, text.code = heading, body, code
        return text

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        if self.code:
            return f"<p><b>{self.heading}:</b></p><pre>{html.escape(self.body)}</pre>"
        return f"<p><b>{self.heading}:</b> {_html(self.body)}</p>"


def _html(text: str) -> str:
    """Plain feedback as HTML: escaped, `code` as code, line breaks kept."""
    escaped = html.escape(text, quote=False)
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", escaped).replace("\n", "<br>")


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
        solution: the reference answer cell, as the instructor edition holds it: it binds the
            names the lesson's check cell passes (its last line is the answer, see run_code).
        mistakes: typical wrong answers with the feedback each must get.
        writes_code: true when the answer is code the learner writes (a model annotation,
            options, a function, a fix), which the check runs through the simulator; false
            when it is a number or a choice.
        expects: what the answer is, as the "Not yet" for an answer of the wrong kind says it
            (e.g. "a number", "a poptorch.Options").
        starting_code: the answer cell as the learner's notebook holds it before any answer;
            by default `name = ...  # your answer` for each name the solution's last line binds.
        skill: what the exercise trains, in a few words (the teacher's page lists it).
    """

    def __init__(self, title: str, checker: Callable[..., Feedback], hint: str, solution: str,
                 mistakes: tuple[Mistake, ...] = (), writes_code: bool = False,
                 expects: str = "your answer", starting_code: str = "", skill: str = ""):
        self.title, self._checker, self._hint = title, checker, hint
        self.solution_code = textwrap.dedent(solution).strip("\n")
        self.mistakes, self.writes_code = tuple(mistakes), writes_code
        self.starting_code = textwrap.dedent(starting_code).strip("\n") or "".join(
            f"{name} = ...  # your answer\n" for name in answer_names(self.solution_code)).rstrip()
        self.expects, self.skill = expects, skill

    def check(self, *answer, **named) -> Feedback:
        """The feedback on `answer`; never raises (Exception), whatever the answer is."""
        if any(value is Ellipsis for value in (*answer, *named.values())):
            return wrong("replace the `...` in the answer cell above with your answer, run "
                         "that cell, then run this check again.")
        with _warnings_caught() as warned:
            try:
                feedback = self._checker(*answer, **named)
            except Exception as error:  # the learner's answer, or code it runs, broke the check
                return wrong(f"the check expected {self.expects}, got {_describe(answer, named)}; "
                             f"using it raised {type(error).__name__}: {_first_line(error)}")
        if not isinstance(feedback, Feedback):
            raise TypeError(f"the checker of {self.title!r} returned {feedback!r}, not Feedback")
        if feedback.correct and warned:
            # A warning is the simulator or PopTorch saying the answer leans on something real
            # hardware would not do (a phased stage with no IPU named, a default filled in).
            said = warned[0].rstrip(".")
            return wrong(f"the check passes, but running your answer warned: {said}. A right "
                         f"answer runs without warnings.")
        return feedback

    def hint(self) -> Text:
        return Text("Hint", self._hint)

    def solution(self) -> Text:
        return Text("Solution", self.solution_code, code=True)

    def run_solution(self, namespace: dict | None = None) -> Feedback:
        """Run the reference solution as a learner would paste it, and check its answer."""
        return self.run_code(self.solution_code, namespace)

    def run_code(self, code: str, namespace: dict | None = None) -> Feedback:
        """Run an answer written as a notebook cell, and check it.

        The answer is the value of the code's last line when it is an expression (a Feedback
        it returns is passed through), else the variable its last line assigns or defines
        (several variables, `a, b = ...`, are passed to the check in order).

        Args:
            code: the cell, e.g. the reference solution or a typical mistake.
            namespace: the names the lesson defined before the exercise (models, options...).
        Returns:
            The check's feedback on that answer.
        Raises:
            ValueError: the code's last line neither is an expression nor binds a name.
        """
        answer = self.answer_of(code, namespace)
        if isinstance(answer, _Several):
            return self.check(*answer)
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
        bound = answer_names(code)
        if not bound:
            raise ValueError(f"the answer to {self.title!r} ends in neither an expression nor "
                             f"an assignment to a name")
        return names[bound[0]] if len(bound) == 1 else _Several(names[n] for n in bound)

    def __repr__(self) -> str:
        return f"Exercise({self.title!r}): call .check(answer), .hint() or .solution()"


@contextlib.contextmanager
def _warnings_caught() -> Iterator[list[str]]:
    """The warnings raised and the warnings logged (PopTorch's "poptorch" logger) while the block
    runs, one line each; neither is shown: the feedback says them."""
    caught: list[str] = []

    class Catch(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            caught.append(record.getMessage())

    logger = logging.getLogger("poptorch")
    kept = logger.handlers[:], logger.propagate
    logger.handlers, logger.propagate = [Catch(logging.WARNING)], False
    try:
        with warnings.catch_warnings(record=True) as raised:
            warnings.simplefilter("always")
            yield caught
            caught += [str(w.message) for w in raised]
    finally:
        logger.handlers, logger.propagate = kept


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


class _Several(tuple):
    """The values of an answer whose last line binds several names (`a, b = ...`)."""


def answer_names(code: str) -> list[str]:
    """The names an answer cell's last line binds (an assignment, a def or a class), or the
    name it ends with (`my_options`); [] when it ends otherwise."""
    last = ast.parse(textwrap.dedent(code).strip()).body[-1]
    if isinstance(last, (ast.FunctionDef, ast.ClassDef)):
        return [last.name]
    if isinstance(last, ast.Expr):
        return [last.value.id] if isinstance(last.value, ast.Name) else []
    if isinstance(last, ast.Assign):
        target = last.targets[0]
    elif isinstance(last, (ast.AnnAssign, ast.AugAssign)):
        target = last.target
    else:
        return []
    elements = target.elts if isinstance(target, ast.Tuple) else [target]
    return [t.id for t in elements if isinstance(t, ast.Name)]


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

    if (isinstance(answer, torch.Tensor) and answer.numel() == 1
            and (answer.dtype.is_floating_point or str(answer.dtype) in _INTEGER_DTYPES)):
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
        return wrong(f"the answer should be a number, got {type(answer).__name__} {answer!r}.")
    if not math.isfinite(number):
        return wrong(f"the answer should be a finite number, got {answer!r}.")
    answer = number
    if abs(answer - expected) <= tolerance * abs(expected):
        return right(explain)
    for value, mistake in (typical or {}).items():
        if abs(answer - value) <= max(tolerance * abs(value), 1e-12 * abs(value)):
            return wrong(f"{answer:,} for {what}: {mistake}")
    direction = "too high" if answer > expected else "too low"
    return wrong(f"{answer} is {direction} for {what}.")
