"""Fault injection: break ptosim on purpose and check that the *generated* golden tests fail.

Each fault is patched into the public ptosim names a generated kernel calls (``pypto.cast``,
``pypto.mul``, ``pypto.matmul``, ``pypto.assemble``) or, for the loop, into
``ptosim.control.unroll_schedule``; each counts how often it fired, so a fault that no longer
reaches the kernel (ptosim refactored) fails this file instead of passing vacuously.

- wrong cast mode: every rounding FP32 -> BF16 / INT32 cast truncates instead of rounding to nearest
  (ties to even);
- dropped tail iteration: the last entry of the unroll schedule is lost when T is not a multiple of
  the largest factor;
- gamma skipped: inside a norm stage, ``mul`` by a [1, D] FP32 operand is a no-op;
- BF16 accumulation: the Cube rounds its accumulator to BF16 after every K chunk of 16;
- eps dropped: inside a norm stage, adding a small positive scalar (the RMSNorm eps) adds nothing —
  only the golden inputs' QUIET rows, whose mean square is below eps, can show it;
- one bad row: only the last token's row of every output is corrupted (16 elements), which the
  global error ratio allows on large outputs — the per-row check must catch it.

- SwiGLU (SK-06): the bias left out of the matmul; silu computed without the negation
  (g / (1 + exp(g))); silu applied to the up projection instead of the gate.

The instances: SK-03 (BF16 and INT8 W8A8), SK-04, SK-05 and SK-06 (the FFN, its INT8 W8A8 form,
and FusedSwiGLU's form: bias, no down projection) at small dims. The run without faults passes every T of the
generated test.
"""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path
from typing import Any, Callable

import ml_dtypes
import numpy as np
import pytest

import ptosim
from pattern_gen.emit.render import module_id
from pattern_gen.output.instances import run_instance
from ptosim.cast import CastMode
from ptosim.dtypes import DataType
from ptosim.symbolic import concrete
from ptosim.testing import compare, compare_rows

from pattern_gen.plan.test_points import FAST_LANE_MAX_T

INSTANCES = {
    "sk03": ("SK-03", "AT-10", {}),
    "sk03-int8": ("SK-03", "AT-10", {"quant_mode": "int8_w8a8"}),
    "sk04": ("SK-04", "AT-10", {}),
    "sk05": ("SK-05", "AT-10", {}),
    "sk06": ("SK-06", "AT-07", {}),
    "sk06-swiglu": ("SK-06", "AT-07", {"has_bias": True, "down_proj": False, "weight_layout": "kn"}),
    "sk06-int8": ("SK-06", "AT-07", {"quant_mode": "int8_w8a8"}),
}
#: faults inside a norm stage cannot reach a kernel without one
NO_NORM = ("sk06", "sk06-swiglu", "sk06-int8")


@pytest.fixture(scope="module")
def folders(instance_factory, small) -> dict[str, Path]:
    return {key: instance_factory(sk, atoms, dims=small[sk], params=params) for key, (sk, atoms, params) in INSTANCES.items()}


