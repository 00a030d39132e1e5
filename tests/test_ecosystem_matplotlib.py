"""matplotlib draws an nda array as it draws the NumPy array with the same values.

Every plotting call below runs twice, on NumPy input and on the same values as nda arrays
(cpu and sim; 1-d and 2-d input), each on a fresh Agg figure; the two must give the same
artists (kind, count, data, axis limits) and the same pixels. matplotlib unpacks its input
with ``cbook._unpack_to_numpy``, which knows NumPy arrays and objects with ``to_numpy()``;
anything else with ``len()`` and iteration is taken for a list of datasets, so a 2-d nda
array used to be drawn as one dataset per *row* by ``hist``, ``boxplot`` and
``violinplot`` (200 boxes where NumPy draws 3). ``NDArray.to_numpy()`` (README
"Ecosystem") makes matplotlib see the NumPy array ``np.asarray(x)`` gives.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest

import nda

matplotlib = pytest.importorskip("matplotlib")
from matplotlib.artist import Artist  # noqa: E402
from matplotlib.axis import Axis  # noqa: E402
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.text import Text  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::nda.FallbackWarning")

DEVICES = ["cpu", "sim"]

_RNG = np.random.default_rng(38)
#: The NumPy data every call draws: 1-d vectors, a (rows, 3) matrix of columns with
#: different spreads (one dataset per column), a small grid for images and contours.
DATA = {
    "x": np.linspace(0.0, 4.0, 24),
    "v": _RNG.normal(size=24),
    "w": _RNG.normal(size=24) + 1.0,
    "pos": _RNG.uniform(0.5, 2.0, size=24),
    "M": _RNG.normal(size=(24, 3)) * np.array([1.0, 2.0, 0.5]) + np.array([0.0, 3.0, -2.0]),
    "Z": np.sin(np.linspace(0, 3, 7))[:, None] * np.cos(np.linspace(0, 2, 9))[None, :],
    "i": np.arange(24),
}

#: name -> a call on an Axes and the data (a dict of arrays of DATA, NumPy or nda).
PLOTS: dict[str, Callable[[Any, dict[str, Any]], Any]] = {
    "plot 1-d": lambda ax, d: ax.plot(d["v"]),
    "plot x, y": lambda ax, d: ax.plot(d["x"], d["v"], "o-"),
    "plot 2-d": lambda ax, d: ax.plot(d["M"]),
    "plot x, 2-d": lambda ax, d: ax.plot(d["x"], d["M"]),
    "scatter": lambda ax, d: ax.scatter(d["x"], d["v"], s=d["pos"] * 20, c=d["w"]),
    "hist 1-d": lambda ax, d: ax.hist(d["v"], bins=6),
    "hist 2-d": lambda ax, d: ax.hist(d["M"], bins=6),
    "hist 2-d stacked": lambda ax, d: ax.hist(d["M"], bins=5, stacked=True, weights=d["M"] * 0 + 2),
    "hist int": lambda ax, d: ax.hist(d["i"], bins=4),
    "hist2d": lambda ax, d: ax.hist2d(d["v"], d["w"], bins=4),
    "boxplot 1-d": lambda ax, d: ax.boxplot(d["v"]),
    "boxplot 2-d": lambda ax, d: ax.boxplot(d["M"]),
    "violinplot 1-d": lambda ax, d: ax.violinplot(d["v"]),
    "violinplot 2-d": lambda ax, d: ax.violinplot(d["M"], showmedians=True),
    "imshow": lambda ax, d: ax.imshow(d["Z"]),
    "imshow rgb": lambda ax, d: ax.imshow(
        np.clip(d["M"][:12].reshape(4, 3, 3) / 4 + 0.5, 0, 1)
        if isinstance(d["M"], np.ndarray)
        else nda.clip(nda.reshape(d["M"][:12], (4, 3, 3)) / 4 + 0.5, 0, 1)
    ),
    "matshow": lambda ax, d: ax.matshow(d["Z"]),
    "pcolormesh": lambda ax, d: ax.pcolormesh(d["Z"]),
    "pcolor": lambda ax, d: ax.pcolor(d["Z"]),
    "contour": lambda ax, d: ax.contour(d["Z"], levels=4),
    "contourf": lambda ax, d: ax.contourf(d["Z"], levels=4),
    "bar": lambda ax, d: ax.bar(d["x"], d["v"], width=0.1, yerr=d["pos"] / 4),
    "barh": lambda ax, d: ax.barh(d["i"], d["w"]),
    "grouped_bar 2-d": lambda ax, d: ax.grouped_bar(d["M"][:4]),
    "errorbar": lambda ax, d: ax.errorbar(d["x"], d["v"], yerr=d["pos"] / 3, xerr=d["pos"] / 9),
    "fill_between": lambda ax, d: ax.fill_between(d["x"], d["v"], d["w"]),
    "fill_betweenx": lambda ax, d: ax.fill_betweenx(d["x"], d["v"]),
    "stairs": lambda ax, d: ax.stairs(d["v"][:-1], d["x"]),
    "step": lambda ax, d: ax.step(d["x"], d["v"]),
    "stem": lambda ax, d: ax.stem(d["x"], d["v"]),
    "stackplot 2-d": lambda ax, d: ax.stackplot(d["x"], d["M"].T),
    "eventplot": lambda ax, d: ax.eventplot(d["v"]),
    "ecdf": lambda ax, d: ax.ecdf(d["v"]),
    "pie": lambda ax, d: ax.pie(d["pos"][:5]),
    "hexbin": lambda ax, d: ax.hexbin(d["v"], d["w"], gridsize=4),
    "quiver": lambda ax, d: ax.quiver(d["Z"], d["Z"].T.T * 0.5),
    "axhline, set_ylim": lambda ax, d: (ax.plot(d["x"], d["v"]), ax.axhline(d["v"][3]), ax.set_ylim(d["v"][0], d["w"][1])),
    "set_xticks": lambda ax, d: (ax.plot(d["x"], d["v"]), ax.set_xticks(d["x"][::6])),
    "plot 2-d, 2-d": lambda ax, d: ax.plot(d["M"] * 2, d["M"]),
    "scatter 2-d": lambda ax, d: ax.scatter(d["M"], d["M"] * 2),
    "errorbar yerr (2, n)": lambda ax, d: ax.errorbar(d["x"], d["v"], yerr=d["M"][:, :2].T ** 2),
    "eventplot 2-d": lambda ax, d: ax.eventplot(d["M"].T),
    "boxplot 2-d, positions": lambda ax, d: ax.boxplot(d["M"], positions=d["x"][:3] * 2, widths=0.5),
    "violinplot 2-d, positions": lambda ax, d: ax.violinplot(d["M"], positions=d["x"][:3] * 2),
    "contour x, y, z": lambda ax, d: ax.contour(d["x"][:9], d["x"][:7] * 2, d["Z"], levels=3),
    "pcolormesh x, y, c": lambda ax, d: ax.pcolormesh(d["x"][:10], d["x"][:8], d["Z"]),
}


def _nda_data(device: str) -> dict[str, Any]:
    return {name: nda.asarray(value, device=device) for name, value in DATA.items()}


def _summary(value: Any) -> Any:
    """A comparable form of a plotting call's return value (arrays as NumPy, artists by kind)."""
    if isinstance(value, Artist):
        return type(value).__name__
    if isinstance(value, dict):
        return {k: _summary(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)) and not isinstance(value, str):
        return [type(value).__name__, [_summary(v) for v in value]]
    if isinstance(value, (np.ndarray, nda.NDArray)):
        host = np.asarray(value)
        return ("array", host.dtype.str, host.tolist())
    if hasattr(value, "__dict__"):  # matplotlib's result objects (a pie's, grouped_bar's)
        return [type(value).__name__, _summary(vars(value))]
    return repr(value)


