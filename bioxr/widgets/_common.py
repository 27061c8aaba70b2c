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



def _live_charts() -> bool:
    """Whether charts can be live Vega views in the notebook (Altair's JupyterChart needs anywidget)."""
    try:
        import anywidget  # noqa: F401
    except ImportError:
        return False
    return True


def _plain(value):
    """A param value JSON can carry (no numpy scalars, no infinities)."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, float, np.integer, np.floating)):
        value = float(value)
        if not np.isfinite(value):
            raise ValueError(f"a chart parameter must be finite, not {value}")
        return value
    return str(value)


def _built(spec: dict):
    """A chart for Altair's JupyterChart that hands back a spec already built, without validating it again.

    Altair validates a spec each time it makes or reads one (seconds for a
    2,000-point curve); the base chart was validated when bioxr.plot made it
    and the overlay layers are checked against the schema by the tests.
    JupyterChart reads the chart's variable params (to offer them as
    ``chart.params``) and its ``to_dict()``.
    """
    import altair as alt

    class _Built(alt.LayerChart):
        def to_dict(self, *args, **kwargs):
            return self._bioxr_spec

    params = [alt.VariableParameter(name=p["name"], value=p.get("value")) for p in spec.get("params", [])
              if "select" not in p and "expr" not in p and "bind" not in p]
    chart = _Built(layer=[], params=params or alt.Undefined)
    object.__setattr__(chart, "_bioxr_spec", spec)
    return chart


class _VegaView:
    """A layered Vega-Lite chart whose overlay marks follow Vega-Lite params set from the kernel.

    With anywidget installed, ``widget`` is an offline Altair
    :class:`~altair.JupyterChart` (Vega in the browser, SVG renderer): a
    move sends the new param values and Vega redraws the overlay itself,
    scales and layout included. Without anywidget, ``widget`` is an HTML
    image of the same spec rendered by vl-convert with the current values
    (slower, but still drawn by Vega). Either way :meth:`svg` renders the
    current state offline, for static output and for tests.

    Parameters
    ----------
    chart : altair.LayerChart
        The base chart (its layers keep their scales; the overlay shares them).
    overlay : list of dict
        Vega-Lite layer specs to append, reading the params by name.
    params : dict
        Initial param values (names must be valid Vega signal names).
    alt_text : str
        Description for the static image.
    live : bool, optional
        Force the JupyterChart (True) or the image (False); default: live when anywidget is installed.
    """

    def __init__(self, chart, overlay: list, params: dict, *, alt_text: str, live: bool | None = None):
        import altair as alt

        spec = chart.to_dict() if hasattr(chart, "to_dict") else dict(chart)
        spec["layer"] = list(spec["layer"]) + list(overlay)
        self.values = {k: _plain(v) for k, v in params.items()}
        spec["params"] = list(spec.get("params", [])) + [{"name": k, "value": v} for k, v in self.values.items()]
        self.spec = spec
        self.alt_text = alt_text
        self.live = _live_charts() if live is None else bool(live)
        if self.live:
            alt.JupyterChart.enable_offline()  # the Vega bundle from vl-convert: no CDN
            self.widget = alt.JupyterChart(_built(spec),
                                           embed_options={"renderer": "svg", "actions": False})
            self.widget.observe(self._keep, names="_params")
        else:
            import ipywidgets as W

            self.widget = W.HTML(self.image())

    def set(self, **values) -> None:
        """Set params; the live view redraws in the browser, the image is rendered again."""
        values = {k: _plain(v) for k, v in values.items()}
        unknown = set(values) - set(self.values)
        if unknown:
            raise KeyError(f"no chart parameter {sorted(unknown)}; known: {sorted(self.values)}")
        self.values.update(values)
        for p in self.spec["params"]:  # a view drawn later (a page reload) starts from the current state
            if p.get("name") in values:
                p["value"] = values[p["name"]]
        if self.live:
            self._send(values)
        else:
            self.widget.value = self.image()

    def _send(self, values: dict) -> None:
        with self.widget.hold_sync():
            for k, v in values.items():
                setattr(self.widget.params, k, v)

    def _keep(self, change) -> None:
        """The kernel owns the state: a view drawn again reports its spec's starting values; send ours back."""
        stale = {k: v for k, v in self.values.items() if (change["new"] or {}).get(k, v) != v}
        if stale:
            self._send(stale)

    def current_spec(self) -> dict:
        """The spec with the params at their current values."""
        return self.spec

    def svg(self) -> str:
        """The current state rendered to SVG offline (vl-convert)."""
        return plot.render_svg(self.current_spec())

    def image(self) -> str:
        """The current state as an offline ``<img>``."""
        data = base64.b64encode(self.svg().encode("utf-8")).decode("ascii")
        return (f'<img alt="{html.escape(self.alt_text)}" style="max-width:100%;height:auto" '
                f'src="data:image/svg+xml;base64,{data}">')
