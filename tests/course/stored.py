"""The checkout these tests run in, and its lessons as stored, for the tests of the build."""
import os
import pathlib

import nbformat

from ipu_tutorials.course.checkout import Checkout

CHECKOUT = Checkout(str(pathlib.Path(__file__).resolve().parents[2]))
LESSONS = sorted(f for f in os.listdir(CHECKOUT.walkthroughs) if f.endswith(".py"))


def notebook(lesson: str) -> nbformat.NotebookNode:
    """The stored notebook of a walkthrough (`04_pipelining.py`) or lesson name."""
    name = os.path.splitext(lesson)[0]
    return nbformat.read(os.path.join(CHECKOUT.notebooks, f"{name}.ipynb"), as_version=4)
