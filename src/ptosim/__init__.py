"""ptosim — a NumPy Cube/Vector tile simulator with the PyPTO 0.2 programming interface.

A kernel written for ptosim differs from PyPTO code only in its import line::

    import ptosim as pypto

    @pypto.frontend.jit(runtime_options={"stitch_function_max_num": 128})
    def kernel(x: pypto.Tensor[[pypto.DYNAMIC, 4096], pypto.DT_BF16], ...):
        ...

ptosim computes with bit-faithful low-precision numerics, enforces the hardware rules of the
platform profile (``use_platform``), validates every runtime and pass option and records every
tile op for the cost model. It never imports pattern-gen.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any

from .vocabulary import DTYPE_NAMES as _DTYPE_NAMES
from .vocabulary import OPS as _OPS

__version__ = "0.1.0"

#: where each public name lives. Loaded on first use (PEP 562), so a tool that needs only the
#: platform profiles (``ptosim.platform``) does not pay for NumPy kernels, options and the cost model.
_SOURCES: dict[str, tuple[str, ...]] = {
    "branch": ("cond", "is_loop_begin", "is_loop_end"),
    "cast": ("CastMode", "SaturationMode"),
    "config": ("get_pass_options", "options", "set_options", "set_pass_options", "set_semantic_label"),
    "control": ("loop", "loop_unroll", "unroll_schedule"),
    "dtypes": ("DataType", "bytes_of"),
    "errors": (
        "CapacityError", "DTypeError", "OptionError", "PlatformError", "PtoSimError", "PtoSimWarning",
        "ShapeError", "SymbolicError", "TileShapeError",
    ),
    "machine": ("use_platform",),
    "options": ("RunMode",),
    "platform": ("Profile", "available_platforms", "load_platform"),
    "symbolic": ("SymbolicScalar",),
    "tensor": ("DYNAMIC", "STATIC", "CachePolicy", "Tensor"),
    "tiles": ("get_cube_tile_shapes", "get_vec_tile_shapes", "set_cube_tile_shapes", "set_vec_tile_shapes"),
}
_WHERE = {name: module for module, names in _SOURCES.items() for name in names} | {o.name: o.module for o in _OPS.values()}
#: submodules that are part of the API (``pypto.frontend.jit``, ``ptosim.cost``)
_MODULES = ("frontend", "experimental", "cost", "testing")
_DTYPES = tuple(f"DT_{name}" for name in _DTYPE_NAMES)


def __getattr__(name: str) -> Any:  # PEP 562
    if name in _MODULES:
        value: Any = importlib.import_module(f".{name}", __name__)
    elif name in _WHERE:
        value = getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
    elif name in _DTYPES:
        value = getattr(importlib.import_module(".dtypes", __name__).DataType, name)
    elif name == "tensor":  # PyPTO spells the named-buffer constructor both ways
        value = __getattr__("Tensor")
    else:
        raise AttributeError(f"module 'ptosim' has no attribute {name!r}")
    globals()[name] = value  # resolved once
    return value


class _Package(types.ModuleType):
    """Three API names are also submodule names (``cast``, ``options``, ``tensor``); importing the
    submodule must not replace the function or class that PyPTO's API gives that name."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in ("cast", "options", "tensor") and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "frontend", "experimental", "testing", "cost",
    "Tensor", "tensor", "DYNAMIC", "STATIC", "CachePolicy", "DataType", "bytes_of", "SymbolicScalar",
    *_DTYPES,
    "CastMode", "SaturationMode", "RunMode",
    "set_vec_tile_shapes", "get_vec_tile_shapes", "set_cube_tile_shapes", "get_cube_tile_shapes",
    "set_semantic_label", "set_options", "options", "set_pass_options", "get_pass_options",
    "loop", "loop_unroll", "unroll_schedule", "cond", "is_loop_begin", "is_loop_end",
    *_OPS,
    "use_platform", "load_platform", "available_platforms", "Profile",
    "PtoSimError", "TileShapeError", "CapacityError", "DTypeError", "ShapeError", "SymbolicError",
    "OptionError", "PlatformError", "PtoSimWarning",
]
