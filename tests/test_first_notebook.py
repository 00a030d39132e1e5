"""What a NumPy user types in a first notebook, on nda (issue 37, "Done when").

The issue's author tried the 166 names of NumPy's everyday API a first notebook reaches for
(67 were missing at ``nda.*`` then) and 63 array methods and attributes (22 missing). Both
lists are written out here: the names missing then (as the issue lists them) and the ones
nda had. Each present name is called on cpu and on sim and compared with NumPy's function
on the same data (values, dtypes, shapes), each method likewise; at least 160 names and 60
methods must be present (today all are).
"""

from __future__ import annotations

import warnings
from types import SimpleNamespace

import numpy as np
import pytest

import nda

from test_numpy_names import same

#: Missing at ``nda.*`` when issue 37 was filed (its list, in its order).
MISSING_THEN = """
array logspace identity diag transpose swapaxes concatenate vstack hstack column_stack split array_split amin amax cumsum cumprod
median percentile quantile average nansum nanmean nanmax unique argwhere dot vdot outer inner cross trace diagonal array_equal
nan_to_num absolute power arctan2 around histogram bincount digitize ravel atleast_1d atleast_2d gradient interp convolve correlate
cov corrcoef polyfit polyval kron pad put savetxt loadtxt bool_ ndarray set_printoptions printoptions errstate angle cbrt deg2rad
radians degrees linalg.norm linalg.lstsq fft.fft2 fft.ifft2 fft.rfft2 fft.irfft2
""".split()

#: NumPy's everyday names nda had then.
PRESENT_THEN = """
zeros ones empty full zeros_like arange linspace eye asarray copy meshgrid
reshape squeeze stack flip roll tile repeat
where clip sort argsort argmax argmin nonzero
sum prod mean std var min max any all
abs sqrt exp log log10 sin cos tan floor ceil round sign maximum minimum add subtract multiply divide
square isnan logical_and logical_not equal greater less
isclose allclose matmul einsum diff
linalg.inv linalg.det linalg.solve linalg.eigh linalg.svd linalg.qr linalg.cholesky
fft.fft fft.ifft fft.rfft fft.fftfreq fft.fftshift random.default_rng
float32 float64 int32 int64 uint8 complex128 pi e inf nan newaxis save load savez finfo iinfo
""".split()

NAMES = MISSING_THEN + PRESENT_THEN

#: Array methods and attributes missing then, and present then.
METHODS_MISSING_THEN = """
cumsum cumprod swapaxes dot sort argsort nonzero fill nbytes itemsize strides real imag conj trace diagonal repeat take ptp view flat tobytes
""".split()
METHODS_PRESENT_THEN = """
T mT all any argmax argmin astype clip copy dtype flatten item max mean min ndim prod ravel reshape round shape size squeeze std sum
tolist transpose var device to_device __len__ __iter__ __getitem__ __setitem__ __matmul__ __add__ __mul__ __neg__ __abs__ __array__ __bool__
""".split()
METHODS = METHODS_MISSING_THEN + METHODS_PRESENT_THEN


def test_the_lists_are_the_issues():
    assert len(NAMES) == 166 and len(set(NAMES)) == 166
    assert len(MISSING_THEN) == 73  # the issue's 67 at nda.* (transpose and pad were added just after it) and 6 in nda.linalg/nda.fft
    assert len(METHODS) == 63 and len(set(METHODS)) == 63 and len(METHODS_MISSING_THEN) == 22
    for name in NAMES:
        assert _lookup(np, name) is not None or name in ("ndarray",), f"np.{name} does not exist"


_ABSENT = object()


def _lookup(module, name):
    """``module.<name>`` (dotted), or None when it does not exist (``newaxis`` is None: True then)."""
    obj = module
    for part in name.split("."):
        obj = getattr(obj, part, _ABSENT)
        if obj is _ABSENT:
            return None
    return True if obj is None else obj