def _artist_data(artist: Artist) -> list[Any]:
    """What an artist draws: its kind and its data (lines, offsets, paths, colours, images, text)."""
    data: list[Any] = [type(artist).__name__, artist.get_visible()]
    for getter in ("get_xydata", "get_offsets", "get_array", "get_facecolor", "get_sizes"):
        method = getattr(artist, getter, None)
        if method is not None:
            value = method()
            data.append(None if value is None else np.ma.filled(np.asarray(value), np.nan).tolist())
    if isinstance(artist, Text):
        data.append((artist.get_text(), artist.get_position()))
    if hasattr(artist, "get_paths"):
        data.append([p.vertices.tolist() for p in artist.get_paths()])
    elif hasattr(artist, "get_verts"):
        data.append(np.asarray(artist.get_verts()).tolist())
    return data


def _artists(artist: Artist) -> list[Any]:
    out = []
    for child in artist.get_children():
        if isinstance(child, Axis):
            continue  # ticks and labels: the limits and the pixels cover them
        out.append(_artist_data(child))
        out.extend(_artists(child))
    return out


def _draw(call: Callable[[Any, dict[str, Any]], Any], data: dict[str, Any]) -> tuple[Any, list[Any], tuple, np.ndarray]:
    fig = Figure(figsize=(2.4, 1.8), dpi=40)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    returned = _summary(call(ax, data))
    fig.canvas.draw()
    pixels = np.asarray(fig.canvas.buffer_rgba()).copy()
    return returned, _artists(ax), (ax.get_xlim(), ax.get_ylim()), pixels


_EXPECTED: dict[str, tuple] = {}


def _numpy_drawing(name: str) -> tuple:
    if name not in _EXPECTED:
        _EXPECTED[name] = _draw(PLOTS[name], DATA)
    return _EXPECTED[name]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", list(PLOTS))
def test_plot_of_nda_input_is_the_plot_of_numpy_input(name, device):
    returned, artists, limits, pixels = _draw(PLOTS[name], _nda_data(device))
    np_returned, np_artists, np_limits, np_pixels = _numpy_drawing(name)
    assert len(artists) == len(np_artists), f"{name}: {len(artists)} artists, NumPy's drawing has {len(np_artists)}"
    assert [a[0] for a in artists] == [a[0] for a in np_artists]
    for mine, numpys in zip(artists, np_artists):
        assert mine == numpys, f"{name}: the {mine[0]} differs from NumPy's"
    assert limits == np_limits
    assert returned == np_returned
    assert pixels.shape == np_pixels.shape and np.array_equal(pixels, np_pixels), (
        f"{name}: {int((pixels != np_pixels).any(axis=-1).sum())} pixels differ from NumPy's drawing"
    )


@pytest.mark.parametrize("device", DEVICES)
def test_hist_boxplot_violinplot_of_a_matrix_draw_one_dataset_per_column(device):
    M = nda.asarray(_RNG.normal(size=(200, 3)), device=device)
    fig = Figure()
    ax = fig.add_subplot()
    counts, _, bars = ax.hist(M)
    assert np.asarray(counts).shape == (3, 10) and len(bars) == 3
    assert len(ax.boxplot(M)["boxes"]) == 3
    assert len(ax.violinplot(M)["bodies"]) == 3
