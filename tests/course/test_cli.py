"""`ipu-course`: each subcommand reaches its tool with its arguments (`build` the default), a
checkout lacking what a command needs is one line and exit code 2, `--help` needs none of the
notebooks extra, a mistyped command is named, and the command works from an installed wheel
run outside any checkout. No lesson runs here."""
import os
import shutil
import subprocess
import sys
import zipfile

import nbformat
import pytest

from ipu_tutorials.course import cli
from ipu_tutorials.course.checkout import Checkout
from ipu_tutorials.course.lessons import study_minutes

from .stored import CHECKOUT

ROOT = CHECKOUT.root
HERE = Checkout(".")


@pytest.mark.parametrize("argv, function, arguments", [
    (["build", "04", "05"], "build", (HERE, ["04", "05"], False)),
    (["build", "--check", "--root", ROOT], "build", (CHECKOUT, [], True)),
    ([], "build", (HERE, [], False)),
    (["04"], "build", (HERE, ["04"], False)),
    (["--check", "04", "--root", ROOT], "build", (CHECKOUT, ["04"], True)),
    (["editions", "04", "--out", "course"], "editions", (HERE, ["04"], "course")),
    (["editions"], "editions", (HERE, [], None)),
    (["html", "pages", "04"], "html", (HERE, "pages", ["04"])),
    (["times", "01"], "times", (HERE, ["01"])),
    (["diagrams", "--root", ROOT], "diagrams", (CHECKOUT,)),
    (["pages"], "pages", (HERE, False)),
    (["pages", "--check", "--root", ROOT], "pages", (CHECKOUT, True)),
    (["grade", "sub", "--course", "c", "--out", "o", "--cell-timeout", "5", "--timeout", "9"],
     "grade", ("sub", "c", "o", 5, 9)),
    (["grade", "sub"], "grade", ("sub", None, None, None, None)),
], ids=lambda value: " ".join(value) or "(none)" if isinstance(value, list) else None)
def test_each_subcommand_reaches_its_function_with_its_arguments(monkeypatch, argv, function,
                                                                 arguments):
    calls = []
    monkeypatch.setattr(cli, function, lambda *args: calls.append(args) or 0)
    assert cli.main(argv) == 0
    assert calls == [arguments]


def test_check_and_times_run_on_the_stored_lessons(capsys):
    assert cli.main(["--check", "01", "--root", ROOT]) == 0
    assert cli.main(["times", "01", "--root", ROOT]) == 0
    path = os.path.join(CHECKOUT.walkthroughs, "01_poptorch_basics.py")
    assert (capsys.readouterr().out ==
            f"1. PopTorch basics: porting a model: {study_minutes(path)} min\n")


def test_editions_and_html_write_what_they_name(tmp_path, capsys):
    assert cli.main(["editions", "01", "--root", ROOT, "--out", str(tmp_path / "course")]) == 0
    assert capsys.readouterr().out.startswith(
        f"1 lessons: instructor editions in {tmp_path / 'course' / 'source'}, ")
    assert (tmp_path / "course" / "release" / "01_poptorch_basics" /
            "01_poptorch_basics.ipynb").is_file()
    assert cli.main(["html", str(tmp_path / "pages"), "01", "--root", ROOT]) == 0
    assert capsys.readouterr().out == f"{tmp_path / 'pages' / '01_poptorch_basics.html'}\n"


@pytest.mark.parametrize("argv, missing", [
    (["--check"], "walkthroughs/"), (["build"], "walkthroughs/"), (["times"], "walkthroughs/"),
    (["editions"], "notebooks/"), (["html", "pages"], "notebooks/"), (["diagrams"], "static/"),
    (["pages"], "docs/architecture.md"), (["pages", "--check"], "docs/architecture.md"),
])
def test_a_root_without_what_the_command_needs_is_one_line(tmp_path, capsys, argv, missing):
    assert cli.main([*argv, "--root", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (f"ipu-course: no {missing} in {tmp_path}: run it in a "
                                       f"checkout of the course or pass --root DIR\n")


def test_an_unknown_lesson_or_a_submissions_folder_outside_a_course_is_one_line(tmp_path, capsys):
    assert cli.main(["build", "--check", "99", "--root", ROOT]) == 2
    assert capsys.readouterr().err.startswith("ipu-course: no walkthrough named 99; known: 01_")
    assert cli.main(["editions", "99", "--root", ROOT]) == 2
    assert capsys.readouterr().err.startswith("ipu-course: no stored notebook named 99; known: ")
    (tmp_path / "submitted").mkdir()
    assert cli.main(["grade", str(tmp_path / "submitted")]) == 2
    assert capsys.readouterr().err == (
        f"ipu-course: {tmp_path} is not a course directory (no source/ in it): write one with "
        f"ipu-course editions --out DIR, or pass --course DIR\n")


def test_a_time_limit_is_a_whole_number_of_seconds(capsys):
    with pytest.raises(SystemExit) as done:
        cli.main(["grade", "sub", "--timeout", "-5"])
    assert done.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "ipu-course grade: error: argument --timeout: '-5' is not a whole number of seconds "
        "(1 or more)")


def test_a_mistyped_command_is_named_not_built(capsys):
    with pytest.raises(SystemExit) as done:
        cli.main(["edition", "04"])
    assert done.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "ipu-course: error: no command 'edition'; did you mean 'editions'? (commands: build, "
        "editions, html, times, diagrams, pages, grade)")


