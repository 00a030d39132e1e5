"""Op libraries (extension ops, backend API 1.4): nda-sim's library, loading, clashes, versions, kernels.

nda-sim ships the example library (``nda.ext.sim.multiply_add``, ``nda.ext.sim.gelu``) through
the entry point group ``nda.extensions``; the other libraries here are written into a
temporary directory and loaded with ``nda.backends.load("module")``.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import nda
from nda.ops import EXTENSIONS
from nda.testing import conformance

_counter = itertools.count()


def _module(tmp_path, monkeypatch, body: str) -> str:
    """Write ``body`` as a fresh module on sys.path; returns its name."""
    name = f"_extlib_{next(_counter)}"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(body))
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


_LIBRARY = """
    import numpy as np
    from nda.ops.extension import OpLibrary

    library = OpLibrary({name!r}, api_version={api!r}, nda_version={nda_version!r})
    library.elementwise({op!r}, arity=1, dtypes="floating", reference=np.sin)

    @library.kernels
    def register(register_kernel):
        register_kernel({op!r}, ["float32", "float64", "complex64", "complex128"], np.sin, device_type="cpu")
"""


def _library(tmp_path, monkeypatch, name="mylib", op="twice_sin", api="1.4", nda_version=None) -> str:
    return _module(tmp_path, monkeypatch, _LIBRARY.format(name=name, op=op, api=api, nda_version=nda_version))


# ----------------------------------------------------------------------------- nda-sim's library


@pytest.mark.parametrize("device", ["cpu", "sim"])
def test_sim_library_ops_on_cpu_and_sim(device):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal(4).astype(np.float32)
    c = rng.integers(-5, 5, (3, 1)).astype(np.int32)
    x, y, z = (nda.asarray(v, device=device) for v in (a, b, c))
    got = nda.ext.sim.multiply_add(x, y, z)
    assert got.device == x.device and got.dtype == nda.float64 and got.shape == (3, 4)
    np.testing.assert_array_equal(got.asnumpy(), a * b.astype(np.float64) + c)
    g = nda.ext.sim.gelu(nda.asarray(b, device=device))
    assert g.dtype == nda.float32
    expected = 0.5 * b * (1 + np.tanh(np.float32(np.sqrt(2 / np.pi)) * (b + np.float32(0.044715) * b * b * b)))
    np.testing.assert_allclose(g.asnumpy(), expected, rtol=1e-6)
    assert nda.ext.sim.gelu(nda.asarray([1, 2], device=device)).dtype == nda.float64  # a floating op: integers compute in float64


@pytest.mark.parametrize("device", ["cpu", "sim"])
def test_sim_library_op_on_a_csr_array_takes_the_layout_fallback(device):
    # layouts._refuse_mutation looked the op up in CATALOG only: KeyError 'sim.gelu'
    dense = np.array([[1.0, 0.0], [0.0, 2.0]])
    x = nda.asarray(dense, device=device).to_layout("csr")
    with pytest.warns(nda.FallbackWarning, match="sim.gelu"):
        g = nda.ext.sim.gelu(x)
    assert g.device == x.device and g.layout.name == "strided"
    expected = nda.ext.sim.gelu(nda.asarray(dense, device=device)).asnumpy()
    np.testing.assert_array_equal(g.asnumpy(), expected)


def test_sim_library_refuses_bad_input_at_the_call():
    x = nda.asarray([1.0, 2.0])
    with pytest.raises(TypeError, match="multiply_add.*bool"):
        nda.ext.sim.multiply_add(x > 0, x > 0, x > 0)
    with pytest.raises(ValueError, match="different devices"):
        nda.ext.sim.multiply_add(x, x, x.to_device("sim"))
    with pytest.raises(ValueError, match="cannot be broadcast"):
        nda.ext.sim.multiply_add(x, x, nda.ones(3))
    with pytest.raises(TypeError, match="expects an nda array"):
        nda.ext.sim.multiply_add(x, [1.0, 2.0], x)


def test_sim_library_functions_are_generated_from_the_declaration():
    fn = nda.ext.sim.multiply_add
    assert fn.__name__ == "multiply_add" and fn.__module__ == "nda.ext.sim"
    assert str(fn.__signature__) == "(x1: 'Any', x2: 'Any', x3: 'Any', /) -> 'NDArray'"  # the public signature (nda._signatures), not the planner's
    assert "x1 * x2 + x3" in fn.__doc__
    assert fn.__wrapped_decl__ is EXTENSIONS["sim.multiply_add"]
    assert "multiply_add" in dir(nda.ext.sim) and "sim" in dir(nda.ext)
    with pytest.raises(AttributeError, match="no library 'nosuchlib'.*installed op libraries: .*sim"):
        nda.ext.nosuchlib  # noqa: B018


def test_explain_coverage_and_info_show_extension_ops(capsys):
    x = nda.asarray([1.0, 2.0], device="sim")
    text = str(nda.dispatch.explain("sim.multiply_add", x, x, x))
    assert "op:      sim.multiply_add" in text and "(backend 'sim (op library)'" in text and "key:     (sim, float64, strided)" in text
    assert str(nda.dispatch.explain(nda.ext.sim.gelu, x)).startswith("op:      sim.gelu")
    for device in ("cpu", "sim"):
        rows = nda.dispatch.coverage(device).as_dict()
        assert set(rows["sim.multiply_add"].values()) == {"native"} and set(rows["sim.gelu"].values()) == {"native"}
    from nda.__main__ import info

    info()
    out = capsys.readouterr().out
    assert "op libraries (entry-point group 'nda.extensions'" in out and "ops: nda.ext.sim.multiply_add, nda.ext.sim.gelu" in out
    (rec,) = [r for r in nda.backends.libraries() if r["name"] == "sim"]
    assert rec["state"] == "loaded" and rec["source"] == "nda_sim.ext:library" and rec["version"] == "0.1.0"


@pytest.mark.parametrize("device", ["cpu", "sim"])
def test_conformance_kit_checks_extension_ops(device):
    report = conformance.run(device, ops=["sim.multiply_add", "sim.gelu"], reference="reference" if device == "cpu" else "cpu")
    assert report.counts() == {"passed": 14, "failed": 0, "fallback": 0, "not covered": 0}, report.table()
    grads = conformance.run(device, ops=["sim.multiply_add", "sim.gelu"], gradients=True)
    assert grads.counts() == {"passed": 6, "failed": 0, "fallback": 0, "not covered": 0}, grads.table()


def test_extension_ops_record_gradients_on_sim():
    x = nda.asarray([0.5, -1.0, 2.0], device="sim")
    w = nda.asarray([1.0, 2.0, 3.0], device="sim")
    x.attach_grad()
    w.attach_grad()
    with nda.autograd.record():
        loss = nda.sum(nda.ext.sim.gelu(nda.ext.sim.multiply_add(x, w, x)))
    loss.backward()
    h = x.asnumpy() * w.asnumpy() + x.asnumpy()
    c, k = np.sqrt(2 / np.pi), 0.044715
    t = np.tanh(c * (h + k * h**3))
    dgelu = 0.5 * (1 + t) + 0.5 * h * (1 - t * t) * c * (1 + 3 * k * h * h)
    np.testing.assert_allclose(x.grad.asnumpy(), dgelu * (w.asnumpy() + 1), rtol=1e-12)
    np.testing.assert_allclose(w.grad.asnumpy(), dgelu * x.asnumpy(), rtol=1e-12)
    assert x.grad.device == nda.Device("sim", 0)
    assert nda.autograd.differentiable_ops()["sim.gelu"] == "vjp"


# ----------------------------------------------------------------------------- loading, clashes, versions


def test_load_a_library_from_a_module(tmp_path, monkeypatch):
    name = _library(tmp_path, monkeypatch, name="mylib_ok", op="my_sin")
    library = nda.backends.load(name)
    assert library.name == "mylib_ok" and "mylib_ok.my_sin" in EXTENSIONS
    assert nda.backends.load(name) is library  # loading it again returns it
    np.testing.assert_array_equal(nda.ext.mylib_ok.my_sin(nda.asarray([0.5])).asnumpy(), np.sin([0.5]))
    # Its only kernel is cpu's: on sim the op takes the host fallback, as a catalog op would.
    with pytest.warns(nda.FallbackWarning, match="mylib_ok.my_sin: no sim kernel, so it runs on cpu"):
        np.testing.assert_array_equal(nda.ext.mylib_ok.my_sin(nda.asarray([0.5], device="sim")).asnumpy(), np.sin([0.5]))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            dict(name="sim", op="other_op"),
            r"op library 'sim' from _extlib_\d+ clashes with the library 'sim' already loaded from nda_sim\.ext:library",
        ),
        (dict(name="clash_add", op="add"), r"declares op 'add', which shadows the catalog op 'add' \(nda\.add\)"),
        (dict(name="clash_inv", op="inv"), r"declares op 'inv', which shadows the catalog op 'linalg\.inv'"),
        (
            dict(name="clash_gelu", op="gelu"),
            r"op library 'clash_gelu' from _extlib_\d+ declares op 'gelu', which the loaded library 'sim' from nda_sim\.ext:library declares too",
        ),
        (dict(name="linalg", op="lin_op"), r"clashes with nda's own namespace nda\.linalg"),
        (dict(name="old_api", api="1.3"), r"declares backend API 1\.3, but op libraries exist since API 1\.4"),
        (dict(name="other_major", api="2.4"), r"was built for backend API 2\.4, but this nda speaks 1\.4"),
        (dict(name="newer_api", api="1.9"), r"built for backend API 1\.9, newer than this nda's 1\.4; upgrade nda"),
        (
            dict(name="other_nda", nda_version="0.7"),
            r"was built for nda 0\.7, but this is nda 0\.1\.\d+; install a build of 'other_nda' for nda 0\.1",
        ),
    ],
)
def test_clashes_and_version_mismatches_are_refused(tmp_path, monkeypatch, kwargs, message):
    nda.ext.sim  # noqa: B018  (the sim library is loaded)
    before = dict(EXTENSIONS)
    name = _library(tmp_path, monkeypatch, **kwargs)
    with pytest.raises(nda.BackendValidationError, match=message):
        nda.backends.load(name)
    assert EXTENSIONS == before  # nothing of the refused library stays
    assert nda.ext.sim.gelu(nda.asarray([1.0])).shape == (1,)  # the loaded one is untouched


def test_library_kernels_for_undeclared_ops_are_refused(tmp_path, monkeypatch):
    name = _module(
        tmp_path,
        monkeypatch,
        """
        import numpy as np
        from nda.ops.extension import OpLibrary

        library = OpLibrary("badkernels", api_version="1.4")
        library.elementwise("bk_sin", arity=1, dtypes="floating", reference=np.sin)  # refused: nothing of it stays

        @library.kernels
        def register(register_kernel):
            register_kernel("bk_sin", ["float64"], np.sin, device_type="cpu")
            register_kernel("add", ["float64"], np.add, device_type="cpu")
    """,
    )
    with pytest.raises(nda.BackendValidationError, match="op library 'badkernels' registers a kernel for 'add', which it does not declare"):
        nda.backends.load(name)
    assert "badkernels.bk_sin" not in EXTENSIONS and not nda.dispatch.kernels("add", nda.KernelKey("cpu", nda.float64))[0].backend.startswith(
        "badkernels"
    )
    (rec,) = [r for r in nda.backends.libraries() if r["name"] == "badkernels"]
    assert rec["state"] == "failed" and "does not declare" in rec["reason"]


def test_backends_still_refuse_kernels_for_ops_nobody_declared():
    from nda.backends import BackendHandle
    from nda.backends._activation import _registrar

    def handle(name):
        return BackendHandle(name, None, ("cpu",), to_host=np.asarray, from_host=np.array)

    staged: list = []
    with pytest.raises(nda.BackendValidationError, match="registers a kernel for unknown op 'fused_frobnicate'"):
        _registrar(handle("somebackend"), staged)("fused_frobnicate", ["float64"], np.sin)
    _registrar(handle("somebackend2"), staged)("sim.gelu", ["float64"], lambda x: x)  # a declared extension op is accepted
    assert [e.op for e in staged] == ["sim.gelu"]  # staged, not published: nothing reached dispatch


def test_kernels_wait_for_a_backend_loaded_later_and_run_through_its_queue(tmp_path):
    """A library's kernel for a device type whose backend loads later is applied then; on a
    queue backend it is recorded on the queue: a kernel error surfaces at the sync point with
    the op's name and the user's line. (In a subprocess: the backend loaded at run time must
    not outlive the test, the kit's worker processes would load it again.)"""
    (tmp_path / "later_backend.py").write_text(
        textwrap.dedent("""
        import nda
        import nda_sim
        from nda_sim._device import Stream

        class Later(nda_sim.SimBackend):
            # nda-sim's machinery (a stream thread as the queue) as another device type, without catalog kernels
            name = "laterdev"
            device_types = ("laterdev",)

            def devices(self):
                return [nda.backends.DeviceInfo(nda.Device("laterdev", 0), "a device loaded after the library", self.capacity)]

            def _reset_streams(self):
                self._streams = {nda.Device("laterdev", 0): Stream("laterdev-stream")}

            def register(self, register_kernel):
                pass  # no catalog kernels: everything takes the host fallback

        backend = Later()
    """)
    )
    (tmp_path / "later_library.py").write_text(
        textwrap.dedent("""
        import numpy as np
        import nda
        from nda.ops.extension import OpLibrary

        library = OpLibrary("laterlib", api_version="1.4")

        def checked_sqrt(x, out=None):
            if (x < 0).any():
                raise ValueError("checked_sqrt of a negative number")
            return np.sqrt(x)

        library.elementwise("checked_sqrt", arity=1, dtypes="real floating", reference=checked_sqrt)

        @library.kernels
        def register(register_kernel):
            import later_backend
            decl = nda.ops.EXTENSIONS["laterlib.checked_sqrt"]
            register_kernel("checked_sqrt", decl.supported_dtypes, later_backend.backend._native(decl), device_type="laterdev")
    """)
    )
    (tmp_path / "script.py").write_text(
        textwrap.dedent("""
        import numpy as np
        import nda

        nda.config.fallback = "silent"
        nda.backends.load("later_library")
        assert not nda.dispatch.kernels("laterlib.checked_sqrt")  # waiting for its device type
        nda.backends.load("later_backend:backend")
        (entry,) = nda.dispatch.kernels("laterlib.checked_sqrt", nda.KernelKey("laterdev", nda.float64))
        assert entry.backend == "laterlib (op library)" and nda.dispatch.resolve("laterlib.checked_sqrt", entry.key).queue == "laterdev"
        good = nda.ext.laterlib.checked_sqrt(nda.asarray([4.0, 9.0], device="laterdev"))
        np.testing.assert_array_equal(good.asnumpy(), [2.0, 3.0])
        try:  # the threaded engine raises at the sync point, the naive one at the call
            nda.ext.laterlib.checked_sqrt(nda.asarray([4.0, -1.0], device="laterdev")).asnumpy()  # line 14
        except ValueError as err:
            assert "negative" in str(err)
            print(err.__notes__)
        else:
            raise AssertionError("no error at the sync point")
    """)
    )
    env = dict(os.environ, PYTHONPATH=str(tmp_path) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, str(tmp_path / "script.py")], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert f"op 'laterlib.checked_sqrt' issued at {tmp_path / 'script.py'}:14 failed on laterdev:0" in done.stdout
