"""nda.einsum: NumPy's rules (subscripts, ellipsis, implicit output, diagonals, optimize), on cpu,
sim and the cuda mirror, its gradient against finite differences, and np.einsum on nda arrays."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nda

sim_installed = any(rec["name"] == "sim" and rec["state"] != "excluded" for rec in nda.backends.status())
DEVICES = ["cpu"] + (["sim"] if sim_installed else [])


@pytest.fixture(autouse=True)
def _no_fallback():
    """einsum has a kernel on every device tested here: a host fallback would be a bug."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", nda.FallbackWarning)
        yield


def arrays(shapes, dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind in "iu":
        return [rng.integers(-5, 6, s).astype(dtype) for s in shapes]
    out = [rng.standard_normal(s).astype(dtype) for s in shapes]
    if np.dtype(dtype).kind == "c":
        out = [a + 1j * rng.standard_normal(s) for a, s in zip(out, shapes)]
    return out


CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),
    ("ij, jk", [(2, 3), (3, 4)]),
    ("i,i", [(5,), (5,)]),
    ("i,j->ij", [(3,), (4,)]),
    ("ii", [(3, 3)]),
    ("ii->i", [(4, 4)]),
    ("ij->ji", [(2, 3)]),
    ("ij->", [(2, 3)]),
    ("ijk->kji", [(2, 3, 4)]),
    ("...ij,...jk", [(5, 2, 3), (1, 3, 4)]),
    ("i...->...", [(3, 2, 5)]),
    ("...,...", [(3,), (2, 1)]),
    ("ij...,jk...", [(2, 3, 6), (3, 4, 6)]),
    ("bij,bjk->bik", [(4, 2, 3), (4, 3, 2)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("Ba,bA", [(2, 3), (3, 2)]),
    ("iij->j", [(3, 3, 2)]),
    ("", [()]),
    (",i->i", [(), (4,)]),
    ("ij,jk->ik", [(2, 3), (1, 4)]),
    ("ij,ij->", [(2, 3), (2, 1)]),
    ("ij->j...", [(2, 3)]),
    ("ij,jk->ik", [(0, 3), (3, 4)]),
    ("ijk,ijk->ij", [(2, 0, 3), (2, 0, 3)]),
    ("abc,cd,de->abe", [(2, 2, 3), (3, 4), (4, 2)]),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("spec, shapes", CASES, ids=[f"{s or 'scalar'}:{shapes}" for s, shapes in CASES])
def test_einsum_matches_numpy(spec, shapes, device):
    for seed in (0, 1):  # two calls with different values
        host = arrays(shapes, seed=seed)
        got = nda.einsum(spec, *[nda.asarray(a, device=device) for a in host])
        want = np.einsum(spec, *host)
        assert got.shape == want.shape and got.device == nda.Device(device)
        np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("optimize", [False, True, "greedy", "optimal", ["einsum_path", (0, 1), (0, 1)]])
def test_optimize_follows_numpy(optimize, device):
    host = arrays([(3, 4), (4, 5), (5, 2)])
    got = nda.einsum("ij,jk,kl->il", *[nda.asarray(a, device=device) for a in host], optimize=optimize)
    np.testing.assert_allclose(got.asnumpy(), np.einsum("ij,jk,kl->il", *host, optimize=optimize), rtol=1e-12)


@pytest.mark.parametrize("device", DEVICES)
def test_dtypes_are_promoted_and_integers_stay_integers(device):
    a, b = arrays([(2, 3), (3, 4)], np.int8)
    got = nda.einsum("ij,jk", nda.asarray(a, device=device), nda.asarray(b, device=device))
    assert got.dtype == nda.int8
    np.testing.assert_array_equal(got.asnumpy(), np.einsum("ij,jk", a, b))
    f = nda.einsum("ij,jk", nda.asarray(a.astype(np.float32), device=device), nda.asarray(b.astype(np.float64), device=device))
    assert f.dtype == nda.float64
    c1, c2 = arrays([(2, 3), (3,)], np.complex128)
    z = nda.einsum("ij,j->i", nda.asarray(c1, device=device), nda.asarray(c2, device=device))
    np.testing.assert_allclose(z.asnumpy(), np.einsum("ij,j->i", c1, c2))


def test_the_result_never_shares_memory_with_an_operand():
    """NumPy returns views for 'ij->ji' and 'ii->i'; einsum is not a view op, so a later write
    to the operand must not show through its result (on every device)."""
    for device in DEVICES + (["cudamirror"] if _mirror() else []):
        x = nda.asarray(np.arange(9.0).reshape(3, 3), device=device)
        t, d = nda.einsum("ij->ji", x), nda.einsum("ii->i", x)
        x[...] = 0.0
        assert t.asnumpy()[0].tolist() == [0.0, 3.0, 6.0] and d.tolist() == [0.0, 4.0, 8.0], device


def _mirror() -> bool:
    try:
        if not nda.backends.serves("cudamirror"):
            nda.backends.load("_cuda_numpy_mirror:backend")
        return True
    except Exception:  # noqa: BLE001 - the mirror needs the test directory on sys.path
        return False


def test_the_cuda_mirror_runs_nda_cudas_einsum_kernel():
    assert _mirror()
    host = arrays([(2, 3, 4), (4, 3)])
    got = nda.einsum("bij,jk->bik", *[nda.asarray(a, device="cudamirror") for a in host], optimize=["einsum_path", (0, 1)])
    np.testing.assert_allclose(got.asnumpy(), np.einsum("bij,jk->bik", *host))
    assert nda.dispatch.explain("einsum", "ij->j", [nda.zeros((2, 2), device="cudamirror")]).kernel.backend == "cudamirror"


def test_interleaved_form_and_einsum_path():
    a, b = arrays([(2, 3), (3, 4)])
    x, y = nda.asarray(a), nda.asarray(b)
    np.testing.assert_allclose(nda.einsum(x, [0, 1], y, [1, 2], [0, 2]).asnumpy(), a @ b)
    np.testing.assert_allclose(nda.einsum(x, [0, Ellipsis], y, [Ellipsis, 2]).asnumpy(), np.einsum(a, [0, Ellipsis], b, [Ellipsis, 2]))
    path, report = nda.einsum_path("ij,jk,kl->il", x, y, nda.ones((4, 5)), optimize="optimal")
    assert path == np.einsum_path("ij,jk,kl->il", a, b, np.ones((4, 5)), optimize="optimal")[0] and "Complete contraction" in report


@pytest.mark.parametrize("device", DEVICES)
def test_numpy_einsum_on_nda_arrays_stays_on_the_device(device):
    a, b = arrays([(2, 3), (3, 4)])
    x, y = nda.asarray(a, device=device), nda.asarray(b, device=device)
    for got in (np.einsum("ij,jk", x, y), np.einsum(x, [0, 1], y, [1, 2], [0, 2]), np.einsum("ij,jk->ik", x, b)):
        assert isinstance(got, nda.NDArray) and got.device == nda.Device(device)
        np.testing.assert_allclose(got.asnumpy(), a @ b)
    assert np.einsum_path("ij,jk", x, y)[0] == ["einsum_path", (0, 1)]


# ----------------------------------------------------------------------------- gradients

GRAD_CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ii->", [(3, 3)]),
    ("ii->i", [(3, 3)]),
    ("ij->", [(2, 3)]),
    ("i,i", [(4,), (4,)]),
    ("...ij,...jk", [(2, 2, 3), (1, 3, 2)]),
    ("ij,jk,kl->il", [(2, 3), (3, 2), (2, 2)]),
    ("ij,ij->i", [(2, 3), (2, 1)]),
    ("iij->ji", [(2, 2, 3)]),
    ("i,j->ij", [(3,), (2,)]),
    ("ijk->k", [(2, 2, 2)]),
    ("ij,j->i", [(2, 3), (3,)]),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("spec, shapes", GRAD_CASES, ids=[s for s, _ in GRAD_CASES])
def test_gradient_matches_finite_differences(spec, shapes, device):
    host = arrays(shapes, seed=3)
    weights = np.random.default_rng(7).standard_normal(np.einsum(spec, *host).shape)
    xs = [nda.asarray(a, device=device) for a in host]
    for x in xs:
        x.attach_grad()
    with nda.autograd.record():
        y = nda.einsum(spec, *xs)
        loss = nda.sum(y * nda.asarray(weights, device=device))
    loss.backward()

    def f(*ops):
        return float(np.sum(np.einsum(spec, *ops) * weights))

    for k, x in enumerate(xs):
        numeric = np.zeros_like(host[k])
        for idx in np.ndindex(host[k].shape):
            plus = [a.copy() for a in host]
            minus = [a.copy() for a in host]
            plus[k][idx] += 1e-6
            minus[k][idx] -= 1e-6
            numeric[idx] = (f(*plus) - f(*minus)) / 2e-6
        np.testing.assert_allclose(x.grad.asnumpy(), numeric, rtol=1e-5, atol=1e-7, err_msg=f"{spec}: operand {k}")


def test_complex_gradient_follows_the_conjugate_convention():
    a, b = arrays([(2, 3), (3,)], np.complex128, seed=5)
    x, y = nda.asarray(a), nda.asarray(b)
    x.attach_grad()
    with nda.autograd.record():
        out = nda.einsum("ij,j->i", x, y)
    g = np.array([1.0 + 2.0j, -0.5j])
    out.backward(nda.asarray(g))
    np.testing.assert_allclose(x.grad.asnumpy(), np.outer(g, np.conj(b)))


# ----------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda x: nda.einsum("ij,jk", x), ValueError, "name 2 operand"),
        (lambda x: nda.einsum("ij", x, x), ValueError, "name 1 operand"),
        (lambda x: nda.einsum("ijk", x), ValueError, "2 dimension"),
        (lambda x: nda.einsum("i", x), ValueError, r"no '\.\.\.'"),
        (lambda x: nda.einsum("ij->ii", x), ValueError, "more than once"),
        (lambda x: nda.einsum("ij->k", x), ValueError, "appears in no operand"),
        (lambda x: nda.einsum("i.j", x), ValueError, "ellipsis"),
        (lambda x: nda.einsum("i1", x), ValueError, "invalid subscript '1'"),
        (lambda x: nda.einsum("ij->ij->", x), ValueError, "'->' once"),
        (lambda x: nda.einsum("ij,ji->", x, nda.ones((2, 2))), ValueError, "sizes must match"),
        (lambda x: nda.einsum("ii", x), ValueError, "sizes must match"),
        (lambda x: nda.einsum("i...->i", nda.ones((2, 3))), ValueError, "no '...'"),
        (lambda x: nda.einsum("ij", x, optimize="fast"), TypeError, "optimize must be"),
        (lambda x: nda.einsum("ij", nda.ones((2, 2), dtype=nda.bool)), TypeError, "bool"),
        (lambda x: nda.einsum("ij", x.asnumpy()), TypeError, "nda array"),
        (lambda x: nda.einsum(), TypeError, "subscripts"),
    ],
)
def test_bad_input_raises_at_the_call(call, error, match):
    with pytest.raises(error, match=match):
        call(nda.ones((2, 3)))


