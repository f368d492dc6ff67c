"""A lesson page of the course website from its notebook's HTML: solutions folded and kept out
of search, outputs that fit and figures with captions (lesson_outputs.py), contents from the
page's own headings, and links to take the notebook away.

mkdocs-jupyter turns a notebook into HTML with nbconvert; these functions finish that HTML.
The notebook is whatever notebooks/ holds: the learner's version, whose solutions come from the
exercises' modules (lesson_solutions.py), or an answered one, whose solution regions are
folded away. Either way a solution is folded in a <details data-search-exclude>, which the
search index skips (lesson_search.py); a class site built without solutions has none.
"""
from __future__ import annotations

import base64
import re
from pathlib import Path
from urllib.parse import quote

import nbformat
from bs4 import BeautifulSoup, Tag

import lesson_outputs
import lesson_solutions

# nbgrader's solution markers (ipu_tutorials.course.editions reads the same ones)
SOLUTION = re.compile(r"^[ \t]*### BEGIN SOLUTION", re.M)
CHECK = re.compile(r"\bexercises\.\w+\.check\(")
SOLUTION_SUMMARY = "A solution, and what the check says of it (try the exercise first)"


def solution_groups(nb: nbformat.NotebookNode) -> list[list[str]]:
    """The ids of the cells to fold, per exercise: a cell holding a solution region (or tagged
    "solution") and the check cell after it, whose verdict tells the answer too."""
    groups = []
    cells = nb.cells
    for index, cell in enumerate(cells):
        if cell.cell_type != "code" or not (SOLUTION.search(cell.source)
                                            or "solution" in cell.metadata.get("tags", [])):
            continue
        group = [cell.id]
        following = next((c for c in cells[index + 1:] if c.cell_type == "code"), None)
        if following is not None and CHECK.search(following.source):
            group.append(following.id)
        groups.append(group)
    return groups


def without_empty_cells(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The notebook without Markdown cells that show nothing (the generated-file comment)."""
    nb.cells = [c for c in nb.cells if c.cell_type != "markdown"
                or re.sub(r"<!--.*?-->", "", c.source, flags=re.S).strip()]
    return nb


def figures_as_files(nb: nbformat.NotebookNode, name: str,
                     static: Path) -> nbformat.NotebookNode:
    """Each figure shown from its copy in static/ (build_notebooks.py writes one per figure)
    instead of inline: lighter pages, and the lightbox opens the file. A figure with no
    identical copy there (static/ not rebuilt) stays inline."""
    copies = {path.read_bytes(): path.name for path in static.glob(f"{name}_*.png")}
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if "image/png" not in data:
                continue
            inline = f"data:image/png;base64,{data['image/png']}"
            copy = copies.get(base64.b64decode(data["image/png"]))
            if copy and inline in data.get("text/html", ""):
                data["text/html"] = data["text/html"].replace(inline, f"../static/{copy}")
    return nb


def outer_cell(soup: BeautifulSoup, cell_id: str) -> Tag | None:
    """A cell's outermost element (mkdocs-jupyter wraps each code cell in a second jp-Cell)."""
    cell = soup.find(id=f"cell-id={cell_id}")
    while cell is not None and isinstance(cell.parent, Tag) and "jp-Cell" in cell.parent.get(
            "class", []):
        cell = cell.parent
    return cell


def fold(soup: BeautifulSoup, cell_ids: list[str]) -> None:
    """Wrap the cells, which follow one another, in a closed <details> that search skips."""
    cells = [outer_cell(soup, cell_id) for cell_id in cell_ids]
    if any(cell is None for cell in cells):
        raise ValueError(f"cells {cell_ids} are not all on the page")
    details = soup.new_tag("details", attrs={"class": "ipu-solution", "data-search-exclude": ""})
    summary = soup.new_tag("summary")
    summary.string = SOLUTION_SUMMARY
    details.append(summary)
    cells[0].insert_before(details)
    for cell in cells:
        details.append(cell.extract())


def notebook_links(soup: BeautifulSoup, name: str, repo_url: str | None) -> None:
    """After the title: download the notebook; open it in Colab or Binder (GitHub only)."""
    title = soup.find("h1")
    if title is None:
        return
    bar = soup.new_tag("p", attrs={"class": "ipu-notebook-links"})
    links = [(f"{name}.ipynb", "Download the notebook", {"download": f"{name}.ipynb"})]
    github = re.fullmatch(r"https://github\.com/([^/]+/[^/]+?)/?", repo_url or "")
    if github:
        repo, path = github.group(1), f"notebooks/{name}.ipynb"
        links += [(f"https://colab.research.google.com/github/{repo}/blob/main/{path}",
                   "Open in Colab", {}),
                  (f"https://mybinder.org/v2/gh/{repo}/HEAD?labpath={quote(path, safe='')}",
                   "Open in Binder", {})]
    for href, text, extra in links:
        link = soup.new_tag("a", attrs={"href": href, "class": "md-button", **extra})
        link.string = text
        bar.append(link)
        bar.append(" ")
    title.insert_after(bar)


def contents(soup: BeautifulSoup) -> list[dict]:
    """The page's table of contents, as MkDocs' toc tokens, from the headings it really has:
    every entry names its heading's id and text (code included)."""
    tokens: list[dict] = []
    stack: list[dict] = []
    for heading in soup.find_all(re.compile(r"^h[1-6]$"), id=True):
        text = "".join(part.get_text() if isinstance(part, Tag) else str(part)
                       for part in heading.contents
                       if not (isinstance(part, Tag) and "anchor-link" in part.get("class", [])))
        token = {"level": int(heading.name[1]), "id": heading["id"], "name": text.strip(),
                 "children": []}
        while stack and stack[-1]["level"] >= token["level"]:
            stack.pop()
        (stack[-1]["children"] if stack else tokens).append(token)
        stack.append(token)
    return tokens


def finish(html: str, nb: nbformat.NotebookNode, name: str, repo_url: str | None,
           solutions: bool = True) -> tuple[str, list[dict], str]:
    """The lesson page's HTML, its table of contents, and its style sheets taken out of it
    (nbconvert's notebook style, 0.6 MB, the same on every lesson: the site links one copy).

    Raises:
        ValueError: solutions are to be left out, and the notebook holds some in its cells.
    """
    soup = BeautifulSoup(html, "html.parser")
    styles = "\n".join(style.extract().get_text() for style in soup.find_all("style"))
    groups = solution_groups(nb)
    if groups and not solutions:
        raise ValueError(f"{name}: the notebook holds solutions in its cells, and the site is "
                         f"built without solutions: build it from the learner's notebooks")
    for group in groups:
        fold(soup, group)
    if solutions and not groups:  # the learner's notebook: the solutions are the modules'
        lesson_solutions.add_solutions(soup, nb, outer_cell)
    lesson_outputs.mark_columns(soup)
    lesson = str(int(name.split("_")[0]))
    lesson_outputs.add_captions(soup, lesson, lesson_solutions.answers(nb))
    notebook_links(soup, name, repo_url)
    return str(soup), contents(soup), styles
