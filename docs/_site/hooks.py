"""MkDocs hooks of the course website: lessons from the stored notebooks, README as home page.

The website is built from the repository as it is: nothing is executed. Each lesson page is
the executed notebook in notebooks/, with every explorer shown as its stored picture (no
widget manager, so no network), every figure with its alt text, and every solution folded
(lesson_pages.py) unless the site is built without solutions (IPU_SITE_SOLUTIONS=false, read
in mkdocs.yml); the notebook itself is copied beside the page for download. The home page
is README.md; static/ figures and the site's own style sheet and scripts (docs/_site/assets/)
are copied. A link that works on GitHub (docs/x.md -> ../notebooks/NN.ipynb, README.md ->
docs/x.md) is rewritten to the page it names, so one text serves both. The repository's
address is read from pyproject.toml's [project.urls], its one home.
"""
from __future__ import annotations

import atexit
import posixpath
import re
import shutil
import sys
import tempfile
from urllib.parse import urlsplit
try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: the docs extra installs tomli
    import tomli as tomllib
from pathlib import Path

import nbformat
from mkdocs.exceptions import ConfigurationError, PluginError
from mkdocs.plugins import event_priority
from mkdocs.structure.files import File, Files
from mkdocs.structure.toc import get_toc

ROOT = Path(__file__).resolve().parents[2]
SITE_SOURCES = Path(__file__).resolve().parent
sys.path[:0] = [str(ROOT), str(SITE_SOURCES)]
import lesson_outputs  # noqa: E402
import lesson_pages  # noqa: E402
import lesson_search  # noqa: E402
from ipu_tutorials.course.figures import figures_with_alt, static_explorers  # noqa: E402

