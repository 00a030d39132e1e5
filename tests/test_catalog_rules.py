"""Every op's declared shape/dtype rule must match what its kernel produces.

An engine creates an op's output before the kernel runs, from the planner's shape and
dtype. If the two ever disagreed, a deferred or threaded engine would hand out arrays
whose metadata lies. These tests run representative calls of every catalog op under the
deferred engine (so metadata is fixed before any kernel runs) and compare the metadata
with the buffer that the cpu kernel produced.
"""

from __future__ import annotations

import numpy as np
import pytest

import nda
from nda.ops import CATALOG


@pytest.fixture(scope="module")
def deferred():
    previous = nda.engine.current().name
    nda.engine.use("deferred")
    yield
    nda.engine.use(previous)


def _check(result: nda.NDArray | tuple[nda.NDArray, ...]) -> None:
    if isinstance(result, tuple):  # several outputs (qr, unique_all, nonzero): each must agree
        for item in result:
            _check(item)
        return
    nda.waitall()
    buf = result._buf
    assert isinstance(buf, np.ndarray), f"cpu kernels must return numpy arrays, got {type(buf).__name__}"
    assert buf.shape == result.shape, f"planned shape {result.shape}, kernel produced {buf.shape}"
    assert buf.dtype == result.dtype.numpy, f"planned dtype {result.dtype}, kernel produced {buf.dtype}"


ELEMENTWISE = [(name, dt) for name, d in sorted(CATALOG.items()) if d.family in ("unary", "binary") for dt in d.supported_dtypes]


SHAPE_PAIRS = [((2, 3), (2, 3)), ((), ()), ((), (3,)), ((2, 1), (1, 3)), ((0,), (1,))]


@pytest.mark.parametrize(("name", "dtype"), ELEMENTWISE, ids=[f"{n}-{d.name}" for n, d in ELEMENTWISE])
def test_elementwise_metadata_matches_kernel(deferred, name, dtype):
    decl = CATALOG[name]
    fn = getattr(nda, name)
    for s1, s2 in SHAPE_PAIRS:
        x1 = nda.asarray(_values(s1, dtype), copy=True)  # nda's own memory: NumPy's would run its ops at once
        if decl.family == "unary":
            _check(fn(x1))
            continue
        _check(fn(x1, nda.asarray(_values(s2, dtype), copy=True)))
        for other in decl.supported_dtypes:  # mixed dtypes: casts are inserted
            if nda.result_type(dtype, other) not in decl.supported_dtypes and decl.dtypes not in ("floating", "real floating"):
                with pytest.raises(TypeError, match=f"{name}.. does not support dtype"):
                    fn(x1, nda.asarray(_values(s2, other), copy=True))  # e.g. int8 & uint64 promotes to float64
                continue
            _check(fn(x1, nda.asarray(_values(s2, other), copy=True)))
        for scalar in (True, 1, 1.5, 1j):
            try:
                result = fn(x1, scalar)
            except (TypeError, OverflowError):
                continue  # the scalar's kind does not fit this op; the planner said so
            _check(result)


def _values(shape: tuple[int, ...], dtype: nda.DType) -> np.ndarray:
    """Small positive values: valid for every op (shifts, powers, logs) and every dtype."""
    return (np.arange(int(np.prod(shape))).reshape(shape) % 3 + 1).astype(dtype.numpy)


