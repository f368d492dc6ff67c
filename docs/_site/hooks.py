"""MkDocs hooks of the course website: lessons from the stored notebooks, README as home page.

The website is built from the repository as it is: nothing is executed. Each lesson page is
the executed notebook in notebooks/, with every explorer shown as its stored picture (no
widget manager, so no network); the home page is README.md; static/ figures are copied. A
link that works on GitHub (docs/x.md -> ../notebooks/NN.ipynb, README.md -> docs/x.md) is
rewritten to the page it names, so one text serves both.
"""
from __future__ import annotations

import atexit
import logging
import posixpath
import re
import shutil
import sys
import tempfile
from pathlib import Path

import nbformat
from mkdocs.plugins import event_priority
from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
import build_notebooks  # noqa: E402  (a script at the root, not a package module)

LOG = logging.getLogger("mkdocs.hooks.ipu_tutorials")
HEADING_ID = re.compile(r'<h[1-6] id="([^"]+)"')
LINK = re.compile(r"(!?\[[^\]]*\]\()([^)\s]+)((?:\s+\"[^\"]*\")?\))")
_STAGE: list[Path] = []  # the temporary folder of this build's lesson copies


def site_path(repo_path: str) -> str | None:
    """Where a repository file lives in the site's sources, None when the site lacks it."""
    if repo_path == "README.md":
        return "index.md"
    if repo_path.startswith("docs/"):
        return repo_path.removeprefix("docs/")
    match = re.fullmatch(r"notebooks/(\w+)\.ipynb", repo_path)
    if match:
        return f"lessons/{match.group(1)}.ipynb"
    if repo_path.startswith("static/"):
        return repo_path
    return None


def repo_path_of(src_uri: str) -> str:
    """The repository file a site page comes from (the inverse of site_path for pages)."""
    if src_uri == "index.md":
        return "README.md"
    if src_uri.startswith("lessons/"):
        return "notebooks/" + src_uri.removeprefix("lessons/")
    return f"docs/{src_uri}"


def rewrite_link(target: str, page_src: str) -> str | None:
    """A page's link as the site needs it; None when it names a repository file the site
    does not hold (a source file: shown as its path instead)."""
    if re.match(r"^[a-z][a-z0-9+.-]*:|^#|^/", target):
        return target  # another site, an anchor on this page, or an absolute path
    path, hash_, fragment = target.partition("#")
    repo_dir = posixpath.dirname(repo_path_of(page_src))
    repo_target = posixpath.normpath(posixpath.join(repo_dir, path))
    site_target = site_path(repo_target)
    if site_target is None:
        return None if (ROOT / repo_target).exists() else target  # a missing file stays broken
    if page_src.endswith(".ipynb"):  # a lesson page is HTML already: link the built pages
        site_target = re.sub(r"\.(md|ipynb)$", ".html", site_target)
    relative = posixpath.relpath(site_target, posixpath.dirname(page_src) or ".")
    return relative + hash_ + fragment


def rewrite_links(markdown: str, page_src: str) -> str:
    def replace(match: re.Match) -> str:
        new = rewrite_link(match.group(2), page_src)
        if new is not None:
            return match.group(1) + new + match.group(3)
        text = match.group(1)[match.group(1).index("[") + 1:-2]
        return f"{text} (`{match.group(2).lstrip('./')}`)"
    return LINK.sub(replace, markdown)


def lesson_copy(notebook: Path, folder: Path) -> Path:
    """The stored notebook with its explorers as pictures: what a page with no kernel shows."""
    copy = folder / notebook.name
    static = build_notebooks.static_explorers(nbformat.read(notebook, as_version=4))
    for cell in static.cells:  # its links, written for GitHub, as the site needs them
        if cell.cell_type == "markdown":
            cell.source = rewrite_links(cell.source, f"lessons/{notebook.name}")
    nbformat.write(static, copy)
    return copy


def stage() -> Path:
    """A temporary lessons/ folder (mkdocs-jupyter's include pattern names it), removed at exit."""
    if not _STAGE:
        folder = Path(tempfile.mkdtemp(prefix="ipu-tutorials-site-"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        _STAGE.append(folder / "lessons")
        _STAGE[0].mkdir()
    return _STAGE[0]


@event_priority(100)  # before mkdocs-jupyter turns .ipynb files into pages
def on_files(files: Files, config) -> Files:
    files.append(File.generated(config, "index.md",
                                content=(ROOT / "README.md").read_text(encoding="utf-8")))
    for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
        copy = lesson_copy(notebook, stage())
        # a plain File under the stage folder: mkdocs-jupyter's pages need a source folder
        files.append(File(f"lessons/{copy.name}", src_dir=str(copy.parent.parent),
                          dest_dir=config.site_dir, use_directory_urls=config.use_directory_urls))
    for figure in sorted((ROOT / "static").glob("*.png")):
        files.append(File.generated(config, f"static/{figure.name}", abs_src_path=str(figure)))
    return files


def on_page_markdown(markdown: str, page, config, files) -> str:
    return rewrite_links(markdown, page.file.src_uri)


def toc_items(toc) -> list:
    """The table of contents' entries in document order."""
    return [entry for item in toc for entry in (item, *toc_items(item.children))]


def on_page_content(html: str, page, config, files) -> str:
    """A lesson's table of contents with the heading ids its page really has.

    mkdocs-jupyter makes the contents with Python-Markdown's ids, which leave out code
    (`isRunningOnIpu` becomes "_1") while nbconvert's headings keep it; the headings come in
    the same order, so each entry takes the id of its heading.
    """
    if not page.file.src_uri.startswith("lessons/"):
        return html
    ids, entries = HEADING_ID.findall(html), toc_items(page.toc)
    if len(ids) != len(entries):
        LOG.warning("%s: %d headings but %d contents entries; its contents links may be broken",
                    page.file.src_uri, len(ids), len(entries))
        return html
    for entry, heading_id in zip(entries, ids):
        entry.id = heading_id
    return html
