"""What a reader of the course website sees of each line: checks that test_website_axe.py runs
on every page at both widths, and their own tests on small pages made to break each one.

- an output line of prose (words, not aligned columns) is never cut off at the column: it wraps,
  or it is whole in view;
- an element wider than its column that scrolls sideways shows a cue that more is there (the
  site's shadows, which do not depend on the browser showing a scroll bar);
- no identifier in code is split over two lines;
- every figure has a caption.
"""
from __future__ import annotations

import pytest

# A line of an output is prose when it has four words or more, single-spaced after its
# indentation, and no box-drawing characters: a printed sentence, an error message. Anything
# else (a row of aligned columns, a progress bar) keeps its columns and may scroll.
PROSE = (r"line => line.trim().split(/\s+/).length >= 4 && !/\S {2,}\S/.test(line.trim())"
         r" && !/[\u2500-\u259f|]/.test(line)")

TEXT_OF = """element => {
  // The element's text, and a DOM range for any span of it, across the text nodes the
  // highlighter split it into.
  const nodes = [];
  const walker = document.createTreeWalker(element, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) nodes.push(walker.currentNode);
  const at = offset => {
    for (const node of nodes) {
      if (offset <= node.data.length) return [node, offset];
      offset -= node.data.length;
    }
  };
  const range = (start, end) => {
    const r = document.createRange();
    r.setStart(...at(start));
    r.setEnd(...at(end));
    return r;
  };
  return [nodes.map(n => n.data).join(""), range];
}"""

CUT_OFF_PROSE = f"""pres => {{
  const textOf = {TEXT_OF};
  const prose = {PROSE};
  const cut = [];
  for (const pre of pres) {{
    // The box that shows the line: the nearest element that clips it (the <pre> itself
    // when it scrolls).
    let box = pre;
    while (box && getComputedStyle(box).overflowX === "visible") box = box.parentElement;
    if (!box || !pre.getClientRects().length) continue;  // folded away: not shown
    const shown = box.getBoundingClientRect();
    const right = shown.left + box.clientLeft + box.clientWidth;
    const [text, range] = textOf(pre);
    for (const line of text.matchAll(/[^\\n]+/g)) {{
      if (!prose(line[0])) continue;
      // Its words, not its spaces: a space where a line wraps hangs past the edge, unseen.
      const words = [...line[0].matchAll(/\\S+/g)];
      if (words.some(w => [...range(line.index + w.index, line.index + w.index + w[0].length)
                              .getClientRects()].some(r => r.right > right + 1)))
        cut.push(line[0].trim().slice(0, 80));
    }}
  }}
  return cut;
}}"""

WITHOUT_CUE = """elements => elements
  .filter(e => ["auto", "scroll"].includes(getComputedStyle(e).overflowX)
               && e.scrollWidth > e.clientWidth + 1 && e.getClientRects().length)
  .filter(e => !getComputedStyle(e).backgroundImage.includes("gradient"))
  .map(e => e.tagName.toLowerCase() + "." + [...e.classList].join(".") + ": "
            + e.textContent.trim().slice(0, 60))"""

SPLIT_IDENTIFIERS = f"""codes => {{
  const textOf = {TEXT_OF};
  const split = [];
  for (const code of codes) {{
    if (!code.getClientRects().length) continue;
    const [text, range] = textOf(code);
    for (const word of text.matchAll(/\\S+/g)) {{
      const rects = [...range(word.index, word.index + word[0].length).getClientRects()];
      const tops = new Set(rects.filter(r => r.width > 0).map(r => Math.round(r.top)));
      if (tops.size > 1) split.push(word[0].slice(0, 60));
    }}
  }}
  return split;
}}"""

CAPTIONLESS = """images => images
  .filter(img => !img.closest(".ipu-explorer-static"))  // titled by the explorer's own summary
  .filter(img => { const figure = img.closest("figure");
                   const caption = figure && figure.querySelector("figcaption");
                   return !caption || !caption.textContent.trim(); })
  .map(img => img.getAttribute("alt") || img.getAttribute("src"))"""