CALLS = {
    "sum": [lambda x: nda.sum(x), lambda x: nda.sum(x, axis=0, keepdims=True), lambda x: nda.sum(x, dtype=nda.complex128)],
    "prod": [lambda x: nda.prod(x, axis=-1)],
    "mean": [lambda x: nda.mean(x, axis=(0, 1))],
    "std": [lambda x: nda.std(x, correction=1)],
    "var": [lambda x: nda.var(x, axis=1, keepdims=True)],
    "min": [lambda x: nda.min(x, axis=0)],
    "max": [lambda x: nda.max(x)],
    "argmin": [lambda x: nda.argmin(x), lambda x: nda.argmin(x, axis=1, keepdims=True)],
    "argmax": [lambda x: nda.argmax(x, axis=0)],
    "all": [lambda x: nda.all(x, axis=1)],
    "any": [lambda x: nda.any(x)],
    "cumulative_sum": [lambda x: nda.cumulative_sum(x, axis=1, include_initial=True)],
    "reshape": [lambda x: nda.reshape(x, (-1,)), lambda x: nda.reshape(x, (3, 2, 1), copy=True)],
    "permute_dims": [lambda x: nda.permute_dims(x, (1, 0))],
    "concat": [lambda x: nda.concat([x, x], axis=1), lambda x: nda.concat([x, x], axis=None)],
    "stack": [lambda x: nda.stack([x, x], axis=-1)],
    "expand_dims": [lambda x: nda.expand_dims(x, axis=-1)],
    "squeeze": [lambda x: nda.squeeze(nda.expand_dims(x, axis=0), axis=0)],
    "flip": [lambda x: nda.flip(x, axis=1)],
    "roll": [lambda x: nda.roll(x, 1), lambda x: nda.roll(x, (1, -1), axis=(0, 1))],
    "broadcast_to": [lambda x: nda.broadcast_to(x, (4, 2, 3))],
    "matmul": [lambda x: x @ nda.permute_dims(x, (1, 0)), lambda x: nda.matmul(x[0], nda.permute_dims(x, (1, 0)))],
    "tensordot": [lambda x: nda.tensordot(x, x, axes=([0, 1], [0, 1])), lambda x: nda.tensordot(x, x, axes=0)],
    "vecdot": [lambda x: nda.vecdot(x, x), lambda x: nda.vecdot(x, x, axis=0)],
    "where": [lambda x: nda.where(nda.ones(x.shape, dtype=nda.bool), x, x)],
    "sort": [lambda x: nda.sort(x, axis=0, descending=True)],
    "argsort": [lambda x: nda.argsort(x)],
    "astype": [lambda x: nda.astype(x, nda.complex128)],
    "getitem": [lambda x: x[1], lambda x: x[:, ::2], lambda x: x[None, ..., 0], lambda x: x[nda.asarray([0, 1, 0])]],
    "zeros_like": [lambda x: nda.zeros_like(x)],
    "einsum": [lambda x: nda.einsum("ij->ji", x), lambda x: nda.einsum("ij,kj", x, x), lambda x: nda.einsum("ij->", x)],
    "ones_like": [lambda x: nda.ones_like(x, dtype=nda.int8)],
    "empty_like": [lambda x: nda.empty_like(x)],
    "full_like": [lambda x: nda.full_like(x, 1)],
    "cumulative_prod": [lambda x: nda.cumulative_prod(x, axis=0), lambda x: nda.cumulative_prod(x[0], include_initial=True)],
    "clip": [lambda x: nda.clip(x, x[0], None), lambda x: nda.clip(x, max=x[:, :1])],
    "nonzero": [lambda x: nda.nonzero(x)],
    "count_nonzero": [lambda x: nda.count_nonzero(x), lambda x: nda.count_nonzero(x, axis=1, keepdims=True)],
    "searchsorted": [lambda x: nda.searchsorted(nda.sort(x[0]), x), lambda x: nda.searchsorted(x[0], x[1, 1], side="right")],
    "unique_values": [lambda x: nda.unique_values(x)],
    "unique_counts": [lambda x: nda.unique_counts(x)],
    "unique_inverse": [lambda x: nda.unique_inverse(x)],
    "unique_all": [lambda x: nda.unique_all(x)],
    "isin": [lambda x: nda.isin(x, x[0]), lambda x: nda.isin(x, x[0, 0], invert=True)],
    "take": [lambda x: nda.take(x, nda.asarray([2, 0, 2]), axis=1), lambda x: nda.take(x[0], nda.asarray([-1]))],
    "take_along_axis": [lambda x: nda.take_along_axis(x, nda.asarray([[0], [2]]), axis=1)],
    "tile": [lambda x: nda.tile(x, (2,)), lambda x: nda.tile(x, (2, 1, 3))],
    "repeat": [lambda x: nda.repeat(x, 2), lambda x: nda.repeat(x, nda.asarray([1, 0, 2]), axis=1)],
    "tril": [lambda x: nda.tril(x), lambda x: nda.tril(x, k=1)],
    "triu": [lambda x: nda.triu(x, k=-1)],
    "linalg.cholesky": [lambda x: nda.linalg.cholesky(_spd(x))],
    "linalg.inv": [lambda x: nda.linalg.inv(_spd(x))],
    "linalg.matrix_power": [lambda x: nda.linalg.matrix_power(x[:, :2], 3)],
    "linalg.pinv": [lambda x: nda.linalg.pinv(x)],
    "linalg.det": [lambda x: nda.linalg.det(_spd(x))],
    "linalg.slogdet": [lambda x: nda.linalg.slogdet(_spd(x))],
    "linalg.trace": [lambda x: nda.linalg.trace(x), lambda x: nda.linalg.trace(x, offset=1)],
    "linalg.diagonal": [lambda x: nda.linalg.diagonal(x), lambda x: nda.linalg.diagonal(x, offset=-1)],
    "linalg.matrix_rank": [lambda x: nda.linalg.matrix_rank(x)],
    "linalg.matrix_norm": [lambda x: nda.linalg.matrix_norm(x), lambda x: nda.linalg.matrix_norm(x, ord=2, keepdims=True)],
    "linalg.vector_norm": [lambda x: nda.linalg.vector_norm(x), lambda x: nda.linalg.vector_norm(x, axis=0, ord=1)],
    "linalg.svdvals": [lambda x: nda.linalg.svdvals(x)],
    "linalg.eigvalsh": [lambda x: nda.linalg.eigvalsh(_spd(x))],
    "linalg.eigvals": [lambda x: nda.linalg.eigvals(_spd(x))],
    "linalg.eigh": [lambda x: nda.linalg.eigh(_spd(x))],
    "linalg.eig": [lambda x: nda.linalg.eig(_spd(x))],
    "linalg.qr": [lambda x: nda.linalg.qr(x), lambda x: nda.linalg.qr(x, mode="complete")],
    "linalg.svd": [lambda x: nda.linalg.svd(x), lambda x: nda.linalg.svd(x, full_matrices=False)],
    "linalg.solve": [lambda x: nda.linalg.solve(_spd(x), x[0, :2]), lambda x: nda.linalg.solve(_spd(x), x[:, :2])],
    "linalg.cross": [lambda x: nda.linalg.cross(x, x[0])],
    "linalg.outer": [lambda x: nda.linalg.outer(x[0], x[1, :2])],
    "fft.fft": [lambda x: nda.fft.fft(x), lambda x: nda.fft.fft(x, n=5, axis=0)],
    "fft.ifft": [lambda x: nda.fft.ifft(x, norm="ortho")],
    "fft.fftn": [lambda x: nda.fft.fftn(x), lambda x: nda.fft.fftn(x, s=(3, 2))],
    "fft.ifftn": [lambda x: nda.fft.ifftn(x, axes=(0,))],
    "fft.rfft": [lambda x: nda.fft.rfft(x), lambda x: nda.fft.rfft(x, n=6, axis=0)],
    "fft.irfft": [lambda x: nda.fft.irfft(x), lambda x: nda.fft.irfft(x, n=5)],
    "fft.hfft": [lambda x: nda.fft.hfft(x)],
    "fft.ihfft": [lambda x: nda.fft.ihfft(x, norm="forward")],
    "fft.rfftn": [lambda x: nda.fft.rfftn(x), lambda x: nda.fft.rfftn(x, s=(4, 4))],
    "fft.irfftn": [lambda x: nda.fft.irfftn(x), lambda x: nda.fft.irfftn(x, s=(2, 5))],
}


