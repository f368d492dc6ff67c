// A table wider than a phone scrolls sideways inside Material's wrapper, which it adds when a
// page is shown: the wrapper takes the keyboard's focus, so that it scrolls without a mouse
// (axe: scrollable-region-focusable).
document$.subscribe(() => {
  for (const wrapper of document.querySelectorAll(".md-typeset__scrollwrap")) {
    wrapper.tabIndex = 0;
  }
});
