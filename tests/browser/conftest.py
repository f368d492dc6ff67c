"""Fixtures for the browser tests: Debian's Chromium driven by Playwright, and a JupyterLab (or
Voila) server on a free loopback port, with fresh Jupyter directories, as a new user has."""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
LESSONS = sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb"))
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update",
                  "--disable-sync"]
INSTALL_HINT = ("install it with `apt-get install -y chromium` (Debian/Ubuntu), or point "
                "CHROMIUM at a Chrome/Chromium executable")
SERVER_START_SECONDS = 60


def find_chromium() -> str | None:
    """The system Chromium: $CHROMIUM, else the usual Debian/Ubuntu names on PATH."""
    candidates = [os.environ.get("CHROMIUM"), "/usr/bin/chromium"]
    candidates += [shutil.which(name) for name in ("chromium", "chromium-browser", "google-chrome")]
    return next((c for c in candidates if c and os.access(c, os.X_OK)), None)


def can_run_lessons() -> bool:
    """Whether test_lessons.py can open lessons here: Chromium, Playwright and JupyterLab."""
    import importlib.util

    return find_chromium() is not None and all(
        importlib.util.find_spec(name) is not None for name in ("playwright", "jupyterlab"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def chromium_or_skip() -> str:
    """The Chromium to drive; skips the test, saying how to install one, when there is none."""
    path = find_chromium()
    if path is None:
        pytest.skip(f"browser tests need Chromium, and none was found: {INSTALL_HINT}")
    return path


@pytest.fixture(scope="session")
def chromium_path() -> str:
    return chromium_or_skip()


@pytest.fixture(scope="session")
def browser_context(chromium_path, tmp_path_factory):
    """One headless Chromium with a fresh profile (Playwright's own browser download would need
    the internet, so the system Chromium is launched by its path)."""
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="browser tests need Playwright: pip install -e '.[test]'")
    with sync_api.sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")), executable_path=chromium_path,
            headless=True, args=CHROMIUM_FLAGS, viewport={"width": 1400, "height": 1000})
        yield context
        context.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when == "call":
        item.browser_failed = report.failed


@pytest.fixture
def page(browser_context, request, tmp_path):
    """A new tab; on failure its screenshot is saved as <pytest tmp dir>/failure.png."""
    tab = browser_context.new_page()
    tab.set_default_timeout(30_000)
    yield tab
    if getattr(request.node, "browser_failed", False):
        shot = tmp_path / "failure.png"
        tab.screenshot(path=str(shot), full_page=True)
        print(f"screenshot of the failure: {shot}")
    tab.close()


def jupyter_environment(home: Path) -> dict[str, str]:
    """Fresh Jupyter/IPython directories (no trust database, no settings) and this checkout's
    package on the kernel's path."""
    env = dict(os.environ)
    for name, sub in (("JUPYTER_CONFIG_DIR", "config"), ("JUPYTER_DATA_DIR", "data"),
                      ("JUPYTER_RUNTIME_DIR", "runtime"), ("IPYTHONDIR", "ipython")):
        env[name] = str(home / sub)
        (home / sub).mkdir(parents=True, exist_ok=True)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env["JUPYTER_PLATFORM_DIRS"] = "1"
    return env


def lab_settings(directory: Path) -> None:
    """No news or update pop-ups over the page, every cell in the DOM (JupyterLab's windowing
    leaves cells far below the viewport unrendered), and the notebook's own kernel started
    without asking: reopening a notebook whose kernel an earlier test shut down otherwise
    shows a "Select Kernel" dialog over the page."""
    settings = {"apputils-extension/notification": {"fetchNews": "false",
                                                   "checkForUpdates": False},
                "notebook-extension/tracker": {"windowingMode": "none",
                                               "autoStartDefaultKernel": True}}
    for name, values in settings.items():
        path = directory / "@jupyterlab" / f"{name}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))


def answers(url: str) -> bool:
    """An HTTP URL answers a GET; a bare "host:port" accepts a connection."""
    try:
        if url.startswith("http"):
            with urllib.request.urlopen(url, timeout=2):
                return True
        host, port = url.rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=2):
            return True
    except OSError:
        return False


def wait_until_serving(url: str, process: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + SERVER_START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode}:\n{log.read_text()}")
        if answers(url):
            return
        time.sleep(0.3)
    raise RuntimeError(f"server not answering at {url} after {SERVER_START_SECONDS} s:\n"
                       f"{log.read_text()}")


