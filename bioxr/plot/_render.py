"""Rendering charts without a network: SVG and PNG by vl-convert, one self-contained HTML page.

:func:`render_svg` and :func:`save_png` use vl-convert (no browser, no
network); :func:`to_html` embeds the Vega bundle once and calls
``vegaEmbed`` per chart, so the page works offline and from ``file://``.
"""

from __future__ import annotations

import html as _html
import json
import sys
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path

import altair as alt

__all__ = ["VL_VERSION", "render_svg", "save_svg", "save_png", "to_html", "save_html", "enable_offline_renderer"]

#: Vega-Lite version used to render (must match Altair's schema major version).
VL_VERSION = ".".join(alt.SCHEMA_VERSION.lstrip("v").split(".")[:2])


def _spec(chart) -> dict:
    return chart.to_dict() if hasattr(chart, "to_dict") else dict(chart)


def render_svg(chart) -> str:
    """Render a chart to an SVG string, offline (vl-convert).

    Examples
    --------
    >>> import altair as alt, pandas as pd
    >>> from bioxr.plot import render_svg
    >>> svg = render_svg(alt.Chart(pd.DataFrame({"x": [1, 2]})).mark_point().encode(x="x:Q"))
    >>> svg.startswith("<svg")
    True
    """
    import vl_convert

    return vl_convert.vegalite_to_svg(_spec(chart), vl_version=VL_VERSION)


def save_svg(chart, path) -> Path:
    """Write a chart as an SVG file; returns the path."""
    path = Path(path)
    path.write_text(render_svg(chart), encoding="utf-8")
    return path


def save_png(chart, path, *, scale: float = 2.0) -> Path:
    """Write a chart as a PNG file, offline (vl-convert); returns the path.

    Parameters
    ----------
    chart : altair chart or Vega-Lite dict
    path : str or Path
    scale : float, keyword-only
        Pixel density (2 = sharp on high-resolution screens).
    """
    import vl_convert

    path = Path(path)
    path.write_bytes(vl_convert.vegalite_to_png(_spec(chart), vl_version=VL_VERSION, scale=scale))
    return path


@lru_cache(maxsize=2)
def _bundle(vl_version: str) -> str:
    import vl_convert

    js = vl_convert.javascript_bundle(vl_version=vl_version)
    return js.replace("</script", "<\\/script").replace("<!--", "<\\!--")


def to_html(charts, *, title: str = "bioxr charts", full_page: bool = True) -> str:
    """One self-contained interactive HTML page (or fragment) of charts.

    The Vega, Vega-Lite and vega-embed JavaScript (from vl-convert, about
    0.9 MB) is embedded once, inside a block so its top-level declarations
    cannot collide with the page's, and ``vegaEmbed`` is called once per
    chart. The page fetches nothing: it works offline and from ``file://``.

    Parameters
    ----------
    charts : altair chart, sequence of charts or mapping of str to chart
        A mapping's keys become headings.
    title : str, keyword-only
    full_page : bool, keyword-only
        False returns a fragment (``<div>`` and ``<script>`` elements) to
        place in another page; embed only one fragment per page.

    Returns
    -------
    str

    Examples
    --------
    >>> import altair as alt, pandas as pd
    >>> from bioxr.plot import to_html
    >>> chart = alt.Chart(pd.DataFrame({"x": [1, 2]})).mark_point().encode(x="x:Q")
    >>> page = to_html({"first": chart, "second": chart})
    >>> page.count("vegaEmbed(") >= 2, "src=\\"http" in page
    (True, False)
    """
    if isinstance(charts, Mapping):
        items = list(charts.items())
    elif isinstance(charts, (list, tuple)):
        items = [(None, c) for c in charts]
    else:
        items = [(None, charts)]
    blocks, calls = [], []
    for k, (name, chart) in enumerate(items):
        heading = f"<h2>{_html.escape(str(name))}</h2>\n" if name is not None else ""
        blocks.append(f'<section class="bioxr-chart">{heading}<div id="bioxr-chart-{k}"></div></section>')
        spec = json.dumps(_spec(chart), allow_nan=False).replace("</", "<\\/").replace("<!--", "<\\!--")
        calls.append(f'vegaEmbed("#bioxr-chart-{k}", {spec}, {{"actions": false, "renderer": "svg"}})'
                     f'.catch(function (e) {{ console.error(e); }});')
    script = "<script>\n{\n" + _bundle(VL_VERSION) + "\n}\n</script>\n<script>\n" + "\n".join(calls) + "\n</script>"
    fragment = "\n".join(blocks) + "\n" + script
    if not full_page:
        return fragment
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        f"<title>{_html.escape(title)}</title>\n"
        "<style>body{font-family:system-ui,sans-serif;margin:2em;color:#222}"
        ".bioxr-chart{margin-bottom:2.5em}</style>\n</head>\n<body>\n"
        f"<h1>{_html.escape(title)}</h1>\n{fragment}\n</body>\n</html>\n"
    )


def save_html(charts, path, *, title: str = "bioxr charts") -> Path:
    """Write :func:`to_html` of ``charts`` to ``path``; returns the path."""
    path = Path(path)
    path.write_text(to_html(charts, title=title), encoding="utf-8")
    return path


def _in_kernel() -> bool:
    """True inside a Jupyter kernel (an IPython shell with a kernel), False in a script or a plain IPython."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    try:
        shell = ipython.get_ipython()
    except Exception:  # pragma: no cover - a broken IPython install
        return False
    return shell is not None and getattr(shell, "kernel", None) is not None


def enable_offline_renderer(*, force: bool = False) -> str | None:
    """Show Altair charts in a notebook without a network: the ``svg`` renderer (vl-convert).

    Importing :mod:`bioxr.plot` in a Jupyter kernel calls this: Altair's
    ``default`` renderer loads vega from a public CDN and shows "Error
    loading script" offline. A renderer the user chose (anything but
    ``default``) is left alone unless ``force``. The ``svg`` renderer needs
    nothing beyond vl-convert, which bioxr already uses; it draws static
    charts (no tooltips). For interactive charts offline, write a page with
    :func:`to_html`.

    Parameters
    ----------
    force : bool, keyword-only
        Switch to ``svg`` even when another renderer is active.

    Returns
    -------
    str or None
        ``"svg"`` when it was enabled, None when the user's choice was kept.

    Examples
    --------
    >>> import altair as alt
    >>> from bioxr.plot import enable_offline_renderer
    >>> before = alt.renderers.active
    >>> _ = alt.renderers.enable("html")
    >>> enable_offline_renderer() is None, alt.renderers.active  # the user's choice is kept
    (True, 'html')
    >>> _ = alt.renderers.enable(before)
    """
    if not force and alt.renderers.active != "default":
        return None
    alt.renderers.enable("svg")
    return "svg"


def _enable_in_kernel() -> str | None:
    """At import: the offline renderer in a Jupyter kernel, if the user has not chosen one."""
    if not _in_kernel():
        return None
    return enable_offline_renderer()
