"""Each exercise's reference solution on its lesson page, folded under the exercise's check.

The stored notebooks are the learner's: an answer cell holds starting code, and the solution
lives in the exercise's module (`exercises.NAME.solution_code`, what `exercises.NAME.solution()`
shows in a kernel). A page without a kernel shows that code in a closed <details> after the
check cell, left out of the search index. Nothing is run: the page does not show what the
check says of the solution (the course's tests run every solution through its check).
"""
from __future__ import annotations

import ast
import re

import nbformat
from bs4 import BeautifulSoup, Tag
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer

from ipu_tutorials.course.editions import Graded, exercises_of

EXERCISE_HEADING = re.compile(r"^#+\s*Exercise\s+(\d+\.\d+)", re.M)
NUMBER = re.compile(r"\d[\d,]*\d")
SMALLEST_ANSWER_NUMBER = 100  # smaller numbers (IPU counts, 2N-1) are everywhere in a lesson


def exercise_number(nb: nbformat.NotebookNode, graded: Graded) -> str | None:
    """The exercise's number ("4.1") from the last exercise heading above its answer cell."""
    for cell in reversed(nb.cells[:graded.answer_cell]):
        found = EXERCISE_HEADING.findall(cell.source) if cell.cell_type == "markdown" else []
        if found:
            return found[-1]
    return None


def code_block(soup: BeautifulSoup, code: str) -> Tag:
    """Python code as Material shows a code block (its highlighting colours, a copy button)."""
    spans = highlight(code, PythonLexer(), HtmlFormatter(nowrap=True))
    block = BeautifulSoup(f'<div class="language-python highlight"><pre><span></span>'
                          f"<code>{spans}</code></pre></div>", "html.parser")
    return block.div.extract()


def fold(soup: BeautifulSoup, graded: Graded, number: str | None) -> Tag:
    """The closed fold that holds one exercise's solution, kept out of the search index."""
    details = soup.new_tag("details", attrs={"class": "ipu-solution", "data-search-exclude": ""})
    summary = soup.new_tag("summary")
    summary.string = (f"Solution to exercise {number}" if number else
                      f"Solution to “{graded.exercise.title}”") + " (try it yourself first)"
    how = BeautifulSoup(
        f"<p>Paste it into the answer cell above, run it, then run the check. In a notebook, "
        f"<code>exercises.{graded.name}.solution()</code> shows the same code. The course's "
        f"tests run it through this check and require it to pass.</p>", "html.parser")
    details.extend([summary, how.p.extract(), code_block(soup, graded.exercise.solution_code)])
    return details


def add_solutions(soup: BeautifulSoup, nb: nbformat.NotebookNode, outer_cell) -> int:
    """Fold each exercise's solution in after its check cell; returns how many were added.

    Raises:
        ValueError: a check cell is not on the page.
    """
    graded = exercises_of(nb)
    for exercise in graded:
        check = outer_cell(soup, exercise.check_id)
        if check is None:
            raise ValueError(f"the check cell of exercises.{exercise.name} is not on the page")
        check.insert_after(fold(soup, exercise, exercise_number(nb, exercise)))
    return len(graded)


def answer_words(code: str) -> set[str]:
    """What a solution's answer could be named by, for a caption to leave out: its strings,
    the enum members it names (`poptorch.Liveness.X` gives X) and its numbers of 100 or more
    (comments included: `# = 8000`)."""
    words = {n.replace(",", "") for n in NUMBER.findall(code)
             if int(n.replace(",", "")) >= SMALLEST_ANSWER_NUMBER}
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) > 2:
            words.add(node.value)
        elif (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute)
              and node.attr[:1].isupper()):
            words.add(node.attr)
    return words


def answers(nb: nbformat.NotebookNode) -> set[str]:
    """The answer words of every exercise of the lesson."""
    return {word for g in exercises_of(nb) for word in answer_words(g.exercise.solution_code)}