def start_server(command: list[str], url: str, home: Path, cwd: Path):
    home.mkdir(parents=True, exist_ok=True)
    log = home / "server.log"
    with open(log, "w") as out:
        process = subprocess.Popen(command, cwd=cwd, env=jupyter_environment(home),
                                   stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_until_serving(url, process, log)
    except Exception:
        process.kill()
        raise
    return process


def stop_server(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()


def write_instructor_editions(folder: Path) -> None:
    """Each stored lesson as the instructor edition, its solutions in the answer cells."""
    import nbformat

    from ipu_tutorials.course import editions

    folder.mkdir()
    for lesson in LESSONS:
        stored = nbformat.read(NOTEBOOKS / f"{lesson}.ipynb", as_version=4)
        nbformat.write(editions.instructor_edition(stored), folder / f"{lesson}.ipynb")


@pytest.fixture(scope="session")
def lab(chromium_path, tmp_path_factory):
    """JupyterLab serving a copy of the checkout's notebooks/ as its root, as the README opens
    it (`jupyter lab notebooks/`: nothing else of the checkout is served, and saving in the
    browser never touches the repository), with each lesson's instructor edition in
    instructor/ under it. Yields (base URL, served root)."""
    home = tmp_path_factory.mktemp("jupyter-home")
    served = tmp_path_factory.mktemp("served") / "notebooks"
    shutil.copytree(NOTEBOOKS, served)
    write_instructor_editions(served / "instructor")
    lab_settings(home / "lab-settings")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    command = [sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root",
               "--ip=127.0.0.1", f"--port={port}", "--ServerApp.port_retries=0",
               "--IdentityProvider.token=", "--ServerApp.password=",
               f"--ServerApp.root_dir={served}", f"--LabApp.user_settings_dir={home / 'lab-settings'}",
               f"--LabApp.workspaces_dir={home / 'workspaces'}", "--LabApp.expose_app_in_browser=True"]
    process = start_server(command, f"{base}/api/status", home, served)
    yield base, served
    stop_server(process)


@pytest.fixture(scope="session")
def site(chromium_path, tmp_path_factory) -> Path:
    """The course website as docs/website.md builds it (`mkdocs build --strict`: a page missing
    from the nav, a link to a missing page or anchor fails the build, and its log says which)."""
    pytest.importorskip("mkdocs", reason="the website needs the docs extra: pip install -e '.[docs]'")
    from tests.browser import site_build

    # Built once per run: under pytest-xdist the workers share one build (their temporary
    # folders sit side by side), the first to take the lock building it for the others.
    from filelock import FileLock

    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent
    site_dir, failed = shared / "site", shared / "site-build-failed.txt"
    with FileLock(str(shared / "site.lock")):
        if not site_dir.is_dir() and not failed.exists():
            partial = shared / f"site-{os.getpid()}"  # whole or not at all: renamed when built
            result = site_build.build(partial)
            if result.returncode != 0:
                failed.write_text(result.stderr[-4000:])
            else:
                partial.rename(site_dir)
    assert not failed.exists(), f"mkdocs build --strict failed:\n{failed.read_text()}"
    return site_dir


@pytest.fixture(scope="session")
def served_site(site, tmp_path_factory) -> str:
    """The built site served over HTTP as docs/website.md says; yields its base URL."""
    from tests.browser import site_build

    port = free_port()
    process = start_server(site_build.serve_command(site, port), f"http://127.0.0.1:{port}/",
                           tmp_path_factory.mktemp("http-server"), site)
    yield f"http://127.0.0.1:{port}"
    stop_server(process)


@pytest.fixture
def voila(chromium_path, tmp_path):
    """Start Voila on a notebook: voila(notebook_path) -> base URL; stopped after the test."""
    processes = []

    def serve(notebook: Path) -> str:
        port = free_port()
        command = [sys.executable, "-m", "voila", str(notebook), "--no-browser",
                   f"--port={port}", "--Voila.ip=127.0.0.1", "--Voila.port_retries=0"]
        home = tmp_path / "voila-home"
        # Probed by connecting only: a GET of the page would already start a kernel.
        processes.append(start_server(command, f"127.0.0.1:{port}", home, notebook.parent))
        return f"http://127.0.0.1:{port}/"

    yield serve
    for process in processes:
        stop_server(process)
