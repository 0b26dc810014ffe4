"""What the browser tests read from a Gradio line plot (Vega draws it as SVG)."""

from __future__ import annotations

LOSS_X_LABELS = "#train-loss svg g.role-axis[aria-label^='X-axis'] g.role-axis-label text"


def x_labels_reach(page, last: int, selector: str = LOSS_X_LABELS) -> list[str]:
    """The x axis's tick labels, once the largest is `last` (however the labels are written): the axis of the
    latest update, not of the one before."""
    page.wait_for_function(
        """([selector, last]) => Math.max(...[...document.querySelectorAll(selector)]
               .map(t => parseFloat(t.textContent.replace(/,/g, '')))) === last""", arg=[selector, last])
    return page.locator(selector).all_text_contents()
