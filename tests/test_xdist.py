"""The README's `pytest -n auto` under pyproject's addopts: a notebook's cells run in order in
one kernel on one worker, and a changed stored output still fails its cell."""
import os
import pathlib
import subprocess
import sys

import nbformat

ROOT = pathlib.Path(__file__).resolve().parent.parent


def notebook(path: pathlib.Path, last_output: str) -> None:
    """Cells that each need the one before them, with their stored outputs."""
    cells = [nbformat.v4.new_code_cell("x = 1", execution_count=1)]
    for step in range(1, 7):
        cell = nbformat.v4.new_code_cell("x = x * 2\nprint(x)", execution_count=step + 1)
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=f"{2 ** step}\n")]
        cells.append(cell)
    cells[-1].outputs[0].text = last_output
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)


def test_a_notebook_runs_whole_on_one_worker_and_a_changed_output_fails(tmp_path):
    notebook(tmp_path / "kept.ipynb", "64\n")
    notebook(tmp_path / "changed.ipynb", "65\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "2", "-q", "-c", str(ROOT / "pyproject.toml"),
         "--rootdir", str(tmp_path), "-p", "no:cacheprovider", "--nbval-cell-timeout=60",
         str(tmp_path / "kept.ipynb"), str(tmp_path / "changed.ipynb")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    failed = [line.split(" - ")[0].rsplit("/", 1)[-1] for line in result.stdout.splitlines()
              if line.startswith("FAILED")]
    assert failed == ["changed.ipynb::Cell 6"], result.stdout[-3000:]
    assert "1 failed, 13 passed" in result.stdout, result.stdout[-3000:]
