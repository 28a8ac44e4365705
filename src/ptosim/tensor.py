"""Tensors: kernel arguments in GM, named intermediate buffers and tile results.

A ``Tensor`` wraps a NumPy array in its storage dtype (ml_dtypes for BF16/FP8). Kernel arguments
wrap the caller's arrays without copying, so ``assemble`` writes the caller's outputs in place.
``valid_shape`` marks how much of a tensor is real data; a view reads zeros past it and
``assemble`` writes only inside it.

Outside a running kernel ``Tensor(shape, dtype)`` is a *spec* (no storage), which is what a jit
signature annotation needs; inside a kernel the same call allocates a named buffer filled with
``unwritten_fill`` (NaN; integers: the dtype's minimum), so reading a buffer before writing it shows up in the output.
"""

from __future__ import annotations

import enum
import math
from typing import Any, Sequence

import numpy as np

from .dtypes import DataType, dtype_from_name
from .errors import ShapeError
from .machine import active_machine, current_machine
from .record import TensorRef
from .symbolic import ScalarLike, SymbolicScalar, concrete

__all__ = ["Tensor", "DYNAMIC", "STATIC", "CachePolicy", "poison", "unwritten_fill", "TensorSpec"]


class _DimMarker:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


#: an axis whose extent is only known at call time (the token axis)
DYNAMIC = _DimMarker("DYNAMIC")
#: an axis fixed by the first call
STATIC = _DimMarker("STATIC")


class CachePolicy(enum.Enum):
    """PyPTO 0.2.0's cache policies (``MAX_NUM`` is its enum sentinel)."""

    NONE_CACHEABLE = 1
    MAX_NUM = 2


def unwritten_fill(dtype: DataType | str) -> float | int | bool:
    """The value that marks never-written data: NaN for floats, ``iinfo(dtype).min`` for integers
    (True for BOOL). ptosim fills named buffers with it and the generated kernel hosts fill the
    output buffers with it, so unwritten data reads the same in both."""
    dt = dtype_from_name(dtype)
    if dt.is_float:
        return float("nan")
    if dt == DataType.DT_BOOL:
        return True
    return int(np.iinfo(dt.np_dtype).min)


def poison(shape: Sequence[int], dtype: DataType) -> np.ndarray:
    """Storage for a never-written buffer, filled with ``unwritten_fill(dtype)``."""
    return np.full(tuple(shape), unwritten_fill(dtype), dtype=dtype.np_dtype)


class TensorSpec:
    """Shape/dtype of a jit parameter: ints, ``DYNAMIC`` or ``STATIC`` per axis."""

    def __init__(self, shape: Sequence[Any], dtype: DataType | str, name: str = "") -> None:
        self.shape = list(shape)
        self.dtype = dtype_from_name(dtype)
        self.name = name

    def __repr__(self) -> str:
        return f"Tensor({self.shape}, {self.dtype!r})"


class _TensorMeta(type):
    def __getitem__(cls, item: Any) -> TensorSpec:
        """``Tensor[[DYNAMIC, 4096], DT_BF16]`` annotation form."""
        if not isinstance(item, tuple) or len(item) not in (2, 3):
            raise TypeError("use Tensor[[dims...], dtype] or Tensor[[dims...], dtype, name]")
        return TensorSpec(*item)


