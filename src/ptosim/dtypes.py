"""The dtype vocabulary: one record per PyPTO ``DataType`` member.

Each member carries its PyPTO spelling (``DT_BF16``), the short card spelling (``BF16``), the
NumPy/ml_dtypes storage type, its size in bytes and its numeric kind. ptosim, the pattern-gen
resolver and the templates all read this one table, so the spellings never drift apart.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

import numpy as np

from .vocabulary import DTYPES

__all__ = [
    "DataType",
    "DTypeInfo",
    "dtype_from_name",
    "dtype_of_array",
    "bytes_of",
]


@dataclass(frozen=True)
class DTypeInfo:
    short: str  #: card spelling, e.g. ``BF16``
    np_dtype: np.dtype  #: storage dtype (numpy or ml_dtypes)
    nbytes: int
    kind: str  #: ``float``, ``int``, ``uint`` or ``bool``
    #: float formats only: largest finite magnitude (used by saturating casts)
    max_finite: float | None = None


def _f(np_type: type, short: str) -> DTypeInfo:
    import ml_dtypes  # ~1 s to import: loaded with the table, on the first numeric use

    dt = np.dtype(np_type)
    return DTypeInfo(short, dt, DTYPES[short].nbytes, DTYPES[short].kind, float(ml_dtypes.finfo(dt).max))


def _i(np_type: type, short: str) -> DTypeInfo:
    return DTypeInfo(short, np.dtype(np_type), DTYPES[short].nbytes, DTYPES[short].kind)


class _Members(enum.Enum):
    """PyPTO ``DataType`` members that ptosim stores (values are PyPTO 0.2.0's enum codes)."""

    @property
    def info(self) -> DTypeInfo:
        return self._i

    @property
    def short(self) -> str:
        return self._short

    def __getattr__(self, name: str) -> Any:
        # Only reached while the table is not loaded yet: ``_i`` is then a plain attribute.
        if name == "_i":
            _load_table()
            return self.__dict__["_i"]
        raise AttributeError(name)

    @property
    def np_dtype(self) -> np.dtype:
        return self._i.np_dtype

    @property
    def nbytes(self) -> int:
        return self._nbytes

    @property
    def is_float(self) -> bool:
        return self._kind == "float"

    @property
    def is_int(self) -> bool:
        return self._kind in ("int", "uint")

    # Members are singletons: identity hashing is exact and, unlike Enum's name hash, runs in C
    # (dtypes key the profile's tables, looked up on every op).
    __hash__ = object.__hash__

    def __repr__(self) -> str:  # PyPTO prints members as DataType.DT_BF16
        return f"DataType.{self.name}"


#: the members, in code order, from ``ptosim.vocabulary`` (the one dtype table)
DataType = _Members("DataType", [(f"DT_{d.name}", d.code) for d in sorted(DTYPES.values(), key=lambda d: d.code)],
                    module=__name__, qualname="DataType")
for _m in DataType:
    _m._short = _m.name.removeprefix("DT_")
    _m._nbytes, _m._kind = DTYPES[_m._short].nbytes, DTYPES[_m._short].kind

_INFO: dict[DataType, DTypeInfo] = {}
_BY_NP: dict[np.dtype, DataType] = {}


def _load_table() -> None:
    """The storage types (NumPy and ml_dtypes), loaded once on first use: importing ml_dtypes costs
    about a second, which the catalogue and CLI commands that never compute should not pay."""
    if _INFO:
        return
    import ml_dtypes

    for m in DataType:
        spec = DTYPES[m.short]
        module, attr = spec.storage.split(".")
        np_type = getattr(ml_dtypes if module == "ml_dtypes" else np, attr)
        _INFO[m] = _f(np_type, spec.name) if spec.kind == "float" else _i(np_type, spec.name)
    for m, info in _INFO.items():
        m._i = info  # direct attribute: the properties above are read on every op
    _BY_NP.update({info.np_dtype: m for m, info in _INFO.items()})


_BY_NAME: dict[str, DataType] = {}
for _m in DataType:
    _BY_NAME[_m.name] = _m
    _BY_NAME[_m.short] = _m


def dtype_from_name(name: str | DataType) -> DataType:
    """``"BF16"``, ``"DT_BF16"`` or a member -> the member; ValueError naming the valid spellings."""
    if isinstance(name, DataType):
        return name
    try:
        return _BY_NAME[str(name).upper()]
    except KeyError:
        valid = ", ".join(m.short for m in DataType)
        raise ValueError(f"unknown dtype {name!r}; valid: {valid}") from None


def dtype_of_array(arr: np.ndarray) -> DataType:
    """The DataType stored by a NumPy array (TypeError if ptosim has no such dtype)."""
    _load_table()
    try:
        return _BY_NP[arr.dtype]
    except KeyError:
        raise TypeError(f"arrays of dtype {arr.dtype} have no PyPTO DataType") from None


def bytes_of(dtype: DataType) -> int:
    """Element size in bytes, as ``pypto.bytes_of``."""
    return dtype.nbytes
