"""Execute every notebook in this folder on a fresh kernel and fail on any error.

Each notebook asserts its key results, so running it is a test: a cell that raises
(an ``assert`` included) fails the notebook, and this script exits non-zero. It is what CI
runs (``python notebooks/run_all.py``); it needs the ``notebooks`` extra
(``pip install -e ".[notebooks]"``: nbclient, nbformat, ipykernel, matplotlib).

Design notes:

* One fresh kernel per notebook, started from *this* interpreter (a kernel spec written
  to a temporary directory with ``sys.executable``), so the notebooks test the nda that
  this environment has installed, whatever other Jupyter kernels the machine knows.
* Each notebook runs with a temporary directory as its working directory, so files it
  writes (traces, PNGs, a backend module) never land in the repository.
* The notebooks are stored without outputs; ``--save DIR`` writes the executed copies
  (with outputs) there, for reading or for attaching to a CI run.

Usage: ``python notebooks/run_all.py [--timeout S] [--save DIR] [NAME ...]``; NAMEs are
substrings of notebook file names (default: all of them).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def _kernel_manager(spec_root: Path) -> Any:
    """A KernelManager for a kernel running this very interpreter."""
    from ipykernel.kernelspec import write_kernel_spec
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager

    kernels = spec_root / "kernels"
    if not (kernels / "nda-notebooks").exists():
        write_kernel_spec(str(kernels / "nda-notebooks"), overrides={"display_name": "nda notebooks (this interpreter)"})
    ksm = KernelSpecManager(kernel_dirs=[str(kernels)], ensure_native_kernel=False)
    # IPC transport: the kernel talks to this process through sockets in a private temporary
    # directory instead of unencrypted localhost TCP ports.
    ipc = str(spec_root / "kernel-ipc")
    if len(ipc) > 80:  # socket paths are limited to about 100 bytes; long temp dirs (macOS) use TCP
        return KernelManager(kernel_name="nda-notebooks", kernel_spec_manager=ksm)
    return KernelManager(kernel_name="nda-notebooks", kernel_spec_manager=ksm, transport="ipc", ip=ipc)


def run_one(path: Path, timeout: int, spec_root: Path, save: Path | None) -> tuple[bool, float, str]:
    """Execute ``path`` on a fresh kernel; (passed, seconds, error text)."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(str(path), as_version=4)
    start = time.perf_counter()
    error = ""
    with tempfile.TemporaryDirectory(prefix=f"nda-nb-{path.stem}-") as workdir:
        km = _kernel_manager(spec_root)
        client = NotebookClient(nb, km=km, timeout=timeout, allow_errors=False, resources={"metadata": {"path": workdir}})
        try:
            client.execute()
        except Exception as err:  # noqa: BLE001 - report any failure as this notebook's
            error = str(err) if err.__class__.__name__ == "CellExecutionError" else traceback.format_exc()
            error = re.sub(r"\x1b\[[0-9;]*m", "", error)  # the kernel's coloured traceback, for plain CI logs
        finally:
            if km.has_kernel:  # nbclient leaves a kernel manager it was given to its owner
                km.shutdown_kernel(now=True)
    elapsed = time.perf_counter() - start
    if save is not None:
        save.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, str(save / path.name))
    return not error, elapsed, error


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="substrings of notebook names to run (default: all)")
    parser.add_argument("--timeout", type=int, default=120, help="seconds per cell (default 120)")
    parser.add_argument("--save", type=Path, default=None, help="write executed notebooks (with outputs) here")
    args = parser.parse_args(argv)
    try:
        import ipykernel  # noqa: F401
        import nbclient  # noqa: F401
        import nbformat  # noqa: F401
    except ImportError as err:
        print(f"run_all.py needs the notebooks extra: pip install -e '.[notebooks]' ({err})", file=sys.stderr)
        return 2
    notebooks = sorted(p for p in HERE.glob("*.ipynb") if not args.names or any(n in p.name for n in args.names))
    if not notebooks:
        print("no notebook matched", file=sys.stderr)
        return 2
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")  # quiets a debugger warning in kernels
    passed = failed = 0
    total_start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="nda-nb-kernel-") as spec_root:
        for path in notebooks:
            ok, seconds, error = run_one(path, args.timeout, Path(spec_root), args.save)
            print(f"{'PASS' if ok else 'FAIL'} {path.name} ({seconds:.1f} s)", flush=True)
            if ok:
                passed += 1
            else:
                failed += 1
                print(error, flush=True)
    print(f"ran {len(notebooks)} notebook(s) in {time.perf_counter() - total_start:.1f} s")
    print(f"notebooks: {passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
