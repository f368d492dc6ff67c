"""notebooks/sanitize.cfg: each nbval sanitizer rule hides only what varies between runs
(a host time, an address), never a figure a lesson's prose quotes."""
import configparser
import os
import re

import nbformat
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIG = os.path.join(ROOT, "notebooks", "sanitize.cfg")
NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


def rules(path: str = CONFIG) -> dict[str, re.Pattern]:
    parser = configparser.ConfigParser()
    parser.read(path, encoding="utf-8")
    return {name: re.compile(parser[name]["regex"]) for name in parser.sections()}


def output_texts(nb) -> list[str]:
    texts = []
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            text = output.get("text") or output.get("data", {}).get("text/plain", "")
            texts.append(text if isinstance(text, str) else "".join(text))
    return texts


def hidden_figures(nb, patterns: dict[str, re.Pattern]) -> list[str]:
    """Each number a rule hides in an output that the notebook's prose also quotes."""
    prose = " ".join(c.source for c in nb.cells if c.cell_type == "markdown")
    quoted = set(NUMBER.findall(prose))
    found = []
    for name, pattern in patterns.items():
        for text in output_texts(nb):
            for match in pattern.finditer(text):
                found += [f"{name} hides {n!r} ({match.group(0)!r}), which the prose quotes"
                          for n in NUMBER.findall(match.group(0)) if n in quoted]
    return found


def test_every_rule_says_what_it_hides_and_why():
    lines = open(CONFIG, encoding="utf-8").read().splitlines()
    for index, line in enumerate(lines):
        if re.fullmatch(r"\[\w+\]", line.strip()):
            assert index > 0 and lines[index - 1].startswith("#"), (
                f"sanitize.cfg: rule {line} has no comment above it saying what it hides and why")


@pytest.mark.parametrize("name", sorted(n[:-6] for n in os.listdir(os.path.join(ROOT, "notebooks"))
                                        if n.endswith(".ipynb")))
def test_no_rule_hides_a_figure_the_prose_quotes(name):
    nb = nbformat.read(os.path.join(ROOT, "notebooks", f"{name}.ipynb"), as_version=4)
    assert hidden_figures(nb, rules()) == []


def test_a_rule_hiding_a_quoted_figure_is_caught():
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("The loss falls to 0.355 after three epochs."),
        nbformat.v4.new_code_cell("print(loss)", outputs=[
            nbformat.v4.new_output("stream", name="stdout", text="loss 0.355, 2.5 s of host time\n")])])
    assert hidden_figures(nb, {"times": re.compile(r"\d+(\.\d+)? s of host time")}) == []
    caught = hidden_figures(nb, {"losses": re.compile(r"loss \d\.\d+")})
    assert caught == ["losses hides '0.355' ('loss 0.355'), which the prose quotes"]
