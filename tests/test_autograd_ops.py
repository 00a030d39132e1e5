"""Every differentiable op's gradient against finite differences (cpu and sim) and torch.autograd.

The cases (``nda.testing.conformance._gradient_cases``) draw inputs where each op's
derivative exists; ``_gradients.check`` runs ``attach_grad`` / ``record`` / ``backward``
on the device and compares with central finite differences in float64 (complex128 for
ops that take complex input), or with PyTorch on the same case through
``array_api_compat.torch``. Examples per op: the loaded Hypothesis profile's
``max_examples // 5`` (5 in ``ci``, 100 with ``HYPOTHESIS_PROFILE=deep``), or
``NDA_GRAD_EXAMPLES``.
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, reject, settings

import nda
from nda.ops import CATALOG
from nda.ops.spec import NoVJP
from nda.testing import conformance
from nda.testing.conformance import _gradients
from nda.testing.conformance._gradient_cases import GRADIENT_OPS, strategy, supports_complex

import _autograd_mutant

EXAMPLES = int(os.environ.get("NDA_GRAD_EXAMPLES", max(3, settings.default.max_examples // 5)))
_SETTINGS = settings(max_examples=EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck))
_CELLS = [(op, dtype) for op in sorted(GRADIENT_OPS) for dtype in (("float64", "complex128") if supports_complex(op) else ("float64",))]

try:
    import array_api_compat.torch  # noqa: F401
    import torch  # noqa: F401

    _TORCH = None
except ImportError as err:  # torch is not a test dependency: it is a multi-GB download with CUDA
    _TORCH = f"torch is not installed ({err}); pip install torch to compare with torch.autograd"


def _check(op: str, dtype: str, device: str, reference: str) -> None:
    @_SETTINGS
    @given(case=strategy(op, complex_input=dtype.startswith("complex")))
    def run(case: object) -> None:
        if reference == "torch" and not case.torch:  # type: ignore[attr-defined]
            return
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", nda.FallbackWarning)
            try:
                _gradients.check(case, device, dtype, reference)  # type: ignore[arg-type]
            except _gradients._Skip:
                reject()

    run()


@pytest.mark.parametrize("op,dtype", _CELLS, ids=[f"{op}-{dtype}" for op, dtype in _CELLS])
def test_gradient_matches_finite_differences_on_cpu(op, dtype):
    _check(op, dtype, "cpu", "reference")


@pytest.mark.parametrize("op,dtype", _CELLS, ids=[f"{op}-{dtype}" for op, dtype in _CELLS])
def test_gradient_matches_finite_differences_on_sim(op, dtype):
    _check(op, dtype, "sim", "reference")


@pytest.mark.skipif(_TORCH is not None, reason=_TORCH or "")
@pytest.mark.parametrize("op,dtype", _CELLS, ids=[f"{op}-{dtype}" for op, dtype in _CELLS])
def test_gradient_matches_torch_autograd(op, dtype):
    _check(op, dtype, "cpu", "torch")


def test_every_catalog_op_declares_its_gradient():
    missing = [name for name, decl in CATALOG.items() if decl.vjp is None]
    assert not missing, f"ops without a vjp= declaration (a VJP, constant(...) or not_differentiable(...)): {missing}"
    table = nda.autograd.differentiable_ops()
    differentiable = {name for name, what in table.items() if what == "vjp" and name in CATALOG}  # loaded op libraries are not the catalog's
    assert differentiable == set(GRADIENT_OPS), "every differentiable op has a gradient check, and only those"
    for name, decl in CATALOG.items():
        if isinstance(decl.vjp, NoVJP):
            assert decl.vjp.reason and table[name].endswith(decl.vjp.reason)


def test_float32_gradients_on_sim_keep_their_precision_and_device():
    x = nda.asarray(np.linspace(0.1, 1.0, 5, dtype=np.float32), device="sim")
    x.attach_grad()
    with nda.autograd.record():
        loss = nda.sum(nda.log(x) * x)
    loss.backward()
    assert x.grad.device == nda.Device("sim", 0) and x.grad.dtype == nda.float32
    np.testing.assert_allclose(x.grad.asnumpy(), np.log(x.asnumpy()) + 1, rtol=1e-6)


def test_gradients_run_asynchronously_through_the_engine(all_tasks):
    """Every op, forward and backward, goes to the engine's workers: the results are still right."""
    x = nda.asarray(np.arange(1.0, 7.0).reshape(2, 3), device="sim")
    w = nda.asarray(np.ones((3, 2)), device="sim")
    w.attach_grad()
    with nda.autograd.record():
        loss = nda.sum(nda.tanh(x @ w) ** 2)
    loss.backward()
    t = np.tanh(x.asnumpy() @ np.ones((3, 2)))
    np.testing.assert_allclose(w.grad.asnumpy(), x.asnumpy().T @ (2 * t * (1 - t * t)), rtol=1e-12)


# ----------------------------------------------------------------------------- the kit's gradient mode


def test_gradient_mode_passes_sim_and_fails_a_backend_with_a_wrong_kernel():
    report = conformance.run("sim", ops=["sin", "take", "linalg.solve"], dtypes=["float32", "float64"], gradients=True)
    assert report.ok and report.counts()["passed"] == 6, report.table()
    assert "against finite differences" in report.table() and "sin [gradient]" in report.table()
    device = _autograd_mutant.load()
    report = conformance.run(device, ops=["sin", "exp"], dtypes=["float64"], gradients=True)
    assert report.result("exp", "float64", "gradient").status == "passed"
    failed = report.result("sin", "float64", "gradient")
    assert failed.status == "failed" and "finite differences" in failed.error and "sin(x)" in failed.example


def test_gradient_mode_compares_devices_too():
    report = conformance.run("sim", reference="cpu", ops=["matmul", "linalg.svdvals"], dtypes=["float64"], gradients=True)
    assert report.ok and report.counts()["passed"] == 2 and "against cpu:0" in report.table()


def test_gradient_mode_refuses_ops_without_a_gradient():
    with pytest.raises(ValueError, match="no gradient check for \\['argmax'\\]"):
        conformance.run("cpu", ops=["argmax"], gradients=True)
