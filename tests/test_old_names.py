"""Modules that moved into a room (issue 37) keep the names lessons, PopTorch code, instructors
and the `poprun` command use: each old name is the moved module itself, not a copy, and
`python -m ipu_tutorials.poprun` still runs (the course's tools have one command, `ipu-course`)."""
import importlib
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "ipu_tutorials"

# old name -> where the module lives now
MOVED = {
    "ipu_tutorials.popdist": "ipu_tutorials.distributed.popdist",
    "ipu_tutorials.popdist.poptorch": "ipu_tutorials.distributed.popdist.poptorch",
    "ipu_tutorials.poprun": "ipu_tutorials.distributed.poprun",
    "ipu_tutorials.rendezvous": "ipu_tutorials.support.rendezvous",
    "ipu_tutorials.environment": "ipu_tutorials.support.environment",
    "ipu_tutorials.atomic_io": "ipu_tutorials.support.atomic_io",
    "ipu_tutorials.tutorial.published_runs": "ipu_tutorials.tutorial.calibration.published_runs",
    "ipu_tutorials.classroom.editions": "ipu_tutorials.course.editions",
    "ipu_tutorials.classroom.grading": "ipu_tutorials.course.grading",
    "ipu_tutorials.classroom.gradebook": "ipu_tutorials.course.gradebook",
    "ipu_tutorials.classroom.shown_code": "ipu_tutorials.course.shown_code",
    "ipu_tutorials.classroom.diagrams": "ipu_tutorials.course.diagrams",
}


@pytest.mark.parametrize("old", sorted(MOVED))
def test_the_old_name_is_the_moved_module(old):
    module = importlib.import_module(old)
    assert module is importlib.import_module(MOVED[old])
    assert module.__name__ == MOVED[old]


def test_every_module_left_at_an_old_name_is_listed_here():
    """A file that hands its name to a moved module (`sys.modules[__name__] = ...`) is in MOVED,
    and every old name in MOVED is such a file or a submodule one of them hands on."""
    files = {".".join(("ipu_tutorials", *p.relative_to(PACKAGE).with_suffix("").parts))
             for p in PACKAGE.rglob("*.py") if "sys.modules[__name__] = " in p.read_text()}
    assert files <= MOVED.keys()
    assert all(old in files or old.rsplit(".", 1)[0] in files for old in MOVED)


def test_popdist_is_one_module_whichever_name_imports_it_first():
    """PopTorch code imports `popdist.poptorch` before or without `popdist`; the instance's state
    must not split between two copies of the module."""
    code = ("import ipu_tutorials.popdist.poptorch as a, ipu_tutorials.distributed.popdist as b, "
            "ipu_tutorials.popdist as c; assert a is b.poptorch and b is c; print('one')")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.stdout.strip() == "one", result.stderr


def test_lesson_11_reads_the_variables_table_under_the_old_name():
    from ipu_tutorials import environment
    assert "| POPTORCH_LOG_LEVEL |" in environment.__doc__


def test_python_m_runs_poprun_under_its_old_name():
    result = subprocess.run([sys.executable, "-m", "ipu_tutorials.poprun", "--num-instances", "0",
                             "python", "-c", "pass"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1].startswith("poprun: error:"), result.stderr
