"""What the explorers share: number formats, offline chart images, showing a widget now."""

from __future__ import annotations

import base64
import html

import numpy as np

from .. import plot

_INK = "#111"
_FONT = 'font-family="sans-serif"'


def _pct(rate: float) -> str:
    """A rate in percent with three significant digits, never in scientific notation."""
    if not np.isfinite(rate):
        return "–"
    if rate == 0 or rate == 1:
        return f"{rate:.0%}"
    if rate > 0.99:  # keep the distance from 100% visible: 1 - 8e-5 is 99.992%, not 100%
        decimals = int(np.ceil(-np.log10((1 - rate) * 100))) + 1
        return f"{rate * 100:.{decimals}f}".rstrip("0").rstrip(".") + "%"
    return np.format_float_positional(rate * 100, precision=3, fractional=False, trim="-") + "%"


def _num(t: float) -> str:
    return f"{t:.6g}" if np.isfinite(t) else ("+∞" if t > 0 else "−∞")


def _display_now(widget) -> None:
    """Show a widget in the running notebook cell (only inside a kernel)."""
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:  # pragma: no cover - IPython comes with ipywidgets
        return
    shell = get_ipython()
    if shell is not None and hasattr(shell, "kernel"):
        display(widget)



def _chart_image(chart, alt_text: str) -> str:
    """An Altair chart as an offline SVG ``<img>`` (rendered in the kernel by vl-convert)."""
    data = base64.b64encode(plot.render_svg(chart).encode("utf-8")).decode("ascii")
    return (f'<img alt="{html.escape(alt_text)}" style="max-width:100%;height:auto" '
            f'src="data:image/svg+xml;base64,{data}">')

