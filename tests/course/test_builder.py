"""A lesson's build with the kernel left out (the executor replaced): the notebook and its
figures are written where the checkout says, and the check then finds it current until its
walkthrough changes."""
import shutil

import nbformat

from ipu_tutorials.course import builder, notebook_form
from ipu_tutorials.course.checkout import Checkout
from ipu_tutorials.support import extras

from .stored import CHECKOUT

WALKTHROUGH = '''\
# %% [markdown]
# # Lesson 99: Tiny

# %%
print("one")

# %%
# alt: A line rising.
show()
'''
PNG = "iVBORw0KGgo="  # a PNG file's first eight bytes


def executed(nb, checkout, env=None):
    """What a kernel would give back: every code cell run, the last one showing a figure."""
    assert checkout.notebooks.startswith(checkout.root)
    assert env is None or extras.LOG_VARIABLE in env  # the builder asks the kernel to note extras
    for count, cell in enumerate((c for c in nb.cells if c.cell_type == "code"), 1):
        cell.execution_count = count
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="one\n")]
    nb.cells[-1].outputs = [nbformat.v4.new_output("display_data", {"image/png": PNG,
                                                                    "text/plain": "<Figure>"})]
    return nb


def test_a_build_writes_the_notebook_and_its_figures_and_the_check_then_passes(
        tmp_path, monkeypatch, capsys):
    (tmp_path / "walkthroughs").mkdir()
    lesson = tmp_path / "walkthroughs" / "99_tiny.py"
    lesson.write_text(WALKTHROUGH)
    shutil.copy(CHECKOUT.pyproject, tmp_path)
    monkeypatch.setattr(notebook_form, "execute", executed)
    checkout = Checkout(str(tmp_path))
    assert builder.build_lessons([str(lesson)], checkout) == 0
    nb = nbformat.read(tmp_path / "notebooks" / "99_tiny.ipynb", as_version=4)
    assert nb.metadata["ipu_tutorials"]["source"] == "walkthroughs/99_tiny.py"
    assert nb.cells[-1].outputs[0].metadata == {"image/png": {"alt": "A line rising."}}
    assert (tmp_path / "static" / "99_tiny_0.png").read_bytes() == b"\x89PNG\r\n\x1a\n"
    assert builder.check_lessons([str(lesson)], checkout) == 0
    lesson.write_text(WALKTHROUGH + '\n# %%\nprint("two")\n')
    capsys.readouterr()
    assert builder.check_lessons([str(lesson)], checkout) == 1
    assert (capsys.readouterr().err.splitlines()[0] ==
            "stale: 99_tiny.ipynb was built from an older walkthroughs/99_tiny.py")