def _data(xp, device):
    rng = np.random.default_rng(166)
    host = SimpleNamespace(
        a=rng.normal(size=(3, 4)),
        v=rng.normal(size=5),
        i=rng.integers(0, 6, size=8),
        m=np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]]),
        s=rng.normal(size=(2, 3)),
    )
    if xp is np:
        return host
    return SimpleNamespace(**{k: nda.asarray(v, device=device) for k, v in vars(host).items()})


def _printed(xp, d):
    with xp.printoptions(precision=2, suppress=True):
        return str(d.a)


def _errstate(xp, d):
    with xp.errstate(divide="ignore", invalid="ignore"):
        return xp.log(xp.abs(d.a) * 0)


def _set_printoptions(xp, d):
    before = xp.get_printoptions()
    xp.set_printoptions(precision=3)
    try:
        return str(d.v)
    finally:
        xp.set_printoptions(**{k: before[k] for k in ("precision",)})


def _savetxt_loadtxt(xp, d, tmp):
    xp.savetxt(tmp / f"{xp.__name__}.txt", d.a)
    return xp.loadtxt(tmp / f"{xp.__name__}.txt")


def _save_load(xp, d, tmp):
    path = tmp / f"{xp.__name__}.npy"
    xp.save(path, d.a)
    return xp.load(path)


def _savez(xp, d, tmp):
    path = tmp / f"{xp.__name__}.npz"
    xp.savez(path, a=d.a)
    with xp.load(path) as f:
        return f["a"]


