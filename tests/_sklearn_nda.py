"""A pytest plugin that adds nda to scikit-learn's own Array API test parametrisation.

scikit-learn parametrises its Array API tests by namespace through
``sklearn.utils._array_api.yield_namespace_device_dtype_combinations`` (numpy,
array_api_strict, cupy, torch, dpnp). This plugin, loaded before scikit-learn's test
modules are imported, makes that generator also yield nda on every device in
``NDA_SKLEARN_DEVICES`` (default ``cpu,sim``), in float64 and float32. Run scikit-learn's
whole Array API test set on nda and on array_api_strict, in one run, with::

    SCIPY_ARRAY_API=1 PYTHONPATH=tests .venv/bin/python -m pytest -p _sklearn_nda -q -p no:cacheprovider \\
        --pyargs $(.venv/bin/python tests/_sklearn_nda.py) -k "(nda or array_api_strict) and not cupy"

(``python tests/_sklearn_nda.py`` prints the scikit-learn test modules that use the
parametrisation.) ``tests/test_ecosystem_sklearn.py`` runs a representative subset of
the same checks inside nda's own suite.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Iterator

os.environ.setdefault("SCIPY_ARRAY_API", "1")

#: scikit-learn's test modules that parametrise by array namespace (scikit-learn 1.9).
SKLEARN_MODULES = (
    "sklearn.decomposition.tests.test_pca",
    "sklearn.metrics.tests.test_classification",
    "sklearn.metrics.tests.test_common",
    "sklearn.metrics.tests.test_pairwise",
    "sklearn.metrics.cluster.tests.test_common",
    "sklearn.metrics.cluster.tests.test_supervised",
    "sklearn._loss.tests.test_loss",
    "sklearn._loss.tests.test_link",
    "sklearn.preprocessing.tests.test_polynomial",
    "sklearn.preprocessing.tests.test_data",
    "sklearn.preprocessing.tests.test_label",
    "sklearn.tests.test_pipeline",
    "sklearn.tests.test_calibration",
    "sklearn.tests.test_kernel_approximation",
    "sklearn.tests.test_naive_bayes",
    "sklearn.tests.test_common",
    "sklearn.mixture.tests.test_gaussian_mixture",
    "sklearn.utils.tests.test_array_api",
    "sklearn.utils.tests.test_validation",
    "sklearn.utils.tests.test_multiclass",
    "sklearn.utils.tests.test_indexing",
    "sklearn.utils.tests.test_extmath",
    "sklearn.utils.tests.test_optimize",
    "sklearn.utils.tests.test_stats",
    "sklearn.linear_model.tests.test_logistic",
    "sklearn.linear_model.tests.test_ridge",
    "sklearn.linear_model._glm.tests.test_glm",
    "sklearn.model_selection.tests.test_split",
    "sklearn.model_selection.tests.test_search",
    "sklearn.model_selection.tests.test_validation",
)


def nda_combinations() -> list[tuple[str, str, str]]:
    devices = os.environ.get("NDA_SKLEARN_DEVICES", "cpu,sim").split(",")
    return [("nda", device, dtype) for device in devices if device for dtype in ("float64", "float32")]


def _install() -> None:
    from sklearn.utils import _array_api

    original = _array_api.yield_namespace_device_dtype_combinations
    if getattr(original, "_with_nda", False):
        return

    def combinations(include_numpy_namespaces: bool = True) -> Iterator[tuple[Any, ...]]:
        # The original asks yield_namespaces (patched below) and would add ("nda", None, None).
        yield from (c for c in original(include_numpy_namespaces=include_numpy_namespaces) if c[0] != "nda")
        yield from nda_combinations()

    original_namespaces = _array_api.yield_namespaces

    def namespaces(include_numpy_namespaces: bool = True) -> Iterator[str]:
        yield from original_namespaces(include_numpy_namespaces=include_numpy_namespaces)
        yield "nda"

    combinations._with_nda = True  # type: ignore[attr-defined]
    _array_api.yield_namespace_device_dtype_combinations = combinations
    _array_api.yield_namespaces = namespaces
    # Modules imported before this plugin hold the original functions under their own names.
    for module in list(sys.modules.values()):
        if getattr(module, "__name__", "").startswith("sklearn") and module is not _array_api:
            if getattr(module, "yield_namespace_device_dtype_combinations", None) is original:
                module.yield_namespace_device_dtype_combinations = combinations
            if getattr(module, "yield_namespaces", None) is original_namespaces:
                module.yield_namespaces = namespaces


#: scikit-learn's own assumption, not nda's bug: with Array API dispatch off, its check calls
#: the chi2 kernels on ``np.asarray(x)``; for an nda array off the cpu that is a read-only
#: host copy (README, "Ecosystem"), and scikit-learn's Cython ``_chi2_kernel_fast`` takes
#: non-const memoryviews, which refuse *any* read-only buffer: a read-only NumPy array fails
#: the same way (``tests/test_ecosystem_sklearn.py`` shows it). Strict xfails that must raise
#: ValueError, so the run says when scikit-learn changes.
READ_ONLY_INPUT = ("additive_chi2_kernel-check_array_api_metric_pairwise", "chi2_kernel-check_array_api_metric_pairwise")


def pytest_collection_modifyitems(config: Any, items: list[Any]) -> None:
    import pytest

    for item in items:
        name = item.nodeid.rpartition("::")[2]
        if not name.startswith("test_array_api_compliance[") or "-nda-" not in name or "-nda-cpu-" in name:
            continue
        if any(name.startswith(f"test_array_api_compliance[{case}-nda-") for case in READ_ONLY_INPUT):
            item.add_marker(
                pytest.mark.xfail(
                    reason="scikit-learn's _chi2_kernel_fast refuses read-only input (non-const memoryviews), as it does for read-only NumPy arrays",
                    raises=ValueError,
                    strict=True,
                )
            )


def pytest_configure(config: Any) -> None:
    # Installed when pytest loads this module as a plugin (-p _sklearn_nda), before it
    # collects scikit-learn's test modules; importing the module (for READ_ONLY_INPUT) does not.
    _install()


if __name__ == "__main__":
    print(" ".join(SKLEARN_MODULES))
