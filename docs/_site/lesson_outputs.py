"""A lesson page's outputs as a reader can read them: printed sentences wrap at the column,
printed tables keep their columns, and every figure has a caption.

A printed line is a row of columns when it aligns text with runs of spaces (or draws with
box characters, as a progress bar does); every other line is prose, which the site's style
sheet wraps between words. Each row of columns is marked (`<span class="ipu-columns">`) so
that it never wraps: its block scrolls sideways instead, with a cue (site.css).
"""
from __future__ import annotations

import re

from bs4 import BeautifulSoup, NavigableString, Tag

# Two spaces or more between two pieces of text: a column gap (a sentence has one space).
COLUMN_GAP = re.compile(r"\S {2,}\S")
BOX_DRAWING = re.compile(r"[\u2500-\u259f]")
# Where an alt text's headline ends: the end of a sentence, a colon or a semicolon.
HEADLINE_END = re.compile(r"[.:;](?=\s|$)")
HEADLINE_WORDS = 4  # a shorter first clause ("Left:", "Placement diagram:") is a label


def is_columns(line: str) -> bool:
    """Whether a printed line is a row of aligned columns rather than prose."""
    text = line.strip()
    return bool(COLUMN_GAP.search(text) or BOX_DRAWING.search(text))


def mark_columns(soup: BeautifulSoup) -> None:
    """Each printed row of columns in a span that keeps it on one line (a block that scrolls
    takes the keyboard's focus: site.js)."""
    for pre in soup.select(".jp-OutputArea-output pre"):
        if pre.find(True) is not None:  # already marked up (colours): left to wrap
            continue
        lines = pre.get_text().split("\n")
        if not any(is_columns(line) for line in lines):
            continue
        pre.clear()
        for index, line in enumerate(lines):
            if index:
                pre.append("\n")
            if is_columns(line):
                span = soup.new_tag("span", attrs={"class": "ipu-columns"})
                span.string = line
                pre.append(span)
            elif line:
                pre.append(NavigableString(line))


def headline(alt: str) -> str:
    """An alt text's first clause of at least HEADLINE_WORDS words: what the figure is, before
    the details of what it shows."""
    for match in HEADLINE_END.finditer(alt):
        clause = alt[:match.start()].strip()
        if len(clause.split()) >= HEADLINE_WORDS:
            return clause
    return alt.strip().rstrip(".")


def caption(number: str | None, alt: str, answers: set[str]) -> str:
    """A figure's caption: its number and its alt text's headline, or its number alone when
    the headline names an answer to one of the lesson's exercises (a guide's figures have no
    number and no exercises)."""
    text = headline(alt)
    words = set(re.findall(r"[\w.]+", text.replace(",", "")))
    named = {word for answer in answers for word in words
             if word == answer or word.endswith("." + answer)}
    if number is None:
        return text
    return f"Figure {number}" if named or not text else f"Figure {number}: {text}"


def figures(soup: BeautifulSoup) -> list[Tag]:
    """The page's figures in order, but the explorers' pictures (each is titled by its
    explorer's summary) and those already in a <figure>."""
    return [img for img in soup.find_all("img")
            if img.find_parent(class_="ipu-explorer-static") is None
            and img.find_parent("figure") is None]


def add_captions(soup: BeautifulSoup, lesson: str | None, answers: set[str]) -> None:
    """Each figure in a <figure> with its caption, numbered in a lesson (4.1, 4.2, ...)."""
    for index, img in enumerate(figures(soup), start=1):
        shown = img.parent if img.parent.name == "a" else img  # a lightbox's link, if there
        place, holder = shown, shown.parent
        if holder.name == "p" and not holder.get_text(strip=True) and len(
                holder.find_all(True, recursive=False)) == 1:
            place = holder  # a Markdown image alone in its paragraph: the figure replaces it
        figure = soup.new_tag("figure", attrs={"class": "ipu-figure"})
        text = soup.new_tag("figcaption")
        number = f"{lesson}.{index}" if lesson else None
        text.string = caption(number, img.get("alt", ""), answers)
        place.replace_with(figure)
        figure.append(shown.extract())
        figure.append(text)


def captioned(html: str) -> str:
    """A guide's page with each figure captioned by its alt text's headline."""
    soup = BeautifulSoup(html, "html.parser")
    add_captions(soup, None, set())
    return str(soup)