#: name -> f(xp, d) (or f(xp, d, tmp_path)): the same call with NumPy (xp = np) and nda.
CALLS = {
    "array": lambda xp, d: xp.array([[1, 2], [3, 4]], dtype=xp.float32),
    "logspace": lambda xp, d: xp.logspace(0, 2, 5),
    "identity": lambda xp, d: xp.identity(3),
    "diag": lambda xp, d: xp.diag(d.v, 1),
    "transpose": lambda xp, d: xp.transpose(d.a),
    "swapaxes": lambda xp, d: xp.swapaxes(d.a, 0, 1),
    "concatenate": lambda xp, d: xp.concatenate([d.a, d.a], axis=1),
    "vstack": lambda xp, d: xp.vstack([d.a, d.a]),
    "hstack": lambda xp, d: xp.hstack([d.v, d.v]),
    "column_stack": lambda xp, d: xp.column_stack([d.v, d.v]),
    "split": lambda xp, d: xp.split(d.a, 2, axis=1),
    "array_split": lambda xp, d: xp.array_split(d.v, 3),
    "amin": lambda xp, d: xp.amin(d.a, axis=0),
    "amax": lambda xp, d: xp.amax(d.a),
    "cumsum": lambda xp, d: xp.cumsum(d.a),
    "cumprod": lambda xp, d: xp.cumprod(d.i, axis=0),
    "median": lambda xp, d: xp.median(d.a, axis=1),
    "percentile": lambda xp, d: xp.percentile(d.a, [10, 90]),
    "quantile": lambda xp, d: xp.quantile(d.v, 0.3),
    "average": lambda xp, d: xp.average(d.a, axis=0, weights=[1, 2, 3]),
    "nansum": lambda xp, d: xp.nansum(d.a / d.a),
    "nanmean": lambda xp, d: xp.nanmean(d.a, axis=0),
    "nanmax": lambda xp, d: xp.nanmax(d.a),
    "unique": lambda xp, d: xp.unique(d.i, return_counts=True),
    "argwhere": lambda xp, d: xp.argwhere(d.a > 0),
    "dot": lambda xp, d: xp.dot(d.a, d.a.T),
    "vdot": lambda xp, d: xp.vdot(d.v, d.v),
    "outer": lambda xp, d: xp.outer(d.v, d.v),
    "inner": lambda xp, d: xp.inner(d.a, d.a),
    "cross": lambda xp, d: xp.cross(d.s, d.s[::-1]),
    "trace": lambda xp, d: xp.trace(d.m),
    "diagonal": lambda xp, d: xp.diagonal(d.a, 1),
    "array_equal": lambda xp, d: xp.array_equal(d.a, d.a),
    "nan_to_num": lambda xp, d: xp.nan_to_num(d.v / 0.0),
    "absolute": lambda xp, d: xp.absolute(d.v),
    "power": lambda xp, d: xp.power(d.a, 2),
    "arctan2": lambda xp, d: xp.arctan2(d.v, 1.0),
    "around": lambda xp, d: xp.around(d.a, 2),
    "histogram": lambda xp, d: xp.histogram(d.a, bins=5),
    "bincount": lambda xp, d: xp.bincount(d.i),
    "digitize": lambda xp, d: xp.digitize(d.v, [-1.0, 0.0, 1.0]),
    "ravel": lambda xp, d: xp.ravel(d.a),
    "atleast_1d": lambda xp, d: xp.atleast_1d(d.v[0]),
    "atleast_2d": lambda xp, d: xp.atleast_2d(d.v),
    "gradient": lambda xp, d: xp.gradient(d.v),
    "interp": lambda xp, d: xp.interp(d.v, [-1.0, 0.0, 2.0], [0.0, 1.0, 0.5]),
    "convolve": lambda xp, d: xp.convolve(d.v, [1.0, 2.0, 1.0]),
    "correlate": lambda xp, d: xp.correlate(d.v, [1.0, 0.5], "full"),
    "cov": lambda xp, d: xp.cov(d.a),
    "corrcoef": lambda xp, d: xp.corrcoef(d.a),
    "polyfit": lambda xp, d: xp.polyfit(d.v, d.v * 2 + 1, 1),
    "polyval": lambda xp, d: xp.polyval([1.0, 2.0, 3.0], d.v),
    "kron": lambda xp, d: xp.kron(d.m, d.s),
    "pad": lambda xp, d: xp.pad(d.a, 1),
    "put": lambda xp, d: (xp.put(d.v, [0, 2], [9.0, 8.0]), d.v)[1],
    "savetxt": _savetxt_loadtxt,
    "loadtxt": _savetxt_loadtxt,
    "bool_": lambda xp, d: xp.asarray(d.v > 0, dtype=xp.bool_),
    "ndarray": lambda xp, d: isinstance(d.a, xp.ndarray),
    "set_printoptions": _set_printoptions,
    "printoptions": _printed,
    "errstate": _errstate,
    "angle": lambda xp, d: xp.angle(d.v),
    "cbrt": lambda xp, d: xp.cbrt(d.v),
    "deg2rad": lambda xp, d: xp.deg2rad(d.v),
    "radians": lambda xp, d: xp.radians(d.v),
    "degrees": lambda xp, d: xp.degrees(d.v),
    "linalg.norm": lambda xp, d: xp.linalg.norm(d.a),
    "linalg.lstsq": lambda xp, d: xp.linalg.lstsq(d.a.T, d.v[:4]),
    "fft.fft2": lambda xp, d: xp.fft.fft2(d.a),
    "fft.ifft2": lambda xp, d: xp.fft.ifft2(d.a),
    "fft.rfft2": lambda xp, d: xp.fft.rfft2(d.a),
    "fft.irfft2": lambda xp, d: xp.fft.irfft2(xp.fft.rfft2(d.a)),
    # present then
    "zeros": lambda xp, d: xp.zeros((2, 3)),
    "ones": lambda xp, d: xp.ones(3, dtype=xp.int32),
    "empty": lambda xp, d: xp.empty((2, 2)).shape,
    "full": lambda xp, d: xp.full((2,), 7.0),
    "zeros_like": lambda xp, d: xp.zeros_like(d.a),
    "arange": lambda xp, d: xp.arange(10),
    "linspace": lambda xp, d: xp.linspace(0, 1, 5),
    "eye": lambda xp, d: xp.eye(3),
    "asarray": lambda xp, d: xp.asarray([1.0, 2.0]),
    "copy": lambda xp, d: xp.copy(d.a),
    "reshape": lambda xp, d: xp.reshape(d.a, (4, 3)),
    "squeeze": lambda xp, d: xp.squeeze(xp.reshape(d.v, (1, 5))),
    "stack": lambda xp, d: xp.stack([d.v, d.v]),
    "flip": lambda xp, d: xp.flip(d.a),
    "roll": lambda xp, d: xp.roll(d.v, 2),
    "tile": lambda xp, d: xp.tile(d.v, 2),
    "repeat": lambda xp, d: xp.repeat(d.v, 2),
    "where": lambda xp, d: xp.where(d.a > 0, d.a, 0.0),
    "clip": lambda xp, d: xp.clip(d.a, -0.5, 0.5),
    "sort": lambda xp, d: xp.sort(d.a),
    "argsort": lambda xp, d: xp.argsort(d.v),
    "argmax": lambda xp, d: xp.argmax(d.a),
    "nonzero": lambda xp, d: xp.nonzero(d.a > 0),
    "sum": lambda xp, d: xp.sum(d.a, axis=0),
    "prod": lambda xp, d: xp.prod(d.v),
    "mean": lambda xp, d: xp.mean(d.a),
    "std": lambda xp, d: xp.std(d.a),
    "var": lambda xp, d: xp.var(d.v),
    "min": lambda xp, d: xp.min(d.a),
    "max": lambda xp, d: xp.max(d.a, axis=1),
    "any": lambda xp, d: xp.any(d.a > 1),
    "all": lambda xp, d: xp.all(d.a > -9),
    "matmul": lambda xp, d: xp.matmul(d.a, d.a.T),
    "einsum": lambda xp, d: xp.einsum("ij,kj->ik", d.a, d.a),
    "isclose": lambda xp, d: xp.isclose(d.v, d.v),
    "allclose": lambda xp, d: bool(xp.allclose(d.v, d.v)),
    "linalg.inv": lambda xp, d: xp.linalg.inv(d.m),
    "linalg.det": lambda xp, d: xp.linalg.det(d.m),
    "linalg.solve": lambda xp, d: xp.linalg.solve(d.m, d.m[0]),
    "linalg.eigh": lambda xp, d: tuple(xp.linalg.eigh(d.m))[0],
    "linalg.svd": lambda xp, d: tuple(xp.linalg.svd(d.m))[1],
    "linalg.qr": lambda xp, d: xp.abs(tuple(xp.linalg.qr(d.m))[1]),
    "linalg.cholesky": lambda xp, d: xp.linalg.cholesky(d.m),
    "fft.fft": lambda xp, d: xp.fft.fft(d.v),
    "fft.ifft": lambda xp, d: xp.fft.ifft(d.v),
    "fft.rfft": lambda xp, d: xp.fft.rfft(d.v),
    "fft.fftfreq": lambda xp, d: xp.fft.fftfreq(8),
    "random.default_rng": lambda xp, d: xp.random.default_rng(0).random(3).shape,
    "float32": lambda xp, d: xp.asarray(d.v, dtype=xp.float32),
    "float64": lambda xp, d: xp.asarray(d.i, dtype=xp.float64),
    "int32": lambda xp, d: xp.asarray(d.i, dtype=xp.int32),
    "int64": lambda xp, d: xp.asarray([1], dtype=xp.int64),
    "uint8": lambda xp, d: xp.asarray(d.i, dtype=xp.uint8),
    "complex128": lambda xp, d: xp.asarray(d.v, dtype=xp.complex128),
    "pi": lambda xp, d: xp.pi,
    "e": lambda xp, d: xp.e,
    "inf": lambda xp, d: xp.inf,
    "nan": lambda xp, d: xp.isnan(xp.asarray([xp.nan, 1.0])),
    "newaxis": lambda xp, d: d.v[:, xp.newaxis],
    "save": _save_load,
    "load": _save_load,
    "savez": _savez,
    "finfo": lambda xp, d: float(xp.finfo(xp.float32).eps),
    "iinfo": lambda xp, d: int(xp.iinfo(xp.int8).max),
    "sqrt": lambda xp, d: xp.sqrt(xp.abs(d.v)),
    "log": lambda xp, d: xp.log(xp.abs(d.v)),
    "log10": lambda xp, d: xp.log10(xp.abs(d.v)),
    "add": lambda xp, d: xp.add(d.v, 1.0),
    "subtract": lambda xp, d: xp.subtract(d.v, d.v),
    "multiply": lambda xp, d: xp.multiply(d.a, 3.0),
    "divide": lambda xp, d: xp.divide(d.a, 4.0),
    "maximum": lambda xp, d: xp.maximum(d.v, 0.0),
    "minimum": lambda xp, d: xp.minimum(d.v, 0.0),
    "logical_and": lambda xp, d: xp.logical_and(d.v > 0, d.v < 1),
    "logical_not": lambda xp, d: xp.logical_not(d.v > 0),
    "equal": lambda xp, d: xp.equal(d.i, 2),
    "greater": lambda xp, d: xp.greater(d.v, 0.0),
    "less": lambda xp, d: xp.less(d.v, 0.0),
    "round": lambda xp, d: xp.round(d.a),
    "sign": lambda xp, d: xp.sign(d.v),
    "meshgrid": lambda xp, d: xp.meshgrid(d.v, d.v[:3]),
    "diff": lambda xp, d: xp.diff(d.v),
    "fft.fftshift": lambda xp, d: xp.fft.fftshift(d.v),
    "argmin": lambda xp, d: xp.argmin(d.v),
}
for _name in ("abs", "exp", "sin", "cos", "tan", "floor", "ceil", "square", "isnan"):
    CALLS[_name] = (lambda n: lambda xp, d: getattr(xp, n)(d.v))(_name)


