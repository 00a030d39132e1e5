"""The null CuPy's memory: a pool that holds nothing."""

from __future__ import annotations


class OutOfMemoryError(MemoryError):
    pass


class MemoryPool:
    def used_bytes(self) -> int:
        return 0

    def total_bytes(self) -> int:
        return 0

    def free_bytes(self) -> int:
        return 0

    def free_all_blocks(self, stream: object = None) -> None:
        return None


POOL = MemoryPool()
