"""The null CuPy's NVRTC version (it only keys nda-cuda's disk cache)."""


def getVersion() -> tuple[int, int]:  # noqa: N802
    return (0, 0)