def test_every_name_has_a_call():
    assert set(CALLS) == set(NAMES), sorted(set(NAMES) ^ set(CALLS))


def _present() -> list[str]:
    return [n for n in NAMES if _lookup(nda, n) is not None]


def test_at_least_160_of_the_166_names_are_present():
    present = _present()
    assert len(present) >= 160, sorted(set(NAMES) - set(present))
    assert len(present) == 166, sorted(set(NAMES) - set(present))  # all of them, today


def _call(fn, xp, d, tmp_path):
    return fn(xp, d, tmp_path) if fn.__code__.co_argcount == 3 else fn(xp, d)


@pytest.mark.parametrize("device", ["cpu", "sim"])
@pytest.mark.parametrize("name", NAMES)
def test_each_name_runs_on_the_device_as_numpy_computes(name, device, tmp_path):
    if _lookup(nda, name) is None:
        pytest.skip(f"nda.{name} is missing")
    fn = CALLS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        expected = _call(fn, np, _data(np, device), tmp_path)
        with nda.Device(device, 0):  # what a function creates goes to the device too
            got = _call(fn, nda, _data(nda, device), tmp_path)
    for item in got if isinstance(got, (tuple, list)) else (got,):
        if isinstance(item, nda.NDArray):
            assert item.device.type == device, f"nda.{name} gave an array on {item.device}"
    same(got, expected, exact=False, rtol=1e-12, atol=1e-12)


