"""``frontend.jit``: run a PyPTO-style kernel on NumPy arrays.

The kernel's tensor parameters are annotated ``Tensor[[DYNAMIC, 4096], DT_BF16]`` (or the call
form ``Tensor([...], DT_BF16)``); the kernel is called with NumPy arrays (torch CPU tensors too,
when torch is installed), outputs preallocated by the caller and written in place; it returns
nothing, as in PyPTO. Options are validated when the kernel is decorated, and each call runs on a
fresh ``Machine`` whose record (``kernel.last_record``) feeds the cost model.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, Mapping

import numpy as np

from .dtypes import dtype_of_array
from .errors import DTypeError, OptionError, ShapeError, warn
from .machine import Machine, default_platform, running
from .options import no_effect_warnings, validate_pass_options, validate_runtime_options
from .record import RunRecord
from .tensor import DYNAMIC, STATIC, Tensor, TensorSpec

__all__ = ["jit", "JitKernel"]

# Option groups PyPTO's jit takes besides runtime/pass options, with their keys (values are not
# simulated, only checked for spelling so that a typo does not pass silently).
_OTHER_GROUPS: dict[str, tuple[str, ...]] = {
    "host_options": (
        "compile_stage",
        "compile_monitor_enable",
        "compile_timeout",
        "compile_timeout_stage",
        "compile_monitor_print_interval",
    ),
    "codegen_options": ("support_dynamic_aligned", "soc_version", "enable_pmu_trace", "vf_options"),
    "verify_options": (
        "enable_pass_verify",
        "pass_verify_save_tensor",
        "pass_verify_save_tensor_dir",
        "pass_verify_pass_filter",
        "pass_verify_error_tol",
    ),
    "debug_options": ("compile_debug_mode", "runtime_debug_mode", "dump_pass_graph"),
}


def _check_group(group: str, options: Mapping[str, Any] | None) -> dict[str, Any]:
    options = dict(options or {})
    valid = _OTHER_GROUPS[group]
    for key in options:
        if key not in valid:
            raise OptionError(
                f"unknown {group} key {key!r}; valid keys: {', '.join(valid)}", code="unknown-option", op="jit"
            )
    return options


def _as_array(value: Any, name: str) -> np.ndarray:
    if isinstance(value, np.ndarray):
        return value
    torch = _torch()
    if torch is not None and isinstance(value, torch.Tensor):
        if value.dtype == torch.bfloat16:  # NumPy has no bf16: share the bits through int16
            import ml_dtypes

            return value.detach().view(torch.int16).numpy().view(ml_dtypes.bfloat16)
        return value.detach().numpy()
    raise ShapeError(f"argument {name!r} must be a NumPy array (or torch CPU tensor), got {type(value).__name__}", op="jit")


@functools.lru_cache(maxsize=1)
def _torch() -> Any:
    try:
        import torch  # noqa: F401 - optional

        return torch
    except ImportError:
        return None


def _check_annotation(ann: Any, kernel: str, pname: str) -> Any:
    """PyPTO 0.2.0 reads ``func.__annotations__`` as objects: a string annotation (what ``from
    __future__ import annotations`` makes of every annotation) is a non-tensor parameter there,
    and the call fails. Refuse it here, at the definition, with the reason and the fix."""
    if isinstance(ann, str):
        raise ShapeError(
            f"{kernel}: parameter {pname!r} is annotated with the string {ann[:80]!r}; PyPTO reads annotations as "
            "objects, so it would take the parameter for a non-tensor ('Non-tensor parameter must not be a "
            "torch.Tensor'). Remove `from __future__ import annotations` from the kernel's module",
            code="argument",
            op="jit",
        )
    return ann


class JitKernel:
    """A decorated kernel; calling it runs it on ptosim."""

    def __init__(
        self,
        func: Callable[..., Any],
        *,
        runtime_options: Mapping[str, Any] | None,
        pass_options: Mapping[str, Any] | None,
        other_options: Mapping[str, Mapping[str, Any]],
    ) -> None:
        self.func = func
        self.__name__ = func.__name__
        self.__doc__ = func.__doc__
        # Validated when decorated, so a bad option fails at the kernel definition.
        self._runtime_raw = dict(runtime_options or {})
        self._pass_raw = dict(pass_options or {})
        self.runtime_options = validate_runtime_options(self._runtime_raw)
        self.pass_options = validate_pass_options(self._pass_raw, source="jit")
        self.other_options = {g: _check_group(g, o) for g, o in other_options.items()}
        self.signature = inspect.signature(func)
        if self.signature.return_annotation is not inspect.Signature.empty:
            raise ShapeError(
                f"{func.__name__}: a return annotation is not allowed (PyPTO 0.2.0 refuses it); a kernel returns "
                "nothing and writes its results into out parameters",
                code="argument",
                op="jit",
            )
        self.specs: dict[str, TensorSpec] = {}
        for pname, param in self.signature.parameters.items():
            ann = _check_annotation(param.annotation, func.__name__, pname)
            if isinstance(ann, TensorSpec):
                self.specs[pname] = ann
        self._static: dict[tuple[str, int], int] = {}
        self.last_record: RunRecord | None = None

    def _bind(self, machine: Machine, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise ShapeError(f"{self.__name__}: {exc}", code="argument", op="jit") from None
        values: dict[str, Any] = {}
        for pname, value in bound.arguments.items():
            spec = self.specs.get(pname)
            if spec is None:
                values[pname] = value
                continue
            arr = _as_array(value, pname)
            dtype = dtype_of_array(arr)
            if dtype != spec.dtype:
                raise ShapeError(
                    f"argument {pname!r} is {dtype.short}, the kernel declares {spec.dtype.short}",
                    code="argument",
                    op="jit",
                )
            if not machine.profile.supports_dtype(dtype):
                raise DTypeError(
                    f"argument {pname!r} is {dtype.short}, which {machine.profile.name} does not support",
                    code="dtype-unsupported",
                    op="jit",
                    hint=f"supported: {', '.join(sorted(d.short for d in machine.profile.dtypes))}",
                )
            if arr.ndim != len(spec.shape):
                raise ShapeError(
                    f"argument {pname!r} has shape {list(arr.shape)}, the kernel declares {spec.shape}",
                    code="rank-mismatch",
                    op="jit",
                )
            dynamic = []
            for axis, (want, got) in enumerate(zip(spec.shape, arr.shape)):
                if want is DYNAMIC:
                    dynamic.append(True)
                    continue
                if want is STATIC:  # fixed by the first call, as PyPTO compiles once per static shape
                    want = self._static.setdefault((pname, axis), got)
                if want != got:
                    raise ShapeError(
                        f"argument {pname!r} axis {axis} is {got}, the kernel declares {want}",
                        code="shape-mismatch",
                        op="jit",
                    )
                dynamic.append(False)
            values[pname] = Tensor.wrap(arr, dtype, name=pname, kind="gm", uid=machine.next_uid(), dynamic=dynamic)
        return values

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        profile = default_platform()
        machine = Machine(profile, self.__name__)
        with running(machine), machine.scope("jit", self.__name__):
            machine.options.set_runtime(self._runtime_raw)
            machine.options.set_pass(self._pass_raw, source="jit")
            for message in no_effect_warnings(self.pass_options, cv_mix=profile.cv_mix, platform=profile.name):
                machine.record.warnings.append(message)
                warn(message)
            values = self._bind(machine, args, kwargs)
            self.func(**values)
            machine.settle_all()
        self.last_record = machine.record
        return None

    def __repr__(self) -> str:
        return f"<ptosim jit kernel {self.__name__}>"


def jit(
    func: Callable[..., Any] | None = None,
    *,
    host_options: Mapping[str, Any] | None = None,
    codegen_options: Mapping[str, Any] | None = None,
    pass_options: Mapping[str, Any] | None = None,
    runtime_options: Mapping[str, Any] | None = None,
    verify_options: Mapping[str, Any] | None = None,
    debug_options: Mapping[str, Any] | None = None,
    infer_controlflow_shape: Any = None,
    use_cache: bool = True,
) -> Any:
    """``@jit`` or ``@jit(runtime_options=..., pass_options=...)`` as in PyPTO 0.2."""
    others = {
        "host_options": host_options,
        "codegen_options": codegen_options,
        "verify_options": verify_options,
        "debug_options": debug_options,
    }

    def wrap(f: Callable[..., Any]) -> JitKernel:
        kernel = JitKernel(
            f, runtime_options=runtime_options, pass_options=pass_options, other_options=others
        )
        functools.update_wrapper(kernel, f, updated=())
        return kernel

    return wrap(func) if func is not None else wrap
