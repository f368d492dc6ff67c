"""A class on the hub, end to end, in Chromium: the instructor releases two lessons; three
learners log in, fetch them from nbgrader's Assignments tab, answer lesson 3 (each one exercise
right, one wrong, one untouched), run it and submit it there; the instructor collects,
autogrades and releases feedback with nbgrader; each learner fetches the feedback in the tab and
sees their score. nbgrader's scores equal `ipu-course grade`'s on the same submissions, and no
learner reads another's work or the instructor's source edition.
"""
from __future__ import annotations

import csv
import glob
import json
import os
import re
import sys

import pytest

from tests.browser.pages import lab_command, run_all_cells

from .hub import running_hub

LESSONS = ["02_efficient_data_loading", "03_blocks_and_stages"]
LESSON = LESSONS[1]
S = "poptorch.Stage"
RIGHT = {"two_ipus": f'my_strategy = poptorch.PipelinedExecution(\n    {S}("B1", "B2").ipu(0), '
                     f'{S}("B3", "B4").ipu(1))',
         "move_a_block": f'my_strategy = poptorch.PipelinedExecution({S}("A").ipu(0), '
                         f'{S}("B", "C").ipu(1))',
         "ipus_reserved": "my_ipu_count = 2 * 4"}
WRONG = {"two_ipus": f'my_strategy = poptorch.PipelinedExecution({S}("B1", "B2", "B3", "B4").ipu(0))',
         "move_a_block": "my_strategy = poptorch.PipelinedExecution(poptorch.AutoStage.AutoIncrement)",
         "ipus_reserved": "my_ipu_count = 6"}
POINTS = {"two_ipus": 2, "move_a_block": 2, "ipus_reserved": 1}
# Each learner: (the exercise answered right, the one answered wrong); the third is untouched.
PLANS = [("two_ipus", "move_a_block"), ("move_a_block", "ipus_reserved"),
         ("ipus_reserved", "two_ipus")]
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
LAB_SETTINGS = {"apputils-extension/notification": {"fetchNews": "false", "checkForUpdates": False},
                "notebook-extension/tracker": {"windowingMode": "none",
                                               "autoStartDefaultKernel": True}}


def chromium() -> str:
    path = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    if not os.access(path, os.X_OK):
        pytest.skip("the round trip needs Chromium: apt-get install -y chromium")
    return path


def answers_for(plan: tuple[str, str]) -> dict[str, str]:
    right, wrong = plan
    return {f"{right}-answer": RIGHT[right], f"{wrong}-answer": WRONG[wrong]}


def quiet_lab(hub, user: str) -> None:
    """No news pop-up over the page and the notebook's kernel started without asking, in the
    learner's own JupyterLab settings (written as the learner)."""
    for name, values in LAB_SETTINGS.items():
        path = f"~/.jupyter/lab/user-settings/@jupyterlab/{name}.jupyterlab-settings"
        hub.run_as(user, [sys.executable, "-c", "import json, os, sys; p = os.path.expanduser("
                          "sys.argv[1]); os.makedirs(os.path.dirname(p), exist_ok=True); "
                          "open(p, 'w').write(sys.argv[2])", path, json.dumps(values)])


def log_in(context, hub, user: str):
    page = context.new_page()
    page.set_default_timeout(120_000)
    page.goto(f"{hub.url}/hub/login")
    page.fill("#username_input", user)
    page.fill("#password_input", hub.passwords[user])
    page.click("#login_submit")
    page.wait_for_url(f"**/user/{user}/lab**", timeout=300_000)
    page.wait_for_function("() => window.jupyterapp && window.jupyterapp.started")
    return page


def assignments_tab(page):
    lab_command(page, "nbgrader:open-assignment-list")
    page.locator("#assignments").wait_for()
    page.click("#refresh_assignments_list")
    return page.locator("#assignments")


def click_in_row(tab, listing: str, lesson: str, button: str) -> None:
    row = tab.locator(f"#{listing} .list_item", has_text=lesson).first
    row.locator("button", has_text=re.compile(f"^{button}$")).click()


def answer_and_run(page, user: str, lesson: str, answers: dict[str, str]) -> None:
    """Open the fetched lesson, write the answers into their cells, run every cell, save."""
    page.evaluate("path => window.jupyterapp.commands.execute('docmanager:open', {path})",
                  f"{lesson}/{lesson}.ipynb")
    page.wait_for_function("() => { const w = window.jupyterapp.shell.currentWidget;"
                           " return w && w.content && w.content.model && w.content.widgets.length; }")
    written = page.evaluate("""answers => {
        const cells = window.jupyterapp.shell.currentWidget.content.model.cells; let n = 0;
        for (let i = 0; i < cells.length; i++) {
          const cell = cells.get(i), meta = cell.getMetadata('nbgrader');
          if (meta && answers[meta.grade_id] !== undefined) {
            cell.sharedModel.setSource(answers[meta.grade_id]); n++; } }
        return n; }""", answers)
    assert written == len(answers), f"{user}: wrote {written} of {len(answers)} answers"
    run_all_cells(page)
    lab_command(page, "docmanager:save")


def scores_by_nbgrader(hub) -> dict[str, float]:
    hub.nbgrader(hub.instructor, "export", cwd=hub.course)
    with open(os.path.join(hub.course, "grades.csv"), newline="") as f:
        return {row["student_id"]: float(row["score"]) for row in csv.DictReader(f)
                if row["assignment"] == LESSON}