@pytest.mark.skipif(not sim_installed, reason="nda-sim is not installed")
def test_operands_on_different_devices_are_refused():
    with pytest.raises(ValueError, match="different devices"):
        nda.einsum("ij,jk", nda.ones((2, 3)), nda.ones((3, 2), device="sim"))


@settings(max_examples=20)
@given(st.data())
def test_random_contractions_match_numpy(data):
    """Random subscripts over random shapes, with repeated labels, on cpu and sim."""
    letters = "abcd"
    sizes = {c: data.draw(st.integers(1, 3)) for c in letters}
    n_ops = data.draw(st.integers(1, 3))
    terms = [data.draw(st.text(letters, min_size=0, max_size=3)) for _ in range(n_ops)]
    used = sorted(set("".join(terms)))
    out = "".join(data.draw(st.permutations(used))[: data.draw(st.integers(0, len(used)))])
    spec = ",".join(terms) + "->" + out
    host = [np.random.default_rng(i).standard_normal(tuple(sizes[c] for c in t)) for i, t in enumerate(terms)]
    want = np.einsum(spec, *host)
    for device in DEVICES:
        got = nda.einsum(spec, *[nda.asarray(a, device=device) for a in host])
        np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-10, atol=1e-10, err_msg=spec)


def test_hybridize_and_explain_see_the_op():
    def f(x, y):
        return nda.einsum("ij,jk->ik", x, y) * 2

    a, b = arrays([(2, 3), (3, 4)])
    x, y = nda.asarray(a), nda.asarray(b)
    fast = nda.hybridize(f)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nda.HybridizeWarning)
        for _ in range(3):
            np.testing.assert_allclose(fast(x, y).asnumpy(), 2 * a @ b)
    ex = nda.dispatch.explain("einsum", "ij,jk->ik", [x, y])
    assert ex.kernel.backend == "cpu" and "einsum" in ex.kernel.qualname
