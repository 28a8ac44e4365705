"""Shared fixtures: run a few ptosim ops inside a real jit kernel call.

``run(fn, *arrays, tile=(8, 64), platform=None)`` wraps the NumPy ``arrays`` as kernel arguments
(static shapes, dtypes from the arrays), sets the vec tile if one is given, calls
``fn(*tensors)`` inside the kernel and returns copies of the values of the tensor(s) it returns.
Expected values in the tests are never computed by ptosim.
"""


import inspect
from typing import Any, Callable, Sequence

import numpy as np
import pytest

import ptosim as pypto
from ptosim.dtypes import dtype_of_array


def make_kernel(fn: Callable[..., Any], arrays: Sequence[np.ndarray], tile: Sequence[int] | None, sink: list):
    params = [
        inspect.Parameter(
            f"a{i}",
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
            annotation=pypto.Tensor[list(a.shape), dtype_of_array(a)],
        )
        for i, a in enumerate(arrays)
    ]

    def kernel(**tensors: Any) -> None:
        if tile is not None:
            pypto.set_vec_tile_shapes(*tile)
        result = fn(*(tensors[f"a{i}"] for i in range(len(arrays))))
        items = result if isinstance(result, (list, tuple)) else [result]
        sink.extend(np.array(t.data) if isinstance(t, pypto.Tensor) else t for t in items if t is not None)

    kernel.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    kernel.__name__ = getattr(fn, "__name__", "kernel")
    return pypto.frontend.jit(kernel)


def run_ops(
    fn: Callable[..., Any],
    *arrays: np.ndarray,
    tile: Sequence[int] | None = (8, 64),
    platform: str | None = None,
) -> Any:
    sink: list = []
    kernel = make_kernel(fn, arrays, tile, sink)
    if platform is None:
        kernel(*arrays)
    else:
        with pypto.use_platform(platform):
            kernel(*arrays)
    run_ops.last_kernel = kernel  # type: ignore[attr-defined]
    return sink[0] if len(sink) == 1 else sink


@pytest.fixture
def run() -> Callable[..., Any]:
    return run_ops
