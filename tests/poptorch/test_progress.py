"""The compile progress bar: tqdm in a terminal, one finished stdout line in a notebook."""
import sys
import types

from tqdm import tqdm

from ipu_tutorials.poptorch import _progress


def test_notebook_line_prints_the_finished_bar_once_on_stdout(capsys):
    bar = _progress.NotebookLine()
    bar.update(20)
    bar.update(80)
    bar.close()
    bar.close()
    out, err = capsys.readouterr()
    assert out == "Graph compilation: 100%|██████████| 100/100\n"
    assert err == "" and "\r" not in out


def test_a_failed_compilation_shows_how_far_it_got(capsys):
    bar = _progress.NotebookLine()
    bar.update(20)
    bar.close()
    assert capsys.readouterr().out == "Graph compilation:  20%|██        | 20/100\n"


def test_terminal_keeps_the_tqdm_bar_on_stderr():
    bar = _progress.compilation_bar(True)
    assert isinstance(bar, tqdm) and bar.fp is not None
    bar.close()
    assert _progress.compilation_bar(False).disable


def test_a_jupyter_kernel_gets_the_single_line(monkeypatch):
    kernel_stream = type("OutStream", (), {"__module__": "ipykernel.iostream"})()
    monkeypatch.setitem(sys.modules, "ipykernel", types.ModuleType("ipykernel"))
    monkeypatch.setattr(sys, "stdout", kernel_stream)
    assert _progress.in_notebook()
    assert isinstance(_progress.compilation_bar(True), _progress.NotebookLine)
    assert not isinstance(_progress.compilation_bar(False), _progress.NotebookLine)