LINK = re.compile(r"(!?\[[^\]]*\]\()([^)\s]+)((?:\s+\"[^\"]*\")?\))")
FENCE = re.compile(r"^\s*(```|~~~)")
# A list item that starts right under a paragraph line: CommonMark (GitHub) starts the list
# there, Python-Markdown only after a blank line.
LIST_ITEM = re.compile(r"^ {0,3}([-*+]|1[.)]) \S")
_STAGE: list[Path] = []  # the temporary folder of this build's lesson copies
NOTEBOOK_CSS = "assets/ipu-tutorials/notebook.css"  # the lessons' one notebook style sheet
_NOTEBOOK_STYLES: dict[str, str] = {}  # its text, taken from the first lesson page built
SEARCH_DIALOG = '<div class="md-search" data-md-component="search" role="dialog"'
_SHOWN: dict[str, str] = {}  # a lesson page's HTML while the search index reads another form
# The 404 page is rendered for the site's root ("/assets/..."), which a page opened from disk
# cannot reach: its links are made relative to the site's root, which this script names for a
# server (any missing address gets the page) and leaves to the page's own folder on disk.
ROOT_LINK = re.compile(r'((?:href|src)=")/(?!/)')
NOT_FOUND_BASE = ('<script>if (location.protocol !== "file:") {{ const base = '
                  'document.createElement("base"); base.href = "{root}"; '
                  'document.head.prepend(base); }}</script>')


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
    does not hold (a source file: shown as its path instead). A link to a file at the
    repository's address (a lesson names the docs that way, ipu_tutorials/course/portable.py)
    is a link to that file too."""
    own = f"{repository()}/blob/main/" if repository() else None
    if own and target.startswith(own):
        path, hash_, fragment = target.removeprefix(own).partition("#")
        repo_target = posixpath.normpath(path)
    elif re.match(r"^[a-z][a-z0-9+.-]*:|^#|^/", target):
        return target  # another site, an anchor on this page, or an absolute path
    else:
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
    """The stored notebook as a page without a kernel shows it: explorers as their pictures,
    figures with their alt text in the HTML, no empty cells."""
    copy = folder / notebook.name
    static = figures_with_alt(static_explorers(nbformat.read(notebook, as_version=4)))
    static = lesson_pages.without_empty_cells(static)
    static = lesson_pages.figures_as_files(static, notebook.stem, ROOT / "static")
    for cell in static.cells:  # its links, written for GitHub, as the site needs them
        if cell.cell_type == "markdown":
            cell.source = rewrite_links(cell.source, f"lessons/{notebook.name}")
    nbformat.write(static, copy)
    return copy


def separate_lists(markdown: str) -> str:
    """The text with a blank line before each list that starts right under a paragraph, so
    that the site shows the list GitHub shows (code blocks are left as they are)."""
    lines, fenced, previous = [], False, ""
    for line in markdown.split("\n"):
        if FENCE.match(line):
            fenced = not fenced
        elif (not fenced and LIST_ITEM.match(line) and previous.strip()
              and not LIST_ITEM.match(previous) and not previous.startswith((" ", "\t", "|", "#"))):
            lines.append("")
        lines.append(line)
        previous = "" if fenced else line
    return "\n".join(lines)


def repository() -> str | None:
    """The project's repository address, from pyproject.toml's [project.urls]."""
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"].get("urls", {}).get("Repository")


def stage() -> Path:
    """A temporary lessons/ folder (mkdocs-jupyter's include pattern names it), removed at exit."""
    if not _STAGE:
        folder = Path(tempfile.mkdtemp(prefix="ipu-tutorials-site-"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        _STAGE.append(folder / "lessons")
        _STAGE[0].mkdir()
    return _STAGE[0]


def shows_solutions(config) -> bool:
    """Whether lesson pages fold in the exercises' solutions (`extra.solutions` in mkdocs.yml,
    from IPU_SITE_SOLUTIONS).

    Raises:
        ConfigurationError: the value is not true or false.
    """
    value = config.extra.get("solutions", True)
    if not isinstance(value, bool):
        raise ConfigurationError(f"IPU_SITE_SOLUTIONS must be true or false (leave it unset to "
                                 f"show the solutions), got {value!r}")
    return value


def on_config(config):
    """The repository link (header and lesson pages) from pyproject.toml; the solutions
    switch checked."""
    shows_solutions(config)
    config.repo_url = repository()
    if config.repo_url:  # "owner/name", as Material shows it in the header
        config.repo_name = "/".join(config.repo_url.rstrip("/").split("/")[-2:])
    config.edit_uri = ""  # no "edit this page" link: pages are generated from other files
    return config


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
    for asset in sorted((SITE_SOURCES / "assets").rglob("*")):
        if asset.is_file():
            uri = f"assets/ipu-tutorials/{asset.relative_to(SITE_SOURCES / 'assets').as_posix()}"
            files.append(File.generated(config, uri, abs_src_path=str(asset)))
    return files


def on_page_markdown(markdown: str, page, config, files) -> str:
    return separate_lists(rewrite_links(markdown, page.file.src_uri))


@event_priority(-100)  # after every other plugin's changes to the page (glightbox's links)
def on_page_content(html: str, page, config, files) -> str:
    """A lesson page finished (lesson_pages.finish), its contents from its own headings; on
    another page, each figure captioned.

    mkdocs-jupyter makes the contents with Python-Markdown from a Markdown copy, whose ids
    and titles leave out code (`isRunningOnIpu` becomes an empty entry "_1") and read a line
    such as "#19405" as a heading; the page's own headings are what a reader can jump to.
    Until the search index has read the page (on_page_context), the page holds the form the
    index should read (lesson_search.for_search), and its tags are the names it teaches.
    """
    if not page.file.src_uri.startswith("lessons/"):
        return lesson_outputs.captioned(html) if "<img" in html else html
    name = Path(page.file.src_uri).stem
    nb = nbformat.read(page.file.abs_src_path, as_version=4)
    try:
        html, tokens, styles = lesson_pages.finish(html, nb, name, config.repo_url,
                                                   shows_solutions(config))
    except ValueError as error:  # one line naming the lesson, not a traceback
        raise PluginError(str(error)) from None
    page.toc = get_toc(tokens)
    page.meta["tags"] = lesson_search.taught(name)  # read by the search index only
    shared = _NOTEBOOK_STYLES.setdefault("text", styles)
    if styles != shared:  # a lesson styled otherwise keeps its own
        html = f"<style>{styles}</style>{html}"
    else:
        html = f'<link rel="stylesheet" href="../{NOTEBOOK_CSS}">{html}'
    _SHOWN[page.file.src_uri] = html
    return lesson_search.for_search(html)


@event_priority(-100)  # after the search plugin has indexed the page
def on_page_context(context, page, config, nav):
    """The lesson page's own HTML back in place for the template, once indexed."""
    if page.file.src_uri in _SHOWN:
        page.content = _SHOWN.pop(page.file.src_uri)
    return context


def named_search_dialog(output: str) -> str:
    """The search dialog named for screen readers (Material leaves it unnamed)."""
    return output.replace(SEARCH_DIALOG, SEARCH_DIALOG + ' aria-label="Search"', 1)


def on_post_page(output: str, page, config) -> str:
    return named_search_dialog(output)


def not_found_page(output: str, site_url: str | None) -> str:
    """The 404 page with links that work from disk as well as from a server."""
    root = urlsplit(site_url or "").path or "/"
    output = ROOT_LINK.sub(r"\1", output)
    output = output.replace('"base": "/"', '"base": "."').replace('"search": "/', '"search": "')
    output = output.replace('new URL("/",location)', 'new URL(".",location)')
    return output.replace("<head>", "<head>" + NOT_FOUND_BASE.format(root=root), 1)


def on_post_template(output: str, template_name: str, config) -> str:
    if template_name != "404.html":
        return output
    return named_search_dialog(not_found_page(output, config.site_url))


def on_post_build(config) -> None:
    """Each lesson's notebook beside its page, for the page's download link: the stored
    notebook, as the repository holds it (and Colab and Binder open it); and the lessons'
    shared notebook style sheet."""
    for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
        shutil.copyfile(notebook, Path(config.site_dir) / "lessons" / notebook.name)
    if "text" in _NOTEBOOK_STYLES:
        css = Path(config.site_dir) / NOTEBOOK_CSS
        css.write_text(_NOTEBOOK_STYLES["text"], encoding="utf-8")
