"""Configuration calls made inside a kernel: labels, scoped options, operation options.

``set_options``/``set_pass_options`` change the current scope (the jit body or the innermost
``loop``); ``options(...)`` opens a nested scope as a context manager. Unset values are inherited
from the enclosing scopes; what each scope ended with is kept in the run record for the cost model.
"""

from __future__ import annotations

import contextlib
import re
from typing import Any, Iterator, Mapping, Sequence

from .errors import OptionError, warn
from .machine import current_machine
from .tiles import set_cube_tile_shapes, set_vec_tile_shapes

__all__ = [
    "set_semantic_label",
    "set_options",
    "options",
    "set_pass_options",
    "get_pass_options",
    "set_operation_options",
    "get_operation_options",
]

_FUNC_KEY = re.compile(r"func\d+_\d+")


def set_semantic_label(label: str) -> None:
    """Label every following op until the label changes (``""`` clears it)."""
    machine = current_machine("set_semantic_label")
    if not isinstance(label, str):
        raise OptionError(f"label must be a str, got {label!r}", code="option-type", op="set_semantic_label")
    if _FUNC_KEY.fullmatch(label):
        # PyPTO 0.2.0 accepts it (probe_opts.out), but a merge-setting key spelt like it is read
        # as a function key, never as this label.
        warn(f"label {label!r} is spelt like a funcM_O merge key; pass options cannot address it by label")
    machine.label = label


def _apply(
    machine: Any,
    runtime_options: Mapping[str, Any] | None,
    pass_options: Mapping[str, Any] | None,
    operation_options: Mapping[str, Any] | None,
    vec_tile_shapes: Sequence[int] | None,
    cube_tile_shapes: Sequence[Sequence[int]] | None,
    source: str,
) -> None:
    if runtime_options:
        machine.options.set_runtime(dict(runtime_options))
    if pass_options:
        machine.options.set_pass(dict(pass_options), source=source)
    if operation_options:
        set_operation_options(**operation_options)
    if vec_tile_shapes is not None:
        set_vec_tile_shapes(*vec_tile_shapes)
    if cube_tile_shapes is not None:
        set_cube_tile_shapes(*cube_tile_shapes)


def set_options(
    *,
    runtime_options: Mapping[str, Any] | None = None,
    pass_options: Mapping[str, Any] | None = None,
    operation_options: Mapping[str, Any] | None = None,
    vec_tile_shapes: Sequence[int] | None = None,
    cube_tile_shapes: Sequence[Sequence[int]] | None = None,
    **unsimulated: Any,
) -> None:
    """Overwrite options of the current scope (PyPTO's ``set_options``)."""
    machine = current_machine("set_options")
    _check_unsimulated(unsimulated, "set_options")
    _apply(machine, runtime_options, pass_options, operation_options, vec_tile_shapes, cube_tile_shapes, "set_options")


_UNSIMULATED = ("codegen_options", "host_options", "verify_options", "debug_options", "conv_tile_shapes", "matrix_size")


def _check_unsimulated(kw: Mapping[str, Any], op: str) -> None:
    for key in kw:
        if key not in _UNSIMULATED:
            valid = "runtime_options, pass_options, operation_options, vec_tile_shapes, cube_tile_shapes, " + ", ".join(
                _UNSIMULATED
            )
            raise OptionError(f"unexpected keyword {key!r}; valid: {valid}", code="unknown-option", op=op)


@contextlib.contextmanager
def options(
    name: str = "",
    *,
    runtime_options: Mapping[str, Any] | None = None,
    pass_options: Mapping[str, Any] | None = None,
    operation_options: Mapping[str, Any] | None = None,
    vec_tile_shapes: Sequence[int] | None = None,
    cube_tile_shapes: Sequence[Sequence[int]] | None = None,
    **unsimulated: Any,
) -> Iterator[None]:
    """A nested options scope (PyPTO's ``options`` context manager)."""
    machine = current_machine("options")
    _check_unsimulated(unsimulated, "options")
    with machine.scope("options", name or "options"):
        _apply(machine, runtime_options, pass_options, operation_options, vec_tile_shapes, cube_tile_shapes, "set_options")
        yield


def set_pass_options(**pass_options: Any) -> None:
    machine = current_machine("set_pass_options")
    machine.options.set_pass(pass_options, source="set_pass_options")


def get_pass_options() -> dict[str, Any]:
    return current_machine("get_pass_options").options.current().pass_options.model_dump()


def set_operation_options(*, combine_axis: bool | None = None, force_combine_axis: bool | None = None) -> None:
    """``pypto.experimental.set_operation_options`` (only the axis-combining switches exist)."""
    machine = current_machine("set_operation_options")
    for key, value in (("combine_axis", combine_axis), ("force_combine_axis", force_combine_axis)):
        if value is None:
            continue
        if not isinstance(value, bool):
            raise OptionError(f"{key} must be a bool, got {value!r}", code="option-type", op="set_operation_options")
        machine.operation_options[key] = value


def get_operation_options() -> dict[str, Any]:
    return dict(current_machine("get_operation_options").operation_options)
