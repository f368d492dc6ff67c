"""tests/peer/manifest.py: what it reads from a source tree, and that the committed manifests are
what it reads from the real releases."""
import json
import os
import pathlib
import subprocess
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import manifest  # noqa: E402

MIRRORS = pathlib.Path(os.environ.get("PEER_MIRRORS", "/work/.mirror"))
RELEASES = [(p, tag) for p in manifest.PROJECTS.values() for tag in p.tags]

TOY = '''
import enum
from . import enums


class Mode(enum.IntEnum):
    A = 0


class Word(enum.Enum):
    X = "x"


class Settings:
    def __init__(self):
        self.count = 1
        self.mode = Mode.A.value
        self.word = Word.X.value
        self._hidden = 2

    def chained(self, value: int = 3):
        assert isinstance(value, int), "value must be an int"
        self.count = value
        return self

    def nothing(self, value):
        if value:
            return
        self.count = value

    def both(self, value):
        if value:
            return self
        return value + 1

    def falls_through(self, value):
        if value:
            return self

    def generator(self):
        yield 1

    def fails(self):
        raise ValueError(f"bad {self.count}")


def helper(*items, key=None, **rest):
    def inner():
        return 1
    inner()
'''


@pytest.fixture(scope="module")
def toy_repo(tmp_path_factory):
    """A git repository holding one module of a toy project, tagged v1."""
    root = tmp_path_factory.mktemp("toy")
    (root / "toy").mkdir()
    (root / "toy" / "__init__.py").write_text("from .core import *\nfrom . import core\n")
    (root / "toy" / "core.py").write_text(TOY)
    (root / "toy" / "enums.py").write_text("")
    for args in (["init", "-q"], ["add", "."],
                 ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "toy"],
                 ["tag", "v1"]):
        subprocess.run(["git", *args], cwd=root, check=True)
    return root / ".git"


@pytest.fixture(scope="module")
def toy(toy_repo):
    project = manifest.Project("toy", "me/toy", ("v1",), "toy", "toy",
                               ("__init__.py", "core.py"), ("toy",))
    return manifest.build(project, toy_repo, "v1")


def test_the_names_of_a_package_follow_its_star_imports_and_submodules(toy):
    names = toy["surface"]["toy"]
    assert names["Settings"] == "toy.core.Settings" and names["helper"] == "toy.core.helper"
    assert names["core"] == "module toy.core" and names["enums"] == "module toy.enums"
    assert "enum" not in names  # an import of another project is not the project's name


def test_what_each_method_returns_is_read_from_its_return_statements(toy):
    members = toy["definitions"]["toy.core.Settings"]["members"]
    assert {name: members[name]["returns"] for name in
            ("chained", "nothing", "both", "falls_through", "generator", "__init__")} == {
        "chained": "self", "nothing": "none", "both": "self|value", "falls_through": "none|self",
        "generator": "generator", "__init__": "none"}
    assert toy["definitions"]["toy.core.helper"]["returns"] == "none"  # inner()'s return is not


def test_parameters_keep_their_kinds_and_defaults_as_source_text(toy):
    assert toy["definitions"]["toy.core.helper"]["params"] == [
        {"name": "items", "kind": "VAR_POSITIONAL"},
        {"name": "key", "kind": "KEYWORD_ONLY", "default": "None"},
        {"name": "rest", "kind": "VAR_KEYWORD"}]
    chained = toy["definitions"]["toy.core.Settings"]["members"]["chained"]
    assert chained["params"] == [{"name": "value", "kind": "POSITIONAL_OR_KEYWORD",
                                  "default": "3"}]


def test_an_assert_is_an_assertion_error_and_a_raise_its_class(toy):
    members = toy["definitions"]["toy.core.Settings"]["members"]
    assert [(r["exception"], r["condition"]) for r in members["chained"]["raises"]] == [
        ("AssertionError", "isinstance(value, int)")]
    assert members["fails"]["raises"][0]["exception"] == "ValueError"


def test_stored_attributes_have_the_type_their_source_shows(toy):
    attributes = toy["definitions"]["toy.core.Settings"]["attributes"]
    assert {n: a.get("type") for n, a in attributes.items()} == {
        "count": "int", "mode": "int", "word": "str"}  # an IntEnum's value is an int


def test_the_real_rules_are_read_with_their_exception_classes():
    rules = json.loads((manifest.MANIFESTS / "poptorch-3.4.0.json").read_text())["rules"]
    assert rules["same-as-ipu-needs-an-ipu"]["exception"] == "AssertionError"
    assert rules["pipelined-unknown-block"]["exception"] == "AssertionError"
    assert rules["begin-block-takes-a-module"]["exception"] == "poptorch.Error"


@pytest.mark.parametrize("project, tag", RELEASES, ids=[f"{p.name}-{t}" for p, t in RELEASES])
def test_the_committed_manifest_is_what_the_tool_reads_from_the_release(project, tag):
    git_dir = manifest.find_git_dir(MIRRORS, project.repository)
    if git_dir is None:
        pytest.skip(f"no mirror of {project.repository} under {MIRRORS} (set PEER_MIRRORS): "
                    f"the committed manifest is not re-derived")
    committed = (manifest.manifest_path(project, tag)).read_text()
    assert manifest.dumps(manifest.build(project, git_dir, tag)) == committed, (
        f"run: python tests/peer/manifest.py --all {MIRRORS} --write")
