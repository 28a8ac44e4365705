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

from . import experimental, frontend
from .cast import CastMode, SaturationMode
from .config import get_pass_options, options, set_options, set_pass_options, set_semantic_label
from .control import loop, loop_unroll, unroll_schedule
from .cube import matmul, scaled_mm
from .dtypes import DataType, bytes_of
from .errors import (
    CapacityError,
    DTypeError,
    OptionError,
    PlatformError,
    PtoSimError,
    PtoSimWarning,
    ShapeError,
    SymbolicError,
    TileShapeError,
)
from .machine import use_platform
from .movement import assemble, reshape, view
from .ops import abs, add, amax, cast, div, exp, full, mul, rsqrt, sqrt, sub, sum, zeros
from .options import RunMode
from .platform import Profile, available_platforms, load_platform
from .symbolic import SymbolicScalar
from .tensor import DYNAMIC, STATIC, CachePolicy, Tensor
from .tiles import get_cube_tile_shapes, get_vec_tile_shapes, set_cube_tile_shapes, set_vec_tile_shapes

DT_INT8 = DataType.DT_INT8
DT_INT16 = DataType.DT_INT16
DT_INT32 = DataType.DT_INT32
DT_INT64 = DataType.DT_INT64
DT_UINT8 = DataType.DT_UINT8
DT_FP16 = DataType.DT_FP16
DT_FP32 = DataType.DT_FP32
DT_BF16 = DataType.DT_BF16
DT_BOOL = DataType.DT_BOOL
DT_FP8E4M3 = DataType.DT_FP8E4M3
DT_FP8E5M2 = DataType.DT_FP8E5M2
DT_FP8E8M0 = DataType.DT_FP8E8M0

tensor = Tensor  # PyPTO spells the named-buffer constructor both ways

__version__ = "0.1.0"

#: submodules loaded on first use: the cost model and the test helpers are not needed to run a
#: kernel (``import ptosim.cost`` or ``ptosim.cost`` both work)
_LAZY = ("cost", "testing")


def __getattr__(name: str):  # PEP 562
    if name in _LAZY:
        import importlib

        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'ptosim' has no attribute {name!r}")

__all__ = [
    "frontend", "experimental", "testing", "cost",
    "Tensor", "tensor", "DYNAMIC", "STATIC", "CachePolicy", "DataType", "bytes_of", "SymbolicScalar",
    "DT_INT8", "DT_INT16", "DT_INT32", "DT_INT64", "DT_UINT8", "DT_FP16", "DT_FP32", "DT_BF16", "DT_BOOL",
    "DT_FP8E4M3", "DT_FP8E5M2", "DT_FP8E8M0",
    "CastMode", "SaturationMode", "RunMode",
    "set_vec_tile_shapes", "get_vec_tile_shapes", "set_cube_tile_shapes", "get_cube_tile_shapes",
    "set_semantic_label", "set_options", "options", "set_pass_options", "get_pass_options",
    "loop", "loop_unroll", "unroll_schedule",
    "add", "sub", "mul", "div", "abs", "exp", "sqrt", "rsqrt", "sum", "amax", "cast", "full", "zeros",
    "view", "assemble", "reshape", "matmul", "scaled_mm",
    "use_platform", "load_platform", "available_platforms", "Profile",
    "PtoSimError", "TileShapeError", "CapacityError", "DTypeError", "ShapeError", "SymbolicError",
    "OptionError", "PlatformError", "PtoSimWarning",
]