# The code a page shows: a notebook's cells, a Markdown code block, a solution. (An output's
# prose wraps between words; a word longer than the whole line may break there.)
CODE = "article .highlight-ipynb pre, article pre > code"


def cut_off_prose(page) -> list[str]:
    """Lines of output prose that reach past the edge of the box showing them."""
    return page.eval_on_selector_all("article .jp-OutputArea-output pre", CUT_OFF_PROSE)


def scrolling_without_cue(page) -> list[str]:
    """Elements that scroll sideways, with more to see, and no cue that there is."""
    return page.eval_on_selector_all("article *", WITHOUT_CUE)


def split_identifiers(page) -> list[str]:
    """Words of code (identifiers, numbers, expressions: runs without a space) that a line
    break cuts in two."""
    return page.eval_on_selector_all(CODE, SPLIT_IDENTIFIERS)


def captionless_figures(page) -> list[str]:
    """The figures (their alt text) that no visible caption names."""
    return page.eval_on_selector_all("article img", CAPTIONLESS)


@pytest.fixture
def tab(browser_context):
    tab = browser_context.new_page()
    tab.set_viewport_size({"width": 390, "height": 844})
    yield tab
    tab.close()


def show(tab, tmp_path, body: str) -> None:
    page = tmp_path / "page.html"
    page.write_text(f'<html lang="en"><body><article>{body}</article></body></html>')
    tab.goto(page.as_uri())


SENTENCE = "backward() cannot be called explicitly on outputs of a PopTorch model " * 3


def test_a_cut_off_line_of_prose_is_found_and_a_wrapped_one_is_not(tab, tmp_path):
    table = "IPU   code    weights\n  0   22.0 MiB  " + "74.7 MiB  " * 12
    show(tab, tmp_path, f'<div class="jp-OutputArea-output"><pre style="overflow-x: auto">'
                        f'{SENTENCE}\n{table}</pre></div>'
                        f'<div class="jp-OutputArea-output"><pre style="white-space: pre-wrap">'
                        f'{SENTENCE}</pre></div>')
    assert cut_off_prose(tab) == [SENTENCE.strip()[:80]]  # the columns may scroll


def test_a_scrolling_element_without_its_cue_is_found(tab, tmp_path):
    wide = "x " * 10 + "y" * 200
    cue = "background-image: linear-gradient(to right, white, transparent)"
    show(tab, tmp_path, f'<pre class="bare" style="overflow-x: auto">{wide}</pre>'
                        f'<pre class="cued" style="overflow-x: auto; {cue}">{wide}</pre>'
                        f'<pre class="fits" style="overflow-x: auto">short</pre>')
    assert [e.split(":")[0] for e in scrolling_without_cue(tab)] == ["pre.bare"]


def test_a_split_identifier_is_found(tab, tmp_path):
    code = "model = Network()\nfor p in model.parameters_of_the_whole_network_at_once(): pass"
    show(tab, tmp_path, f'<pre><code style="white-space: pre-wrap; overflow-wrap: anywhere">'
                        f'{code}</code></pre>'
                        f'<pre><code style="overflow-x: auto">{code}</code></pre>')
    assert split_identifiers(tab) == ["model.parameters_of_the_whole_network_at_once():"]


def test_a_figure_without_a_caption_is_found(tab, tmp_path):
    pixel = ("data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42"
             "mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=")
    show(tab, tmp_path, f'<figure><img alt="captioned" src="{pixel}"><figcaption>Figure 1.1: a '
                        f'dot</figcaption></figure><p><img alt="bare" src="{pixel}"></p>'
                        f'<div class="ipu-explorer-static"><img alt="explorer" src="{pixel}">'
                        f'</div>')
    assert captionless_figures(tab) == ["bare"]