class Tensor(metaclass=_TensorMeta):
    """A PyPTO tensor backed by a NumPy array (see the module docstring)."""

    __slots__ = (
        "_data", "_lazy", "dims", "dtype", "name", "kind", "uid", "valid", "_dynamic", "cache_policy", "_ref",
        "__weakref__",
    )

    def __new__(cls, shape: Sequence[Any] | None = None, dtype: Any = None, name: str = "", *args: Any, **kw: Any):
        if shape is not None and active_machine() is None:
            # At definition time (an annotation) there is no machine: a spec, not storage.
            return TensorSpec(shape, dtype, name)
        return super().__new__(cls)

    def __init__(self, shape: Sequence[Any] | None = None, dtype: Any = None, name: str = "") -> None:
        if shape is None:  # internal construction through Tensor.wrap
            return
        machine = current_machine("Tensor")
        dt = dtype_from_name(dtype)
        # PyPTO tensors may have symbolic (dynamic) dims; ptosim allocates their current value.
        dims = [concrete(d) if isinstance(d, SymbolicScalar) else d for d in shape]
        if any(isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d <= 0 for d in dims):
            raise ShapeError(f"buffer {name!r} shape {list(shape)} must be positive ints or symbolic scalars",
                             code="argument", op="Tensor")
        self._setup(poison(dims, dt), dt, name or f"buf{machine._uid + 1}", "buffer", machine.next_uid())

    def _setup(self, data: np.ndarray | None, dtype: DataType, name: str, kind: str, uid: int,
               dims: tuple[int, ...] | None = None) -> None:
        self._data = data
        #: a deferred computation (``lazy.GemmBatch`` or ``lazy.PendingWrites``) that fills or updates ``_data`` when read
        self._lazy: Any = None
        #: the tensor's extents, known before a deferred result is computed
        self.dims: tuple[int, ...] = tuple(data.shape) if data is not None else tuple(dims or ())
        self.dtype = dtype
        self.name = name
        self.kind = kind
        self.uid = uid
        self.valid: tuple[int, ...] | None = None
        self._dynamic: tuple[bool, ...] = (False,) * len(self.dims)
        self.cache_policy: dict[CachePolicy, bool] = {}
        self._ref: TensorRef | None = None

    @classmethod
    def wrap(
        cls,
        data: np.ndarray | None,
        dtype: DataType,
        *,
        name: str = "",
        kind: str = "tile",
        uid: int = 0,
        valid: Sequence[int] | None = None,
        dynamic: Sequence[bool] | None = None,
        dims: Sequence[int] | None = None,
    ) -> "Tensor":
        """Wrap ``data`` without copying; ``data=None`` with ``dims`` makes a deferred result."""
        t = object.__new__(cls)
        t._setup(data, dtype, name, kind, uid, None if dims is None else tuple(int(d) for d in dims))
        if valid is not None and tuple(valid) != t.dims:
            t.valid = tuple(int(v) for v in valid)
        if dynamic is not None:
            t._dynamic = tuple(dynamic)
        return t

    @property
    def data(self) -> np.ndarray:
        """The values in storage dtype; a deferred result or pending write is settled first."""
        if self._lazy is not None:
            self._lazy.settle(self)
        return self._data

    # -- PyPTO surface ---------------------------------------------------------------------
    @property
    def shape(self) -> list[ScalarLike]:
        """Dims as PyPTO reports them: dynamic axes of kernel arguments are symbolic."""
        return [
            SymbolicScalar(n, f"{self.name}.shape[{i}]") if dyn else int(n)
            for i, (n, dyn) in enumerate(zip(self.dims, self._dynamic))
        ]

    @property
    def dim(self) -> int:
        return len(self.dims)

    @property
    def valid_shape(self) -> list[int]:
        return list(self.valid) if self.valid is not None else list(self.dims)

    def set_cache_policy(self, policy: CachePolicy, value: bool) -> None:
        if not isinstance(policy, CachePolicy):
            raise ShapeError(f"cache policy must be a CachePolicy, got {policy!r}", op="set_cache_policy")
        self.cache_policy[policy] = bool(value)
        self._ref = None

    def get_cache_policy(self, policy: CachePolicy) -> bool:
        return self.cache_policy.get(policy, False)

    # Python operators map to the ops, as in PyPTO (imported at the call: ``ops`` imports this module).
    def __add__(self, other: Any) -> "Tensor":
        from .ops import add

        return add(self, other)

    def __sub__(self, other: Any) -> "Tensor":
        from .ops import sub

        return sub(self, other)

    def __mul__(self, other: Any) -> "Tensor":
        from .ops import mul

        return mul(self, other)

    def __truediv__(self, other: Any) -> "Tensor":
        from .ops import div

        return div(self, other)

    def __neg__(self) -> "Tensor":
        from .ops import mul

        return mul(self, -1.0)

    def __getitem__(self, key: Any) -> Any:
        """``t[b, j]`` (ints / symbolic scalars, an INT32 tensor) reads one element as a symbolic
        scalar, as PyPTO's GetTensorData (a block-table entry, a sequence length); a key of
        slices is a ``view``."""
        from .indexing import getitem  # indexing imports this module

        return getitem(self, key)

    def __setitem__(self, key: Any, value: "Tensor") -> None:
        """``acc[:] = x`` writes ``x`` into the whole buffer (PyPTO's accumulator update)."""
        from .indexing import setitem

        setitem(self, key, value)

    def move(self, value: "Tensor") -> None:
        """Take ``value``'s content (PyPTO's in-place update of a kernel argument, e.g. after a
        ``scatter_update``)."""
        from .scatter import move  # scatter imports this module

        move(self, value)

    def __bool__(self) -> bool:
        raise ShapeError(f"tensor {self.name!r} used as a Python bool", op="bool")

    def __repr__(self) -> str:
        valid = f", valid_shape={list(self.valid)}" if self.valid is not None else ""
        return f"Tensor({self.name!r}, {list(self.dims)}, {self.dtype!r}{valid})"

    # -- simulator-internal helpers --------------------------------------------------------
    @property
    def size(self) -> int:
        return math.prod(self.dims)

    @property
    def cacheable(self) -> bool:
        return not self.cache_policy.get(CachePolicy.NONE_CACHEABLE, False)

    def ref(self) -> TensorRef:
        """The record's view of this tensor (made once: ops record their operands every time)."""
        if self._ref is not None:
            return self._ref
        self._ref = TensorRef(
            uid=self.uid,
            name=self.name,
            kind=self.kind,
            shape=self.dims,
            dtype=self.dtype.short,
            nbytes=self.size * self.dtype.nbytes,
            cacheable=self.cacheable,
        )
        return self._ref
