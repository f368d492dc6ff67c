"""The HTML summary of a graded class: a bar per exercise, each learner's scores and feedback."""
from __future__ import annotations

import html
from collections import defaultdict

from ..support.atomic_io import atomic_open

STYLE = """
body { font-family: sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin-bottom: 2em; }
td, th { border: 1px solid #ccc; padding: 4px 8px; vertical-align: top; text-align: left; }
.bar { background: #eee; width: 240px; height: 14px; }
.bar div { background: #2e7d32; height: 14px; }
.right { background: #e8f5e9; } .wrong { background: #ffebee; }
small { color: #555; }
"""


def _exercises(scores) -> list[tuple[str, str, str]]:
    """(lesson, grade_id, title) of every exercise graded, in lesson order."""
    return sorted({(s.lesson, s.exercise, s.title) for s in scores})


def exercise_bars(scores) -> str:
    """One row per exercise: the share of learners who got it right, as a bar."""
    rows = []
    for lesson, exercise, title in _exercises(scores):
        mine = [s for s in scores if (s.lesson, s.exercise) == (lesson, exercise)]
        right = sum(1 for s in mine if s.points == s.max_points)
        share = right / len(mine)
        rows.append(f"<tr><td>{html.escape(lesson)}</td><td>{html.escape(title)}</td>"
                    f"<td><div class='bar'><div style='width:{share:.0%}'></div></div></td>"
                    f"<td>{right} of {len(mine)}</td></tr>")
    return ("<table><tr><th>Lesson</th><th>Exercise</th><th>Right</th><th>Learners</th></tr>"
            + "".join(rows) + "</table>")


def learner_table(scores) -> str:
    """One row per learner: total, then each exercise's points with the feedback seen."""
    exercises = _exercises(scores)
    by_learner = defaultdict(dict)
    for s in scores:
        by_learner[s.learner][(s.lesson, s.exercise)] = s
    head = "".join(f"<th>{html.escape(title)}<br><small>{html.escape(lesson)}</small></th>"
                   for lesson, _, title in exercises)
    rows = []
    for learner in sorted(by_learner):
        mine = by_learner[learner]
        total = sum(s.points for s in mine.values())
        most = sum(s.max_points for s in mine.values())
        cells = "".join(_cell(mine.get((lesson, exercise))) for lesson, exercise, _ in exercises)
        rows.append(f"<tr><td>{html.escape(learner)}</td><td>{total} / {most}</td>{cells}</tr>")
    return (f"<table><tr><th>Learner</th><th>Total</th>{head}</tr>" + "".join(rows)
            + "</table>")


def _cell(score) -> str:
    if score is None:
        return "<td><small>not submitted</small></td>"
    kind = "right" if score.points == score.max_points else "wrong"
    return (f"<td class='{kind}'>{score.points} / {score.max_points}<br>"
            f"<small>{html.escape(score.feedback)}</small></td>")


def write_summary(scores, path: str) -> None:
    """Write the summary page (self-contained: no script, no network)."""
    page = (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>Gradebook</title>"
            f"<style>{STYLE}</style></head><body><h1>Gradebook</h1>"
            f"<h2>Exercises</h2>{exercise_bars(scores)}"
            f"<h2>Learners</h2>{learner_table(scores)}</body></html>")
    with atomic_open(path) as f:  # an ordinary file mode, unlike mkstemp's 0600
        f.write(page)
