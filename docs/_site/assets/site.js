// A block that scrolls sideways (a code cell, a printed table, a table wider than a phone)
// takes the keyboard's focus, so that it scrolls without a mouse (axe:
// scrollable-region-focusable); a block that fits does not, so that Tab does not stop at every
// code cell. Whether a block scrolls depends on the width and on whether its fold is open, so it
// is checked again on a resize and when a fold opens.
const SCROLLERS = [
  ".md-typeset__scrollwrap", ".md-typeset pre > code", ".jupyter-wrapper .highlight-ipynb pre",
  ".jupyter-wrapper .jp-RenderedMarkdown pre", ".jupyter-wrapper .jp-OutputArea-output pre",
].join(", ");

function focusScrollers() {
  for (const block of document.querySelectorAll(SCROLLERS)) {
    if (block.scrollWidth > block.clientWidth + 1) {
      block.tabIndex = 0;
    } else if (!block.closest("a, button")) {
      block.removeAttribute("tabindex");
    }
  }
}

document$.subscribe(focusScrollers);
document.addEventListener("toggle", focusScrollers, true);  // a <details> opened or closed
let resized;
window.addEventListener("resize", () => {
  clearTimeout(resized);
  resized = setTimeout(focusScrollers, 200);
});