def _spd(x: nda.NDArray) -> nda.NDArray:
    """A well-conditioned square (Hermitian positive-definite) matrix of x's dtype."""
    square = x[:, :2]
    return square @ nda.matrix_transpose(nda.conj(square) if x.dtype.category == "complex floating" else square) + nda.eye(2, dtype=x.dtype) * 3


CREATION = [
    lambda: nda.zeros((2, 0)),
    lambda: nda.ones(3, dtype=nda.uint8),
    lambda: nda.empty((1, 2)),
    lambda: nda.full((2,), 1.5),
    lambda: nda.full((2,), 1, dtype=nda.int16),
    lambda: nda.arange(5),
    lambda: nda.arange(0.0, 1.0, 0.1),
    lambda: nda.arange(10, 0, -3),
    lambda: nda.linspace(0, 1, 7),
    lambda: nda.linspace(0, 1, 4, endpoint=False, dtype=nda.float32),
    lambda: nda.eye(3, 4, k=-1),
    lambda: nda.asarray([[1, 2], [3, 4]]),
    lambda: nda.asarray(1.5),
    lambda: nda.asarray([True]),
    lambda: nda.random.philox_uniform((2, 3), key=(1, 2)),
    lambda: nda.random.philox_uniform((), key=(1, 2), dtype=nda.float32),
    lambda: nda.random.philox_normal((5,), key=(1, 2), counter=7),
    lambda: nda.random.philox_normal((3, 0), key=(1, 2), dtype=nda.float32),
    lambda: nda.random.philox_exponential((1, 3), key=(1, 2), dtype=nda.float32),
    lambda: nda.random.philox_integers((7,), key=(1, 2), low=-3, high=3, dtype=nda.int8),
    lambda: nda.random.philox_integers((2, 2), key=(1, 2), low=0, high=2**64, dtype=nda.uint64),
    lambda: nda.random.philox_gamma((2, 3), key=(1, 2), alpha=0.5, dtype=nda.float32),
    lambda: nda.random.philox_gamma((3,), key=(1, 2), alpha=nda.asarray([1.0, 2.0, 3.0], copy=True), scale=2.0),
    lambda: nda.random.philox_beta((4,), key=(1, 2), a=0.5, b=2.0),
    lambda: nda.random.philox_standard_t((), key=(1, 2), df=3.0),
    lambda: nda.random.philox_lognormal((2, 0), key=(1, 2), dtype=nda.float32),
    lambda: nda.random.philox_poisson((5,), key=(1, 2), lam=4.0),
    lambda: nda.random.philox_poisson((2,), key=(1, 2), lam=30.0, dtype=nda.uint8),
    lambda: nda.random.philox_binomial((3, 2), key=(1, 2), n=50, p=0.3, dtype=nda.int16),
]


def test_every_catalog_op_is_covered_here():
    covered = set(CALLS) | {"zeros", "ones", "empty", "full", "arange", "linspace", "eye", "asarray", "setitem"}
    covered |= {"random.philox_uniform", "random.philox_normal", "random.philox_exponential", "random.philox_integers"}  # CREATION
    covered |= {f"random.philox_{name}" for name in ("gamma", "beta", "standard_t", "lognormal", "poisson", "binomial")}  # CREATION
    covered |= {n for n, d in CATALOG.items() if d.family in ("unary", "binary")}
    assert covered == set(CATALOG), f"ops without a metadata check: {sorted(set(CATALOG) - covered)}"


@pytest.mark.parametrize("name", sorted(CALLS))
def test_generic_metadata_matches_kernel(deferred, name):
    decl = CATALOG[name]
    for dtype in decl.supported_dtypes:
        host = (np.arange(6).reshape(2, 3) % 3).astype(dtype.numpy)
        for call in CALLS[name]:
            _check(call(nda.asarray(host, copy=True)))  # not NumPy's memory: no op runs at its call


@pytest.mark.parametrize("index", range(len(CREATION)))
def test_creation_metadata_matches_kernel(deferred, index):
    _check(CREATION[index]())