def scores_by_the_project(hub) -> dict[str, int]:
    hub.run_as(hub.instructor, [sys.executable, "-m", "ipu_tutorials.course", "grade",
                                "submitted"], cwd=hub.course, seconds=1800)
    with open(os.path.join(hub.course, "grades", "gradebook.csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    return {learner: sum(int(r["points"]) for r in rows if r["learner"] == learner)
            for learner in {r["learner"] for r in rows}}


@pytest.fixture(scope="module")
def class_run():
    """The whole class, run once; yields the hub and what each step left."""
    from playwright.sync_api import sync_playwright

    path = chromium()
    with running_hub(3, LESSONS) as hub, sync_playwright() as playwright:
        for lesson in LESSONS:
            hub.nbgrader(hub.instructor, "generate_assignment", lesson, cwd=hub.course)
            hub.nbgrader(hub.instructor, "release_assignment", lesson, cwd=hub.course)
        browser = playwright.chromium.launch(executable_path=path, headless=True, args=FLAGS)
        pages, seen = {}, {}
        try:
            for user, plan in zip(hub.learners, PLANS):
                quiet_lab(hub, user)
                page = pages[user] = log_in(browser.new_context(viewport={"width": 1400,
                                                                          "height": 1000}), hub, user)
                tab = assignments_tab(page)
                for lesson in LESSONS:
                    click_in_row(tab, "released_assignments_list", lesson, "Fetch")
                    tab.locator("#fetched_assignments_list .list_item", has_text=lesson).first.wait_for()
                answer_and_run(page, user, LESSON, answers_for(plan))
                tab = assignments_tab(page)
                click_in_row(tab, "fetched_assignments_list", LESSON, "Submit")
                tab.locator("#submitted_assignments_list .list_item", has_text=LESSON).first.wait_for()
            hub.nbgrader(hub.instructor, "collect", LESSON, cwd=hub.course)
            hub.nbgrader(hub.instructor, "autograde", LESSON, cwd=hub.course, seconds=1800)
            hub.nbgrader(hub.instructor, "generate_feedback", LESSON, cwd=hub.course)
            hub.nbgrader(hub.instructor, "release_feedback", LESSON, cwd=hub.course)
            for user, page in pages.items():
                tab = assignments_tab(page)
                click_in_row(tab, "submitted_assignments_list", LESSON, "Fetch Feedback")
                home = os.path.expanduser(f"~{user}")
                feedback = wait_for_file(os.path.join(home, LESSON, "feedback", "*", f"{LESSON}.html"))
                page.goto(f"{hub.url}/user/{user}/files/{os.path.relpath(feedback, home)}")
                seen[user] = page.locator("body").inner_text()
            seen["isolation"] = isolation(hub, pages)
            yield hub, seen, scores_by_nbgrader(hub), scores_by_the_project(hub)
        finally:
            browser.close()


def wait_for_file(pattern: str, seconds: float = 120) -> str:
    import time
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if found := glob.glob(pattern):
            return found[0]
        time.sleep(0.5)
    raise AssertionError(f"no {pattern} after {seconds} s")


def isolation(hub, pages) -> dict:
    """What the second learner gets when reaching for the first's work and the instructor's."""
    first, second = hub.learners[:2]
    inbound = os.path.join(hub.root, "exchange", "ipu-course", "inbound")
    targets = {"first's home": os.path.join(os.path.expanduser(f"~{first}"), LESSON),
               "inbound": inbound,
               "source edition": os.path.join(hub.course, "source", LESSON),
               "submitted": os.path.join(hub.course, "submitted")}
    probe = ("import os, sys\ntry:\n    os.listdir(sys.argv[1]); print('read')\nexcept "
             "PermissionError:\n    print('refused')")
    found = {name: hub.run_as(second, [sys.executable, "-c", probe, path]).stdout.strip()
             for name, path in targets.items()}
    reply = pages[second].goto(f"{hub.url}/user/{first}/api/contents/{LESSON}")
    found["first's server"] = reply.status
    return found


def expected_score(plan: tuple[str, str]) -> int:
    return POINTS[plan[0]]


def test_each_learner_sees_their_score_in_the_feedback(class_run):
    hub, seen, _, _ = class_run
    for user, plan in zip(hub.learners, PLANS):
        score = f"Score: {float(expected_score(plan))} / {float(sum(POINTS.values()))}"
        assert f"{LESSON} ({score})" in seen[user], seen[user][:500]


def test_nbgrader_and_the_projects_grader_agree(class_run):
    hub, _, by_nbgrader, by_project = class_run
    expected = {user: expected_score(plan) for user, plan in zip(hub.learners, PLANS)}
    assert by_nbgrader == {user: float(score) for user, score in expected.items()}
    assert by_project == expected


def test_no_learner_reads_another_or_the_instructors_edition(class_run):
    seen = class_run[1]["isolation"]
    assert seen == {"first's home": "refused", "inbound": "refused", "source edition": "refused",
                    "submitted": "refused", "first's server": 403}


def test_learners_have_no_formgrader(class_run):
    hub = class_run[0]
    hub.start_server(hub.instructor)
    reply = hub.request("GET", f"/user/{hub.instructor}/formgrader")
    assert b"formgrader" in reply.lower()
    with pytest.raises(Exception, match="404"):
        hub.request("GET", f"/user/{hub.learners[0]}/formgrader")
