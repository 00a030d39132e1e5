"""NumPy's floating-point RuntimeWarnings point at the user's line (issue 29, item 7).

NumPy attributes ``RuntimeWarning: divide by zero encountered in divide`` to the innermost
Python frame; nda's kernels are called from nda's frames (and from worker threads), so
without nda's filter (``nda.backends._fpwarnings``) the warning named nda's source and,
shown once per location, appeared once per program instead of once per user line.

Each scenario runs in a fresh interpreter with Python's default warning filters (pytest
installs its own, which decide before nda's).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import nda

_SCRIPT = '''
import numpy as np
import nda
x = nda.asarray([1.0, 0.0, -1.0])
big = nda.zeros(1 << 21)                 # large: the threaded engine defers the op (a task's site names the line)
a = x / 0.0                              # LINE_DIV
b = nda.log(big)                         # LINE_LOG
b.wait_to_read()
for _ in range(3):
    c = x / 0.0                          # LINE_LOOP
d = np.divide(x, 0.0)                    # LINE_PROTOCOL
s = nda.asarray([1.0, 0.0], device="sim")
e = (s / 0.0).asnumpy()                  # a device does not warn
print(a.tolist(), b[0].item(), d.tolist(), e.tolist())
'''


@pytest.mark.parametrize("engine", ["threaded", "naive"])
def test_floating_point_warnings_name_the_users_line(tmp_path: Path, engine: str):
    pytest.importorskip("nda_sim")
    script = tmp_path / "user_script.py"
    script.write_text(_SCRIPT)
    lines = {tag: i + 1 for i, text in enumerate(_SCRIPT.splitlines()) for tag in ("LINE_DIV", "LINE_LOG", "LINE_LOOP", "LINE_PROTOCOL") if tag in text}
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, env={**os.environ, "NDA_ENGINE": engine})
    assert proc.returncode == 0, proc.stderr
    warned = [line for line in proc.stderr.splitlines() if "RuntimeWarning" in line]
    expected = [
        f"{script}:{lines['LINE_DIV']}: RuntimeWarning: divide by zero encountered in divide",
        f"{script}:{lines['LINE_DIV']}: RuntimeWarning: invalid value encountered in divide",
        f"{script}:{lines['LINE_LOG']}: RuntimeWarning: divide by zero encountered in log",
        f"{script}:{lines['LINE_LOOP']}: RuntimeWarning: divide by zero encountered in divide",
        f"{script}:{lines['LINE_LOOP']}: RuntimeWarning: invalid value encountered in divide",
        f"{script}:{lines['LINE_PROTOCOL']}: RuntimeWarning: divide by zero encountered in divide",
        f"{script}:{lines['LINE_PROTOCOL']}: RuntimeWarning: invalid value encountered in divide",
    ]
    assert warned == expected, proc.stderr  # each user line once (the loop too), nothing from nda's or nda-sim's source
    nda_dir = str(Path(nda.__file__).parent)
    assert nda_dir not in proc.stderr and "nda_sim" not in proc.stderr


def test_a_users_filter_still_decides_first(tmp_path: Path):
    script = tmp_path / "quiet.py"
    script.write_text(textwrap.dedent('''
        import warnings
        warnings.filterwarnings("ignore", "divide by zero", RuntimeWarning)
        import nda
        y = nda.asarray([1.0]) / 0.0
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            try:
                nda.asarray([2.0]) / 0.0
            except RuntimeWarning as err:
                print("raised:", err)
    '''))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "RuntimeWarning" not in proc.stderr
    assert "raised: divide by zero encountered in divide" in proc.stdout