#: method -> f(x) on an nda array and on a NumPy array of the same data (or a pair of them, where NumPy spells it otherwise).
METHOD_CALLS = {
    "cumsum": lambda x: x.cumsum(),
    "cumprod": lambda x: x.cumprod(axis=1),
    "swapaxes": lambda x: x.swapaxes(0, 1),
    "dot": lambda x: x.dot(x.T),
    "sort": lambda x: (x.sort(axis=0), x)[1],
    "argsort": lambda x: x.argsort(),
    "nonzero": lambda x: (x > 0).nonzero(),
    "fill": lambda x: (x.fill(1.5), x)[1],
    "nbytes": lambda x: x.nbytes,
    "itemsize": lambda x: x.itemsize,
    "strides": lambda x: x.strides,
    "real": lambda x: x.real,
    "imag": lambda x: x.imag,
    "conj": lambda x: x.conj(),
    "trace": lambda x: x.trace(),
    "diagonal": lambda x: x.diagonal(1),
    "repeat": lambda x: x.repeat(2, axis=0),
    "take": lambda x: x.take([0, 5, 7]),
    "ptp": (lambda x: x.ptp(axis=0), lambda x: np.ptp(x, axis=0)),
    "view": lambda x: x.view(np.int64 if isinstance(x, np.ndarray) else nda.int64),
    "flat": lambda x: list(x.flat),
    "tobytes": lambda x: x.tobytes(),
    "T": lambda x: x.T,
    "mT": lambda x: x.mT,
    "all": lambda x: x.all(),
    "any": lambda x: (x > 0).any(axis=0),
    "argmax": lambda x: x.argmax(axis=1),
    "argmin": lambda x: x.argmin(),
    "astype": lambda x: x.astype(np.float32 if isinstance(x, np.ndarray) else nda.float32),
    "clip": lambda x: x.clip(-0.5, 0.5),
    "copy": lambda x: x.copy(),
    "dtype": lambda x: str(x.dtype),
    "flatten": lambda x: x.flatten(),
    "item": lambda x: x[0, 0].item(),
    "max": lambda x: x.max(axis=0),
    "mean": lambda x: x.mean(1),
    "min": lambda x: x.min(),
    "ndim": lambda x: x.ndim,
    "prod": lambda x: x.prod(),
    "ravel": lambda x: x.ravel(),
    "reshape": lambda x: x.reshape(4, 3),
    "round": lambda x: x.round(2),
    "shape": lambda x: x.shape,
    "size": lambda x: x.size,
    "squeeze": lambda x: x.reshape(1, 12, 1).squeeze(),
    "std": lambda x: x.std(ddof=1),
    "sum": lambda x: x.sum(axis=1),
    "tolist": lambda x: x.tolist(),
    "transpose": lambda x: x.transpose(),
    "var": lambda x: x.var(0),
    "device": (lambda x: x.device.type in ("cpu", "sim"), lambda x: x.device == "cpu"),
    "to_device": (lambda x: x.to_device("cpu"), lambda x: x.to_device("cpu")),
    "__len__": lambda x: len(x),
    "__iter__": lambda x: list(iter(x)),
    "__getitem__": lambda x: x[1:, ::2],
    "__setitem__": lambda x: (x.__setitem__((0, 1), 5.0), x)[1],
    "__matmul__": lambda x: x @ x.T,
    "__add__": lambda x: x + 1.0,
    "__mul__": lambda x: x * x,
    "__neg__": lambda x: -x,
    "__abs__": lambda x: abs(x),
    "__array__": lambda x: np.asarray(x).sum(),
    "__bool__": lambda x: bool(x[0, 0] > 0),
}


def test_every_method_has_a_call_and_at_least_60_are_present():
    assert set(METHOD_CALLS) == set(METHODS)
    present = [m for m in METHODS if hasattr(nda.NDArray, m)]
    assert len(present) >= 60, sorted(set(METHODS) - set(present))
    assert len(present) == 63, sorted(set(METHODS) - set(present))


@pytest.mark.parametrize("device", ["cpu", "sim"])
@pytest.mark.parametrize("method", METHODS)
def test_each_method_runs_on_the_device_as_numpy_computes(method, device):
    if not hasattr(nda.NDArray, method):
        pytest.skip(f"NDArray.{method} is missing")
    h = np.random.default_rng(63).normal(size=(3, 4))
    calls = METHOD_CALLS[method]
    nda_call, np_call = calls if isinstance(calls, tuple) else (calls, calls)
    expected = np_call(h.copy())
    got = nda_call(nda.asarray(h, device=device, copy=True))
    for item in got if isinstance(got, (tuple, list)) else (got,):
        if isinstance(item, nda.NDArray) and method != "to_device":
            assert item.device.type == device
    same(got, expected, exact=False, rtol=1e-12, atol=1e-12)
