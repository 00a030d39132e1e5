"""``nda.save``, ``nda.savez``, ``nda.savez_compressed`` and ``nda.load``: NumPy's ``.npy``/``.npz`` files
(and ``nda.savetxt``/``nda.loadtxt``: NumPy's text files, written and read by NumPy).

The files are NumPy's own (written and read by ``numpy.save``/``numpy.load``), so NumPy
reads what nda writes and nda reads what NumPy writes. Saving reads the array (a sync
point, like ``asnumpy``); loading builds the array on ``device`` (``nda.load(path,
device="sim")``). nda never unpickles unless asked: ``allow_pickle`` is False by default,
as in NumPy, and even when it is True an object array cannot become an nda array.

What nda arrays cannot hold is refused with a TypeError naming the dtype (``float16``,
strings, structured dtypes); data stored big-endian is converted to the machine's byte
order. ``mmap_mode`` maps the file (NumPy's modes): on cpu the array is backed by the file
itself (``"r"``: read-only, a write raises; ``"r+"``: writes reach the file; ``"c"``: writes
stay in memory), on another device it is copied in from the mapping, and ``"r+"`` is refused
there (a write into the device copy would never reach the file). ``"w+"`` is refused
with a ValueError before the file is opened: it would create or truncate the file, and a
load never changes the file it reads.

Sparse arrays are not ``.npy`` data: ``nda.save`` refuses them and points to
``nda.sparse.save_npz``, which writes SciPy's format for csr (``scipy.sparse.load_npz`` reads
it) and refuses row_sparse, which SciPy has no format for.

Layer: arrays and front end (README, "Architecture").
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from . import _api
from ._array import NDArray
from ._devices import default_device
from .ops.creation import nda_dtype

__all__ = ["save", "savez", "savez_compressed", "load", "NpzFile", "savetxt", "loadtxt"]

#: NumPy's memory-map modes a load may use (and their long names); never ``"w+"``/``"write"``.
_MMAP_MODES = {"r": "r", "r+": "r+", "c": "c", "readonly": "r", "readwrite": "r+", "copyonwrite": "c"}  # (np.load takes the short names only)


def _host(value: Any, op: str, name: str) -> np.ndarray:
    """The data to write: an nda array read to the host (a sync point), or array-like data as ``asarray`` takes it."""
    x = value if isinstance(value, NDArray) else _api.asarray(value)
    if x.layout.name != "strided":
        raise ValueError(
            f"{op}(): {name} is stored as {x.layout.name}, and .npy files hold dense arrays; save it with "
            f"nda.sparse.save_npz(file, x) (SciPy's format; csr only), or densify it first with x.to_layout('strided')"
        )
    return np.asarray(x._host())  # np.save writes any layout in C (or Fortran) order


def save(file: Any, arr: Any, /) -> None:
    """Write ``arr`` to a NumPy ``.npy`` file (``numpy.load`` reads it); ``.npy`` is appended to a
    path without it, as NumPy does. ``file`` may be a path or a binary file object."""
    np.save(file, _host(arr, "save", "arr"), allow_pickle=False)


def savez(file: Any, *args: Any, **kwds: Any) -> None:
    """Write several arrays to an uncompressed ``.npz`` archive (``arr_0``, ``arr_1``, ... and the keyword names)."""
    np.savez(file, **_named("savez", args, kwds))


def savez_compressed(file: Any, *args: Any, **kwds: Any) -> None:
    """Write several arrays to a compressed (deflate) ``.npz`` archive; names as :func:`savez`."""
    np.savez_compressed(file, **_named("savez_compressed", args, kwds))


def _named(op: str, args: tuple[Any, ...], kwds: dict[str, Any]) -> dict[str, np.ndarray]:
    arrays = {f"arr_{i}": a for i, a in enumerate(args)}
    for name, value in kwds.items():
        if name in arrays:
            raise ValueError(f"{op}(): cannot use {name!r} as a keyword: it names positional argument {name[4:]}")
        arrays[name] = value
    return {name: _host(value, op, repr(name)) for name, value in arrays.items()}


def load(file: Any, *, device: Any = None, mmap_mode: str | None = None, allow_pickle: bool = False) -> Any:
    """Read a ``.npy`` file (an array on ``device``) or a ``.npz`` archive (an :class:`NpzFile`).

    ``device`` defaults to nda's default device. See the module docstring for ``mmap_mode``
    and ``allow_pickle``; a pickled file is refused unless ``allow_pickle=True``.
    """
    if not isinstance(allow_pickle, bool):
        raise TypeError(f"load(): allow_pickle must be a bool, got {allow_pickle!r}")
    if mmap_mode is not None:
        if not isinstance(mmap_mode, str):
            raise TypeError(f"load(): mmap_mode must be None or a str ({', '.join(map(repr, _MMAP_MODES))}), got {type(mmap_mode).__name__}")
        if mmap_mode in ("w+", "write"):
            raise ValueError(
                f"load(): mmap_mode={mmap_mode!r} creates or truncates the file, and a load never does; "
                "use 'r' (read-only), 'r+' (writes reach the file) or 'c' (copy on write), "
                "or numpy.lib.format.open_memmap(path, mode='w+', dtype=..., shape=...) to make a new file"
            )
        if mmap_mode not in _MMAP_MODES:
            raise ValueError(f"load(): mmap_mode must be one of {', '.join(map(repr, _MMAP_MODES))}, got {mmap_mode!r}")
        mmap_mode = _MMAP_MODES[mmap_mode]
        target = default_device() if device is None else device
        if mmap_mode == "r+" and getattr(target, "type", str(target).partition(":")[0]) != "cpu":
            raise ValueError(
                f"load(): mmap_mode='r+' makes writes reach the file, which holds only on cpu (the array is the "
                f"mapping); on {target} the array is a copy in device memory, where a write would never reach the "
                "file: load with mmap_mode='r', 'c' or None there, and write the file back with nda.save"
            )
    loaded = np.load(file, mmap_mode=mmap_mode, allow_pickle=allow_pickle)
    if isinstance(loaded, np.lib.npyio.NpzFile):
        return NpzFile(loaded, device)
    if not isinstance(loaded, np.ndarray):  # a pickled object other than an array (allow_pickle=True)
        raise TypeError(f"load(): the file holds a pickled {type(loaded).__name__}, not an array; nda loads arrays only")
    return _to_nda(loaded, device, "load()")


def savetxt(
    fname: Any,
    X: Any,
    fmt: Any = "%.18e",
    delimiter: str = " ",
    newline: str = "\n",
    header: str = "",
    footer: str = "",  # noqa: N803
    comments: str = "# ",
    encoding: str | None = None,
) -> None:
    """Write a 1-D or 2-D array to a text file, as ``numpy.savetxt`` writes it (same arguments and
    format); the array is read to the host (a sync point, like ``asnumpy``)."""
    np.savetxt(
        fname,
        _host(X, "savetxt", "X"),
        fmt=fmt,
        delimiter=delimiter,
        newline=newline,
        header=header,
        footer=footer,
        comments=comments,
        encoding=encoding,
    )


def loadtxt(
    fname: Any,
    dtype: Any = float,
    comments: Any = "#",
    delimiter: Any = None,
    converters: Any = None,
    skiprows: int = 0,
    usecols: Any = None,
    unpack: bool = False,
    ndmin: int = 0,
    encoding: Any = None,
    max_rows: Any = None,
    *,
    quotechar: Any = None,
    like: Any = None,
    device: Any = None,
) -> Any:
    """Read a text file as ``numpy.loadtxt`` does (same arguments), onto ``device`` (default: nda's default device).

    ``dtype`` may be an nda dtype; what nda arrays cannot hold (strings, structured dtypes)
    is refused with a TypeError naming the dtype. ``unpack=True`` gives a tuple of arrays.
    """
    from . import _dtypes

    if like is not None:
        device = like.device if device is None and isinstance(like, NDArray) else device
    host_dtype = dtype.numpy if isinstance(dtype, _dtypes.DType) else dtype
    data = np.loadtxt(
        fname,
        dtype=host_dtype,
        comments=comments,
        delimiter=delimiter,
        converters=converters,
        skiprows=skiprows,
        usecols=usecols,
        unpack=unpack,
        ndmin=ndmin,
        encoding=encoding,
        max_rows=max_rows,
        quotechar=quotechar,
    )
    if unpack and isinstance(data, (tuple, list)):
        return tuple(_to_nda(np.ascontiguousarray(d), device, "loadtxt()") for d in data)
    if unpack:
        return tuple(_to_nda(np.ascontiguousarray(d), device, "loadtxt()") for d in data) if data.ndim > 1 else _to_nda(data, device, "loadtxt()")
    return _to_nda(data, device, "loadtxt()")


def _to_nda(host: Any, device: Any, where: str) -> NDArray:
    if not isinstance(host, np.ndarray):  # an .npz member NumPy could not read as .npy data: its raw bytes
        raise TypeError(f"{where}: the archive member is not NumPy array data (.npy) but {type(host).__name__}; nda loads arrays only")
    if host.dtype.kind == "O":
        raise TypeError(f"{where}: the file holds Python objects (an object array); nda arrays hold numbers")
    if not host.dtype.isnative:
        host = host.astype(host.dtype.newbyteorder("="))  # same values, the machine's byte order
    nda_dtype(host, where.rstrip("()"))  # a TypeError naming the dtype if nda has no equivalent
    # On cpu the array takes the loaded (or mapped) memory as it is: a plain ndarray view of it.
    return _api.asarray(host.view(np.ndarray), device=device)


class NpzFile(Mapping[str, NDArray]):
    """The arrays of a ``.npz`` archive, read one by one when asked for (``f["x"]``), onto ``device``.

    Like NumPy's ``NpzFile``: ``files`` lists the names, reading an entry reads the file
    each time, ``close()`` (or ``with nda.load(...) as f:``) closes it.
    """

    def __init__(self, archive: Any, device: Any) -> None:
        self._archive = archive
        self.device = device

    @property
    def files(self) -> list[str]:
        return list(self._archive.files)

    def __getitem__(self, name: str) -> NDArray:
        return _to_nda(self._archive[name], self.device, f"load() of {name!r}")

    def __iter__(self) -> Iterator[str]:
        return iter(self._archive.files)

    def __len__(self) -> int:
        return len(self._archive.files)

    def __contains__(self, name: object) -> bool:
        return name in self._archive.files

    def close(self) -> None:
        self._archive.close()

    def __enter__(self) -> NpzFile:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        where = getattr(self._archive, "fid", None)
        name = getattr(where, "name", None) if where is not None else None
        target = f" onto {self.device}" if self.device is not None else ""
        return f"<nda.NpzFile {os.fspath(name) if isinstance(name, (str, os.PathLike)) else '(file object)'}: {', '.join(self.files)}{target}>"
