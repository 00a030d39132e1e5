"""What ``import nda`` loads: the parts a program may never use load at their first use.

README, "Performance": ``import nda`` costs at most 50 ms on top of NumPy's import. Timings
are not asserted (the machine's load decides them); what is checked is that the deferred
modules stay out of ``sys.modules`` after ``import nda`` (in a fresh interpreter), and that
each deferred name still answers as before, from any thread, the first time it is asked for.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

#: Modules ``import nda`` does not load (each loads where it is first needed).
DEFERRED = (
    "nda.hybrid",  # nda.hybridize, nda.HybridizeWarning
    "nda.random",  # nda.random (its catalog ops, nda.ops.random, are declared at import)
    "nda._io",  # nda.save, nda.load, nda.savez, nda.savez_compressed
    "nda._numpy_functions",
    "nda._numpy_linalg",
    "numpy.fft",  # the first np.<function>(nda_array)
    "nda.engine._profile_views",  # the first profile
    "nda.ops._philox_source",
    "pathlib",  # nda.ops.random.kernel_source
    "html",
    "traceback",  # a failed op's error, a notebook's view
)


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=dict(os.environ), timeout=120)


def test_import_nda_does_not_load_the_deferred_modules():
    result = _run(
        f"""
        import json, sys
        import numpy
        before = set(sys.modules)  # whatever the interpreter and NumPy load is not nda's cost
        import nda
        print(json.dumps(sorted(m for m in {DEFERRED!r} if m in sys.modules and m not in before)))
        """
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [], "import nda loaded these (defer them to their first use)"


def test_deferred_names_answer_as_before():
    result = _run(
        """
        import sys
        import numpy as np
        import nda
        lazy = {"hybridize", "HybridizeWarning", "hybrid", "random", "save", "load", "savez", "savez_compressed"}
        assert lazy <= set(dir(nda)), "dir(nda) (tab completion) names the deferred attributes"
        assert {n for n in nda.__all__ if not hasattr(nda, n)} == set()
        from nda import hybridize, HybridizeWarning, random, save, load, savez, savez_compressed
        import nda.hybrid, nda.random, nda._io
        assert hybridize is nda.hybrid.hybridize and HybridizeWarning is nda.hybrid.HybridizeWarning
        assert random is sys.modules["nda.random"] and nda.random is random
        assert (save, load, savez, savez_compressed) == (nda._io.save, nda._io.load, nda._io.savez, nda._io.savez_compressed)
        assert issubclass(HybridizeWarning, Warning) and random.default_rng(0).random(2).shape == (2,)
        try:
            nda.no_such_name
        except AttributeError as err:
            assert str(err) == "module 'nda' has no attribute 'no_such_name'", err
        else:
            raise AssertionError("nda.no_such_name")

        from nda.ops import _philox_source
        assert nda.ops.random.kernel_source is _philox_source.source and "kernel_source" in dir(nda.ops.random)
        from nda.engine import _profile, _profile_views
        assert _profile.Profile is _profile_views.Profile and _profile.SummaryTable is _profile_views.SummaryTable
        from nda import _interop
        assert np.sum in _interop.FUNCTIONS and np.linalg.inv in _interop.FUNCTIONS  # the filled table
        print("ok")
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_first_uses_from_many_threads_at_once():
    """Threads that reach a deferred name together all get the same object, and no error."""
    result = _run(
        """
        import threading
        import numpy as np
        import nda

        x = nda.asarray([1.0, 2.0, 3.0])
        barrier = threading.Barrier(8)
        seen, errors = [], []

        def first_use():
            try:
                barrier.wait()
                seen.append((nda.hybridize, nda.random, nda.save, nda.ops.random.kernel_source, float(np.mean(x)), np.fft.fft(x).shape))
            except BaseException as err:  # noqa: BLE001 - reported below
                errors.append(repr(err))

        threads = [threading.Thread(target=first_use) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        assert len(seen) == 8 and all(s == seen[0] for s in seen), seen
        assert seen[0][4] == 2.0
        print("ok")
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
