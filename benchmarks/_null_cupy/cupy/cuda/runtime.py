"""The null CuPy's CUDA runtime: one H200-shaped device with all its memory free."""

from __future__ import annotations

from typing import Any

_TOTAL = 141 * 2**30
_PROPS = {"name": b"null H200", "totalGlobalMem": _TOTAL, "major": 9, "minor": 0, "multiProcessorCount": 132}


class CUDARuntimeError(RuntimeError):
    pass


def getDeviceCount() -> int:  # noqa: N802
    return 1


def getDevice() -> int:  # noqa: N802
    return 0


def setDevice(device: int) -> None:  # noqa: N802
    return None


def getDeviceProperties(device: int) -> dict[str, Any]:  # noqa: N802
    return dict(_PROPS)


def memGetInfo() -> tuple[int, int]:  # noqa: N802
    return _TOTAL, _TOTAL


def runtimeGetVersion() -> int:  # noqa: N802
    return 12080


def driverGetVersion() -> int:  # noqa: N802
    return 12080