def python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)


def test_a_reader_that_stops_early_ends_the_command_quietly(monkeypatch, tmp_path, capsys):
    # was wrong: `ipu-course times | head -3` ended in a BrokenPipeError traceback
    def closed_pipe(*_):
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(cli, "times", closed_pipe)
    with open(tmp_path / "stdout", "w") as stdout:
        monkeypatch.setattr(sys, "stdout", stdout)
        assert cli.main(["times", "--root", str(CHECKOUT.root)]) == 0
    assert capsys.readouterr().err == ""


def test_help_imports_none_of_the_notebooks_extra():
    result = python("import sys\nfrom ipu_tutorials.course import cli\n"
                    "try:\n    cli.main(['--help'])\nexcept SystemExit as done:\n"
                    "    assert done.code == 0\n"
                    "print(sorted(m for m in cli.NOTEBOOK_PACKAGES if m in sys.modules))")
    assert result.stdout.splitlines()[-1] == "[]", result.stderr
    for command in ("build", "editions", "html", "times", "diagrams", "pages", "grade"):
        assert command in result.stdout


@pytest.mark.parametrize("package, command, says", [
    ("nbformat", ["editions"], "ipu-course editions: nbformat is missing, which the notebooks "
                               "extra installs: pip install \"ipu-tutorials[notebooks]\"\n"),
    ("grimp", ["pages", "--check"], "ipu-course pages: grimp is missing, which the test extra "
                                    "installs: pip install -e \".[test]\"\n"),
], ids=["notebooks extra", "test extra"])
def test_a_missing_extra_is_named_in_one_line(package, command, says):
    result = python(f"import sys\nsys.modules[{package!r}] = None  # as if not installed\n"
                    f"from ipu_tutorials.course import cli\nsys.exit(cli.main({command!r}))")
    assert result.returncode == 2
    assert result.stderr == says


# --- from an installed wheel ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The package built into a wheel (from a copy of what the wheel is made of, so the checkout
    gets no build/ folder) and installed into a folder of its own: (wheel, that folder)."""
    tmp = tmp_path_factory.mktemp("wheel")
    shutil.copytree(os.path.join(ROOT, "ipu_tutorials"), tmp / "src" / "ipu_tutorials",
                    ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(os.path.join(ROOT, name), tmp / "src")
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "wheel", str(tmp / "src"), "--no-deps", "--no-build-isolation",
                    "--no-index", "-w", str(tmp / "dist")], check=True, timeout=300)
    (wheel,) = (tmp / "dist").iterdir()
    subprocess.run([*pip, "install", "--no-deps", "--no-index", "--target", str(tmp / "site"),
                    str(wheel)], check=True, timeout=300)
    return wheel, tmp / "site"


def from_the_wheel(site, *args: str, cwd) -> subprocess.CompletedProcess:
    """Run in `cwd` with only the installed wheel's package importable as ipu_tutorials (-P:
    the current folder is not put on the path; PYTHONPATH: the wheel's folder, not this checkout)."""
    env = {**os.environ, "PYTHONPATH": str(site)}
    return subprocess.run([sys.executable, "-P", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


def test_the_wheel_names_the_console_script(installed):
    wheel, _ = installed
    with zipfile.ZipFile(wheel) as archive:
        entry_points = next(archive.read(n).decode() for n in archive.namelist()
                            if n.endswith(".dist-info/entry_points.txt"))
    assert "ipu-course = ipu_tutorials.course.cli:main" in entry_points


def test_the_installed_command_writes_a_checkouts_editions_from_outside_it(installed, tmp_path):
    _, site = installed
    found = from_the_wheel(site, "-c", "import importlib.util as u; "
                                       "print(u.find_spec('ipu_tutorials').origin)", cwd=tmp_path)
    assert found.stdout.strip() == str(site / "ipu_tutorials" / "__init__.py"), found.stderr
    done = from_the_wheel(site, "-m", "ipu_tutorials.course", "editions", "01", "--root", ROOT,
                          "--out", str(tmp_path / "out"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    nbformat.validate(nbformat.read(tmp_path / "out" / "source" / "01_poptorch_basics" /
                                    "01_poptorch_basics.ipynb", as_version=4))
    assert (tmp_path / "out" / "nbgrader_config.py").is_file()


def test_the_installed_command_outside_a_checkout_says_so_in_one_line(installed, tmp_path):
    _, site = installed
    done = subprocess.run([str(site / "bin" / "ipu-course"), "editions"], cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(site)}, capture_output=True,
                          text=True, timeout=300)  # the console script pip wrote
    assert done.returncode == 2
    assert done.stderr == (f"ipu-course: no notebooks/ in {tmp_path}: run it in a checkout of "
                           f"the course or pass --root DIR\n")