def load_generated_test(folder: Path) -> Any:
    """The instance's own pytest module, loaded by path under a unique name."""
    (path,) = folder.glob("test_*.py")
    spec = importlib.util.spec_from_file_location(f"fault_{module_id(folder.name)}_test", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def failing_T(folder: Path) -> list[int]:
    """The T values for which the generated golden test fails (AssertionError), stopping at the
    first; the smallest first, where a run is cheapest (each fault shows at T = 1 or at a tail)."""
    module = load_generated_test(folder)
    failed = []
    for T in sorted(module.T_VALUES):
        try:
            module.test_matches_golden(T, module.SEEDS[0])
        except AssertionError:
            failed.append(T)
            break
    return failed


# --- the faults -----------------------------------------------------------------------------------------


class Fault:
    def __init__(self) -> None:
        self.fired = 0


def wrong_cast_mode(monkeypatch: pytest.MonkeyPatch) -> Fault:
    fault = Fault()
    original = ptosim.cast
    rounding = (CastMode.CAST_NONE, CastMode.CAST_RINT, CastMode.CAST_ROUND)

    def cast(input, dtype, mode=CastMode.CAST_NONE, satmode=ptosim.SaturationMode.OFF):
        dst = ptosim.DataType[dtype] if isinstance(dtype, str) else dtype
        if input.dtype == DataType.DT_FP32 and dst in (DataType.DT_BF16, DataType.DT_INT32) and mode in rounding:
            fault.fired += 1
            mode = CastMode.CAST_TRUNC
        return original(input, dtype, mode, satmode)

    monkeypatch.setattr(ptosim, "cast", cast)
    return fault


def dropped_tail(monkeypatch: pytest.MonkeyPatch) -> Fault:
    fault = Fault()
    control = importlib.import_module("ptosim.control")
    original = control.unroll_schedule

    def unroll_schedule(start, stop, step, unroll_list):
        schedule = original(start, stop, step, unroll_list)
        if (stop - start) % (step * max(unroll_list)) and schedule:
            fault.fired += 1
            schedule = schedule[:-1]
        return schedule

    monkeypatch.setattr(control, "unroll_schedule", unroll_schedule)
    return fault


def _current_label(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """A one-element list that always holds the kernel's current semantic label."""
    original = ptosim.set_semantic_label
    label = [""]

    def set_semantic_label(name, *args, **kwargs):
        label[0] = name
        return original(name, *args, **kwargs)

    monkeypatch.setattr(ptosim, "set_semantic_label", set_semantic_label)
    return label


def gamma_skipped(monkeypatch: pytest.MonkeyPatch) -> Fault:
    fault = Fault()
    original_mul = ptosim.mul
    label = _current_label(monkeypatch)

    def mul(input, other):
        if (
            "norm" in label[0]
            and isinstance(other, ptosim.Tensor)
            and other is not input
            and other.dtype == DataType.DT_FP32
            and other.dim == 2
            and other.dims[0] == 1
            and other.dims[1] > 1
        ):
            fault.fired += 1
            return input
        return original_mul(input, other)

    monkeypatch.setattr(ptosim, "mul", mul)
    return fault


def eps_dropped(monkeypatch: pytest.MonkeyPatch) -> Fault:
    fault = Fault()
    original_add = ptosim.add
    label = _current_label(monkeypatch)

    def add(input, other):
        if "norm" in label[0] and isinstance(other, float) and 0.0 < other < 1e-3:
            fault.fired += 1
            other = 0.0
        return original_add(input, other)

    monkeypatch.setattr(ptosim, "add", add)
    return fault


def bf16_accumulation(monkeypatch: pytest.MonkeyPatch) -> Fault:
    """The Cube's accumulator rounded to BF16 after each K chunk of 16 (BF16 and INT8 matmuls)."""
    fault = Fault()
    original = ptosim.matmul

    def matmul(input, mat2, out_dtype, *, a_trans=False, b_trans=False, **kwargs):
        out = original(input, mat2, out_dtype, a_trans=a_trans, b_trans=b_trans, **kwargs)
        a = np.asarray(input.data).astype(np.float64)
        b = np.asarray(mat2.data).astype(np.float64)
        a = np.swapaxes(a, -1, -2) if a_trans else a
        b = np.swapaxes(b, -1, -2) if b_trans else b
        acc = np.zeros(a.shape[:-1] + b.shape[-1:], np.float64)
        for k in range(0, a.shape[-1], 16):
            acc = (acc + a[..., k : k + 16] @ b[..., k : k + 16, :]).astype(ml_dtypes.bfloat16).astype(np.float64)
        data = out.data
        data[...] = acc.astype(np.float32).astype(data.dtype)
        fault.fired += 1
        return out

    monkeypatch.setattr(ptosim, "matmul", matmul)
    return fault


def bad_last_row(monkeypatch: pytest.MonkeyPatch, only: str | None = None) -> Fault:
    """Corrupt 16 elements of the last token row of every output (or of ``only``), nothing else."""
    fault = Fault()
    original = ptosim.assemble

    def assemble(input, offsets, out=None, parallel=False):
        original(input, offsets, out, parallel)
        if out is None or out.kind != "gm" or isinstance(input, (list, tuple)) or only not in (None, out.name):
            return
        rows = (input.valid if input.valid is not None else input.dims)[0]
        if concrete(offsets[0]) + rows != out.dims[0]:
            return
        row = out.data[-1].reshape(-1)  # a view of the output's last token row
        n = min(16, row.size)
        if out.dtype.is_float:
            row[:n] = (row[:n].astype(np.float32) * 1.5 + 0.5).astype(row.dtype)
        else:
            row[:n] = (row[:n].astype(np.int64) + 7).astype(row.dtype)
        fault.fired += 1

    monkeypatch.setattr(ptosim, "assemble", assemble)
    return fault


def bias_dropped(monkeypatch: pytest.MonkeyPatch) -> Fault:
    """The matmul ignores ``extend_params`` (a bias the card fuses into the accumulator)."""
    fault = Fault()
    original = ptosim.matmul

    def matmul(input, mat2, out_dtype, *, extend_params=None, **kwargs):
        if extend_params:
            fault.fired += 1
        return original(input, mat2, out_dtype, **kwargs)

    monkeypatch.setattr(ptosim, "matmul", matmul)
    return fault


def silu_sign_lost(monkeypatch: pytest.MonkeyPatch) -> Fault:
    """``neg`` returns its input: silu becomes g / (1 + exp(g))."""
    fault = Fault()

    def neg(input):
        fault.fired += 1
        return input

    monkeypatch.setattr(ptosim, "neg", neg)
    return fault


def silu_on_up(monkeypatch: pytest.MonkeyPatch) -> Fault:
    """The SwiGLU's operands swapped: silu(up) * gate."""
    fault = Fault()
    original_div, original_mul = ptosim.div, ptosim.mul
    label = _current_label(monkeypatch)
    seen: dict[str, Any] = {}

    def div(input, other, *args, **kwargs):
        if label[0] == "act":
            seen["gate"] = input
        return original_div(input, other, *args, **kwargs)

    def mul(input, other):
        gate = seen.pop("gate", None)
        if label[0] == "act" and gate is not None and isinstance(other, ptosim.Tensor):
            fault.fired += 1  # input = silu(gate), other = up: recompute as silu(up) * gate
            silu_up = original_div(other, ptosim.add(ptosim.exp(ptosim.mul(other, -1.0)), 1.0))
            return original_mul(silu_up, gate)
        return original_mul(input, other)

    monkeypatch.setattr(ptosim, "div", div)
    monkeypatch.setattr(ptosim, "mul", mul)
    return fault


FAULTS: dict[str, Callable[[pytest.MonkeyPatch], Fault]] = {
    "wrong-cast-mode": wrong_cast_mode,
    "dropped-tail": dropped_tail,
    "gamma-skipped": gamma_skipped,
    "bf16-accumulation": bf16_accumulation,
    "eps-dropped": eps_dropped,
    "bad-last-row": bad_last_row,
    "bias-dropped": bias_dropped,
    "silu-sign-lost": silu_sign_lost,
    "silu-on-up": silu_on_up,
}
#: (fault, the instances it can reach): norm faults need a norm, SwiGLU faults a SwiGLU, the bias a bias
REACH: dict[str, tuple[str, ...]] = {
    **{name: tuple(k for k in INSTANCES if k not in NO_NORM) for name in ("gamma-skipped", "eps-dropped")},
    **{name: NO_NORM for name in ("silu-sign-lost", "silu-on-up")},
    "bias-dropped": ("sk06-swiglu",),
}
CASES = [(key, name) for name in FAULTS for key in INSTANCES if key in REACH.get(name, INSTANCES)]


# --- the tests -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("key", list(INSTANCES))
def test_unpatched_generated_tests_pass(folders, key):
    module = load_generated_test(folders[key])
    assert len(module.T_VALUES) >= 3 and len(module.SEEDS) >= 2
    for T in [t for t in module.T_VALUES if t <= FAST_LANE_MAX_T]:  # the longer ones: the slow lane's generated tests
        for seed in module.SEEDS:
            module.test_matches_golden(T, seed)


@pytest.mark.parametrize(("key", "fault_name"), CASES)
def test_fault_makes_the_generated_test_fail(folders, monkeypatch, key, fault_name):
    fault = FAULTS[fault_name](monkeypatch)
    failed = failing_T(folders[key])
    assert fault.fired, f"the {fault_name} fault never reached the {key} kernel"
    assert failed, f"{key}: the generated golden test passes with {fault_name} injected"


def test_dropped_tail_fails_only_where_there_is_a_tail(folders, monkeypatch):
    dropped_tail(monkeypatch)
    module = load_generated_test(folders["sk03"])
    main = module.kernel.UNROLL[0]
    results = {T: run_instance(folders["sk03"], T=T, estimate=False).passed for T in module.T_VALUES}
    assert results[2 * main] is True, "a multiple of the largest factor has no tail to drop"
    assert [T for T in module.T_VALUES if T % main] and all(results[T] is False for T in module.T_VALUES if T % main)


def test_wrong_rounding_shows_even_in_int8_quantisation(folders, monkeypatch):
    fault = wrong_cast_mode(monkeypatch)
    result = run_instance(folders["sk03-int8"], T=3, estimate=False)
    assert fault.fired and not result.passed


@pytest.mark.parametrize(("key", "output", "T"), [("sk03", "y", 256), ("sk04", "q", 16)])
def test_one_bad_row_hides_under_the_global_ratio_but_not_the_row_check(folders, monkeypatch, key, output, T):
    """The global rule allows it; the per-row rule of the generated test does not."""
    bad_last_row(monkeypatch, only=output)
    module = load_generated_test(folders[key])
    assert T in module.T_VALUES
    inputs = module.golden.make_inputs(T, seed=0)
    got = module.kernel.run(inputs)[output]
    ref = module.golden.golden(inputs)[output]
    atol, rtol, ratio, _ = module.TOLERANCES[output]
    overall = compare(got, ref, atol, rtol, ratio, name=output)
    assert overall.passed and 0 < overall.wrong <= overall.allowed, overall
    assert compare_rows(got, ref, atol, rtol, ratio) == [T - 1]
    with pytest.raises(AssertionError, match="over the per-row allowance"):
        module.test_matches_golden(T, module.SEEDS[0])


# --- RoPE (AT-04, in SK-05): the golden's per-element random angles must expose each of these ------------


def rope_halves_swapped(monkeypatch: pytest.MonkeyPatch) -> Fault:
    """The rotated halves land in each other's place in the hand-off buffer."""
    fault = Fault()
    original = ptosim.assemble
    label = _current_label(monkeypatch)

    def assemble(input, offsets, out=None, parallel=False):
        if "rope" in label[0] and out is not None and out.kind != "gm" and len(offsets) == 3:
            half = out.dims[-1] // 2
            last = concrete(offsets[-1])
            if last in (0, half):
                fault.fired += 1
                offsets = [offsets[0], offsets[1], half - last]
        return original(input, offsets, out, parallel)

    monkeypatch.setattr(ptosim, "assemble", assemble)
    return fault


def rope_angle_negated(monkeypatch: pytest.MonkeyPatch) -> Fault:
    """o1 = l·cos + r·sin: the rotation runs the wrong way (sin of −θ)."""
    fault = Fault()
    original_sub, original_add = ptosim.sub, ptosim.add
    label = _current_label(monkeypatch)

    def sub(input, other):
        if "rope" in label[0]:
            fault.fired += 1
            return original_add(input, other)
        return original_sub(input, other)

    monkeypatch.setattr(ptosim, "sub", sub)
    return fault


def rope_first_half_angles_for_both(monkeypatch: pytest.MonkeyPatch) -> Fault:
    """cos/sin's first half used for both output halves: right for Hugging Face's duplicated tables,
    wrong for the card's element-wise cos/sin — only angles that differ per element can show it."""
    fault = Fault()
    original = ptosim.view
    label = _current_label(monkeypatch)

    def view(input, shape, offsets, **kwargs):
        # the angle tables are viewed as [M, 1, R/2] halves of [M, 1, R] (variant A's rope_angles)
        if "rope" in label[0] and input.dim == 3 and input.dims[1] == 1 and concrete(offsets[-1]) > 0:
            fault.fired += 1
            offsets = [*offsets[:-1], 0]
        return original(input, shape, offsets, **kwargs)

    monkeypatch.setattr(ptosim, "view", view)
    return fault


def rope_pairs_swapped(monkeypatch: pytest.MonkeyPatch) -> Fault:
    """Variant B: out[2i] and out[2i+1] trade places in the pairs buffer."""
    fault = Fault()
    original = ptosim.assemble
    label = _current_label(monkeypatch)

    def assemble(input, offsets, out=None, parallel=False):
        if "rope" in label[0] and out is not None and len(offsets) == 4 and out.dims[-1] == 2:
            fault.fired += 1
            offsets = [*offsets[:3], 1 - concrete(offsets[3])]
        return original(input, offsets, out, parallel)

    monkeypatch.setattr(ptosim, "assemble", assemble)
    return fault


#: fault -> the instances whose RoPE it can reach (SK-05: variant A over the head; SK-04: variant B
#: on the last R dims)
ROPE_FAULTS: dict[str, tuple[Callable[[pytest.MonkeyPatch], Fault], tuple[str, ...]]] = {
    "rope-halves-swapped": (rope_halves_swapped, ("sk05",)),
    "rope-pairs-swapped": (rope_pairs_swapped, ("sk04",)),
    "rope-angle-negated": (rope_angle_negated, ("sk04", "sk05")),
    "rope-first-half-angles-for-both": (rope_first_half_angles_for_both, ("sk05",)),
}


@pytest.mark.parametrize(("fault_name", "key"), [(f, k) for f, (_, keys) in ROPE_FAULTS.items() for k in keys])
def test_rope_fault_makes_the_generated_test_fail(folders, monkeypatch, fault_name, key):
    fault = ROPE_FAULTS[fault_name][0](monkeypatch)
    failed = failing_T(folders[key])
    assert fault.fired, f"the {fault_name} fault never reached the {key} kernel"
    assert failed, f"{key}: the generated golden test passes with {fault_name} injected"


# --- paged cache scatter (AT-16, in SK-05): distinct random slots over a random cache expose these ------


def _scatter_fault(monkeypatch: pytest.MonkeyPatch, change: Callable[[np.ndarray, int], np.ndarray]) -> Fault:
    """Patch the slots a scatter_update writes to (the index tile is the kernel's own copy)."""
    fault = Fault()
    original = ptosim.scatter_update

    def scatter_update(input, dim, index, src):
        slots = index.data[:, 0]
        changed = change(slots.copy(), input.dims[0])
        if not np.array_equal(changed, slots):
            fault.fired += 1
            index.data[:, 0] = changed
        return original(input, dim, index, src)

    monkeypatch.setattr(ptosim, "scatter_update", scatter_update)
    return fault


def _next_slot(slots: np.ndarray, rows: int) -> np.ndarray:
    """Every token one slot off (block·BS + offset + 1): the classic off-by-one."""
    return np.where(slots >= 0, (slots + 1) % rows, slots)


def _tokens_reversed(slots: np.ndarray, rows: int) -> np.ndarray:
    """Token i's row written to token n−1−i's slot (the slots read in the wrong order)."""
    real = slots >= 0
    out = slots.copy()
    out[real] = slots[real][::-1]
    return out


def _skip_wraps(slots: np.ndarray, rows: int) -> np.ndarray:
    """-1 taken as a Python index: the padding token lands in the cache's last slot."""
    return np.where(slots < 0, rows - 1, slots)


SCATTER_FAULTS: dict[str, Callable[[np.ndarray, int], np.ndarray]] = {
    "slot-off-by-one": _next_slot,
    "tokens-reversed": _tokens_reversed,
    "skip-wraps-to-the-last-slot": _skip_wraps,
}


@pytest.mark.parametrize("fault_name", list(SCATTER_FAULTS))
def test_scatter_fault_makes_the_generated_test_fail(folders, monkeypatch, fault_name):
    fault = _scatter_fault(monkeypatch, SCATTER_FAULTS[fault_name])
    failed = failing_T(folders["sk05"])
    assert fault.fired, f"the {fault_name} fault never reached the sk05 kernel"
    assert failed, f"sk05: the generated golden test passes with {fault_name} injected"


def test_the_host_refuses_slots_pypto_would_silently_drop(folders):
    """A slot outside the cache, a -1 before a real slot, a repeated slot: ValueError with the fix."""
    module = load_generated_test(folders["sk05"])
    inputs = module.golden.make_inputs(4, seed=0)
    rows = inputs["k_cache"].shape[0]
    for slots, words in (
        ([0, rows, 2, 3], f"outside k_cache's {rows} slots"),
        ([0, -1, 2, -1], "comes before the real slot"),
        ([5, 1, 5, -1], "slot 5 appears 2 times"),
    ):
        bad = {**inputs, "slot_mapping": np.array(slots, np.int32)}
        with pytest.raises(ValueError, match=words):
            module.kernel.run(bad)
    before = inputs["k_cache"].copy()
    module.kernel.run(inputs)
    assert np.array_equal(inputs["k_cache"].view(np.int16), before.view(np.int16)), "the caller's cache was changed"
