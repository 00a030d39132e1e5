"""Timing shared by the benchmark sections: candidates measured alternately, median per call."""

from __future__ import annotations

import statistics
import timeit
from typing import Any, Callable


def alternate(fns: dict[str, Callable[[], Any]], rounds: int, number: int) -> dict[str, float]:
    """Median seconds per call of each function; the candidates take turns every round, so
    drift of the machine (other load, clocks) falls on all of them alike."""
    samples: dict[str, list[float]] = {k: [] for k in fns}
    for fn in fns.values():
        fn()  # warm up: first-call costs (dispatch resolution, kernel compilation) are not timed
    for _ in range(rounds):
        for name, fn in fns.items():
            samples[name].append(timeit.timeit(fn, number=number) / number)
    return {k: statistics.median(v) for k, v in samples.items()}
