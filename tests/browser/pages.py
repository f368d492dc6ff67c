"""What the browser tests do on a page: read a notebook's expected outputs, drive JupyterLab,
and move an explorer's controls, checking the summary against the simulator's own numbers."""
from __future__ import annotations

import functools
import importlib
import inspect
import pkgutil
import re
import time
from pathlib import Path

import nbformat

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
RUN_SECONDS = 600  # "Run All" on a loaded 2-core machine; lesson 9 trains in float16
CHANGE_SECONDS = 30

# Control values as the page shows them, keyed by each control's description.
READ_CONTROLS = """root => {
  const values = {};
  const label = el => el.querySelector('.widget-label').textContent.trim();
  for (const el of root.querySelectorAll('.widget-slider'))
    values[label(el)] = el.querySelector('.widget-readout').textContent.trim();
  for (const el of root.querySelectorAll('.widget-dropdown')) {
    const select = el.querySelector('select');
    values[label(el)] = select.options[select.selectedIndex].textContent.trim();
  }
  for (const el of root.querySelectorAll('.widget-checkbox'))
    values[el.querySelector('.widget-label-basic').textContent.trim()] =
      el.querySelector('input').checked;
  return values;
}"""


def expected_outputs(path: Path) -> dict:
    """What the stored notebook holds: explorer summaries, how many plain figures, how many
    diagrams its Markdown shows, and how many exercises."""
    nb = nbformat.read(path, as_version=4)
    diagrams = sum(len(re.findall(r"!\[[^\]]*\]\(", c.source)) for c in nb.cells
                   if c.cell_type == "markdown")
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    explorers = [o.data["text/plain"] for o in outputs if WIDGET_VIEW in o.get("data", {})]
    figures = [o for o in outputs if "image/png" in o.get("data", {})
               and WIDGET_VIEW not in o.data]
    stderr = [o for o in outputs if o.get("name") == "stderr"]
    exercises = sum(1 for c in nb.cells if "answer" in c.metadata.get("tags", []))
    return {"explorers": explorers, "figures": len(figures), "outputs": len(outputs),
            "diagrams": diagrams, "stderr": len(stderr), "exercises": exercises}


def assert_shows_summary(static, summary: str) -> None:
    """An explorer's picture shows its title (in bold) and the stored "Title: summary" text;
    the title itself may hold a colon, so it is read from the page, not split off the text."""
    title = static.locator("b").first.inner_text()
    assert summary.startswith(f"{title}: "), (title, summary)
    shown = normalise(static.inner_text())
    assert shown.startswith(normalise(title)) and normalise(summary[len(title) + 2:]) in shown


def loaded_images(page, selector: str) -> list[dict]:
    """Every <img> matching selector, scrolled into view: its decoded width and its box."""
    images = page.locator(selector)
    found = []
    for index in range(images.count()):
        image = images.nth(index)
        image.scroll_into_view_if_needed()
        image.evaluate("img => img.decode().catch(() => null)")
        found.append({"natural_width": image.evaluate("img => img.naturalWidth"),
                      "visible": image.is_visible(), "box": image.bounding_box()})
    return found


def offline(page) -> list[str]:
    """Refuse every request that would leave the machine; returns the refused URLs."""
    refused = []

    def refuse(route):
        refused.append(route.request.url)
        route.abort()

    page.route("http://**/*", refuse)
    page.route("https://**/*", refuse)
    return refused


def lab_command(page, command: str, args: dict | None = None):
    """Run a JupyterLab command (what its menu items do) and wait for it to finish."""
    return page.evaluate("([id, args]) => window.jupyterapp.commands.execute(id, args)",
                         [command, args or {}])


def open_in_lab(page, base: str, name: str, outputs: int, folder: str = "") -> None:
    """Open one notebook of the served root (or of a folder under it) alone (?reset: no tabs
    restored from an earlier test)."""
    page.goto(f"{base}/lab/tree/{folder + '/' if folder else ''}{name}.ipynb?reset")
    page.wait_for_function("() => window.jupyterapp && window.jupyterapp.shell.currentWidget"
                           " && document.querySelector('.jp-NotebookPanel .jp-Cell')")
    page.wait_for_function(
        "n => document.querySelectorAll('.jp-NotebookPanel .jp-OutputArea-child').length >= n",
        arg=outputs)


def shut_down_kernel(page) -> None:
    """Stop the current notebook's kernel, if the page got as far as starting one."""
    page.evaluate("""() => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
                             return w && w.sessionContext ? w.sessionContext.shutdown() : null; }""")


def start_kernel_if_none(page) -> None:
    """Start the notebook's kernel when JupyterLab started none: reopening a notebook whose
    kernel an earlier test shut down leaves it without one (a "No Kernel" notebook, where
    Shift+Enter queues the cell forever)."""
    page.evaluate("""async () => {
        const context = window.jupyterapp.shell.currentWidget.sessionContext;
        await context.ready;
        if (!context.session || !context.session.kernel)
          await context.changeKernel({name: 'python3'}); }""")


def wait_for_kernel_idle(page) -> None:
    start_kernel_if_none(page)
    page.wait_for_function(
        "() => { const w = window.jupyterapp.shell.currentWidget;"
        " const k = w && w.sessionContext && w.sessionContext.session"
        " && w.sessionContext.session.kernel; return k && k.status === 'idle'; }",
        timeout=RUN_SECONDS * 1000)


