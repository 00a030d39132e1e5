"""The null CuPy's ``cupy.cuda``: one device, streams and events that do nothing.

Streams and events keep no order (nothing runs); an event is reached as soon as it is recorded.
The current stream is a plain module-level stack (not per thread): this is a single-threaded
benchmark harness, not a model of CUDA.
"""

from __future__ import annotations

from typing import Any

from . import compiler, function, memory, nvrtc, runtime  # noqa: F401

_STACK: list[Any] = []


class Device:
    __slots__ = ("id",)

    def __init__(self, device: int | None = None) -> None:
        self.id = 0 if device is None else int(device)

    compute_capability = "90"

    def __enter__(self) -> Device:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def use(self) -> None:
        return None

    def synchronize(self) -> None:
        return None


class Stream:
    __slots__ = ("ptr", "non_blocking")
    _next = 0x1000

    def __init__(self, null: bool = False, non_blocking: bool = False, ptds: bool = False) -> None:
        Stream._next += 0x10
        self.ptr = 0 if null else Stream._next
        self.non_blocking = non_blocking

    def __enter__(self) -> Stream:
        _STACK.append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        _STACK.pop()

    def use(self) -> Stream:
        return self

    def synchronize(self) -> None:
        return None

    def wait_event(self, event: Any) -> None:
        return None

    def record(self, event: Any = None) -> Any:
        return event if event is not None else Event()

    @property
    def done(self) -> bool:
        return True


Stream.null = Stream(null=True)  # type: ignore[attr-defined]


class Event:
    __slots__ = ("done",)

    def __init__(self, block: bool = False, disable_timing: bool = False, interprocess: bool = False) -> None:
        self.done = True

    def record(self, stream: Any = None) -> None:
        return None

    def synchronize(self) -> None:
        return None

    def query(self) -> bool:
        return True


def get_current_stream(device_id: int = -1) -> Stream:
    return _STACK[-1] if _STACK else Stream.null  # type: ignore[attr-defined,no-any-return]


def get_elapsed_time(start: Event, end: Event) -> float:
    return 0.0


def is_available() -> bool:
    return True