def run_all_cells(page) -> None:
    """Clear every output, run all cells, and wait until each code cell has run again."""
    wait_for_kernel_idle(page)
    lab_command(page, "notebook:clear-all-cell-outputs")
    lab_command(page, "notebook:run-all-cells")  # resolves when the last cell has run
    page.wait_for_function(
        """() => { const cells = window.jupyterapp.shell.currentWidget.content.model.cells;
                   for (let i = 0; i < cells.length; i++) {
                     const cell = cells.get(i);
                     if (cell.type === 'code' && !cell.executionCount) return false;
                   }
                   return true; }""", timeout=RUN_SECONDS * 1000)
    wait_for_kernel_idle(page)


@functools.lru_cache(maxsize=None)
def explorers_by_title() -> dict:
    """Title -> the explorer at its defaults, for every explorer in the package's explorer
    modules, including those of the optional integrations (IPUConfig, Lightning), so new ones
    are tested too."""
    from ipu_tutorials.classroom import explorers
    from ipu_tutorials.classroom.explorers.widgets import Explorer

    found = {}
    for module_info in pkgutil.iter_modules(explorers.__path__):
        module = importlib.import_module(f"{explorers.__name__}.{module_info.name}")
        for name, factory in vars(module).items():
            if (inspect.isfunction(factory) and factory.__module__ == module.__name__
                    and inspect.signature(factory).return_annotation in ("Explorer", Explorer)):
                explorer = factory()
                found[explorer.title] = explorer
    return found


def normalise(text: str) -> str:
    return " ".join(text.replace("\xa0", " ").split())


def simulator_summary(title: str, shown: dict) -> str:
    """The summary the explorer's own code computes for the control values the page shows
    (what its widget computes on a change; no figure is drawn here)."""
    from ipu_tutorials.classroom.explorers.widgets import plain_text

    explorer = explorers_by_title()[title]
    values = {}
    for key, control in explorer.controls.items():
        label = control.description
        if hasattr(control, "options"):
            labels = map(normalise, control._options_labels)  # the page shows spaces as nbsp
            values[key] = dict(zip(labels, control.options))[normalise(shown[label])]
        elif isinstance(control.value, bool):
            values[key] = shown[label]
        else:
            values[key] = type(control.value)(shown[label])
    return plain_text(explorer.outcome(values)["text"])


class LiveExplorer:
    """One explorer widget drawn by a kernel on the page."""

    def __init__(self, root):
        self.root = root
        self.title = root.locator("b").first.inner_text().strip()

    def state(self) -> tuple[str, str | None]:
        """The summary's text and the figure's image (None while there is none), read in one
        step: read apart, a redraw could remove the image between finding it and reading it,
        and the read then waited 30 s for an image an error summary never brings back."""
        self.root.locator(".ipu-explorer-summary").wait_for()  # drawn once the kernel answers
        summary, image = self.root.evaluate(
            "el => [el.querySelector('.ipu-explorer-summary').innerText,"
            "       el.querySelector('.ipu-explorer-figure img')?.getAttribute('src') ?? null]")
        return summary, image

    def controls(self) -> dict:
        return self.root.evaluate(READ_CONTROLS)

    def change(self, kind: str) -> bool:
        """Move the first control of a kind; False when the explorer has none of that kind."""
        if kind == "slider":
            handles = self.root.locator(".widget-slider .noUi-handle")
            if not handles.count():
                return False
            handles.first.focus()
            handles.first.press("ArrowRight")
        elif kind == "dropdown":
            selects = self.root.locator(".widget-dropdown select")
            if not selects.count():
                return False
            # The previous option: stepping down (fewer IPUs, a smaller model) keeps every
            # explorer's other settings valid.
            options = selects.first.evaluate("s => [...s.options].map(o => o.value)")
            index = selects.first.evaluate("s => s.selectedIndex")
            selects.first.select_option(options[index - 1])
        elif kind == "checkbox":
            boxes = self.root.locator(".widget-checkbox input")
            if not boxes.count():
                return False
            boxes.first.click()
        return True

    def wait_for_change(self, before: tuple) -> tuple:
        deadline = time.monotonic() + CHANGE_SECONDS
        while time.monotonic() < deadline:
            now = self.state()
            if now[0] != before[0] and now[1] != before[1] and now[1]:
                return now
            time.sleep(0.2)
        raise AssertionError(f"{self.title} did not redraw within {CHANGE_SECONDS} s: "
                             f"summary still {now[0]!r}")


def check_explorer_reacts(explorer: LiveExplorer) -> list[str]:
    """Move a slider, a dropdown and a checkbox, each kind the explorer has (change() says
    False only when it has none); after each the summary and the figure change and the
    summary matches the simulator. Returns the kinds moved."""
    moved = []
    for kind in ("slider", "dropdown", "checkbox"):
        before = explorer.state()
        if not explorer.change(kind):
            continue
        summary, _ = explorer.wait_for_change(before)
        expected = simulator_summary(explorer.title, explorer.controls())
        assert normalise(summary) == normalise(expected), (explorer.title, kind)
        moved.append(kind)
    assert moved, f"{explorer.title} has no slider, dropdown or checkbox to move"
    return moved
