"""Loops and symbolic scalars, as PyPTO 0.2.0 behaves (each case probed on PyPTO 0.2.0 SIM)."""


import warnings

import numpy as np
import pytest

import ptosim as pypto
from ptosim import PtoSimWarning, SymbolicError, SymbolicScalar
from ptosim.errors import PtoSimError


@pytest.fixture
def loop_trace(run):
    def go(make_loop):
        seen = []

        def body(_):
            for item in make_loop():
                seen.append(item)

        run(body, np.zeros((1, 8), np.float32), tile=None)
        return seen

    return go


def factors(items):
    return [f for _, f in items]


def values(items):
    return [i.value for i, _ in items]


# --- loop_unroll schedule ----------------------------------------------------------------------


def test_unroll_127_with_powers_of_two(loop_trace):
    items = loop_trace(lambda: pypto.loop_unroll(0, 127, 1, unroll_list=[32, 16, 8, 4, 2, 1]))
    assert factors(items) == [32, 32, 32, 16, 8, 4, 2, 1]
    assert values(items) == [0, 32, 64, 96, 112, 120, 124, 126]


def test_unroll_factors_are_deduplicated_sorted_and_1_is_appended(loop_trace):
    items = loop_trace(lambda: pypto.loop_unroll(0, 21, 1, unroll_list=[4, 8, 4, 8]))
    assert factors(items) == [8, 8, 4, 1]
    assert values(items) == [0, 8, 16, 20]


def test_unroll_probe_cases(loop_trace):
    # the factor sets PyPTO 0.2.0 compiled for these extents (unroll_probe.out)
    assert sorted(set(factors(loop_trace(lambda: pypto.loop_unroll(0, 5, 1, unroll_list=[4]))))) == [1, 4]
    assert factors(loop_trace(lambda: pypto.loop_unroll(0, 20, 1, unroll_list=[8, 32]))) == [8, 8, 1, 1, 1, 1]


def test_unroll_extent_zero_runs_nothing(loop_trace):
    assert loop_trace(lambda: pypto.loop_unroll(0, 0, 1, unroll_list=[4])) == []


def test_unroll_with_a_step(loop_trace):
    items = loop_trace(lambda: pypto.loop_unroll(0, 22, 2, unroll_list=[4]))
    assert [(i.value, f) for i, f in items] == [(0, 4), (8, 4), (16, 1), (18, 1), (20, 1)]


def test_unroll_factor_is_a_plain_int_and_index_is_symbolic(loop_trace):
    items = loop_trace(lambda: pypto.loop_unroll(0, 10, 1, unroll_list=[4]))
    for idx, factor in items:
        assert type(factor) is int
        assert isinstance(idx, SymbolicScalar)
        with pytest.raises(SymbolicError):
            int(idx)


def test_unroll_schedule_helper_matches():
    assert pypto.unroll_schedule(0, 127, 1, [32, 16, 8, 4, 2, 1]) == [
        (0, 32), (32, 32), (64, 32), (96, 16), (112, 8), (120, 4), (124, 2), (126, 1)]


@pytest.mark.parametrize(
    ("T", "unroll_list", "passes"),
    [
        # PyPTO 0.2.0 SIM, SK-03 kernel, passes read off the task dump per LoopUnroll{p} root
        (37, [32, 16, 8, 4, 1], [(0, 32), (32, 4), (36, 1)]),
        (1000, [32, 16, 8, 4, 1], [(i, 32) for i in range(0, 992, 32)] + [(992, 8)]),
        (129, [32, 16, 8, 4, 1], [(0, 32), (32, 32), (64, 32), (96, 32), (128, 1)]),
        (5, [32, 8], [(0, 1), (1, 1), (2, 1), (3, 1), (4, 1)]),
        # lists whose factors do not divide each other: each sub-loop ends at T minus the remainder
        # of the whole range, so PyPTO runs a pass past T or rows again (measured the same)
        (16, [3, 2], [(0, 3), (3, 3), (6, 3), (9, 3), (12, 3), (15, 2)]),
        (5, [3, 2], [(0, 3), (3, 2), (4, 1)]),
        (37, [5, 2], [(i, 5) for i in range(0, 35, 5)] + [(35, 2), (36, 1)]),
        (129, [6, 4, 1], [(i, 6) for i in range(0, 126, 6)] + [(126, 4), (128, 1)]),
    ],
)
def test_unroll_schedule_is_pyptos(T, unroll_list, passes):
    assert pypto.unroll_schedule(0, T, 1, unroll_list) == passes


@pytest.mark.parametrize("bad", [[], [0], [2.0], [True], 4])
def test_bad_unroll_lists(run, bad):
    with pytest.raises(PtoSimError) as exc:
        run(lambda _: list(pypto.loop_unroll(0, 8, 1, unroll_list=bad)), np.zeros((1, 8), np.float32), tile=None)
    assert exc.value.code == "argument"


def test_unroll_over_a_dynamic_axis(run):
    seen = []

    def body(x):
        for idx, tile in pypto.loop_unroll(0, x.shape[0], 1, unroll_list=[4]):
            seen.append((idx.value, tile))

    run(body, np.zeros((6, 8), np.float32), tile=None)
    assert seen == [(0, 4), (4, 1), (5, 1)]


# --- loop --------------------------------------------------------------------------------------


def test_loop_forms(loop_trace):
    assert [i.value for i in loop_trace(lambda: pypto.loop(4))] == [0, 1, 2, 3]
    assert [i.value for i in loop_trace(lambda: pypto.loop(2, 11, 3))] == [2, 5, 8]
    assert loop_trace(lambda: pypto.loop(0)) == []
    assert all(isinstance(i, SymbolicScalar) for i in loop_trace(lambda: pypto.loop(3)))


def test_loop_index_in_offsets_and_valid_shape(run):
    x = np.arange(10 * 16, dtype=np.float32).reshape(10, 16)

    def body(a):
        y = pypto.Tensor([10, 16], pypto.DT_FP32, "y")
        for b in pypto.loop(0, 3, 1):
            off = b * 4
            valid = (10 - off).min(4)
            blk = pypto.view(a, [4, 16], [off, 0], valid_shape=[valid, 16])
            pypto.assemble(pypto.add(blk, 1.0), [off, 0], y)
        return y

    np.testing.assert_array_equal(run(body, x, tile=(4, 16)), x + 1)


def test_tile_set_late_in_an_iteration_does_not_leak_into_the_next(run):
    def body(a):
        for _ in pypto.loop(2):
            pypto.add(a, 1.0)  # needs the tile set before the loop, in every iteration
            pypto.set_vec_tile_shapes(1, 8)  # rank OK for later ops, too small a UB footprint to matter

    run(body, np.zeros((4, 16), np.float32), tile=(4, 16))
    ops = [r for r in run.last_kernel.last_record.ops if r.op == "add"]
    assert [r.tile for r in ops] == [(4, 16), (4, 16)]


# --- symbolic scalars ---------------------------------------------------------------------------


@pytest.fixture
def sym():
    return SymbolicScalar(13, "i")


def test_allowed_arithmetic(sym):
    assert (sym + 2).value == 15 and (2 + sym).value == 15
    assert (sym - 3).value == 10 and (20 - sym).value == 7
    assert (sym * 2).value == 26 and (2 * sym).value == 26
    assert (sym // 4).value == 3 and (40 // sym).value == 3
    assert (-sym).value == -13
    assert sym.min(4).value == 4 and sym.max(40).value == 40
    assert sym.min(SymbolicScalar(5, "j")).value == 5
    assert isinstance(sym * 2 + 1, SymbolicScalar)


def test_true_division_is_symbolic_floor_division_without_a_warning(sym):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        q = sym / 4
        r = 40 / sym
    assert isinstance(q, SymbolicScalar) and q.value == 3
    assert isinstance(r, SymbolicScalar) and r.value == 3


def test_modulo_is_symbolic_with_a_c_sym_02_warning(sym):
    with pytest.warns(PtoSimWarning, match="C-SYM-02"):
        r = sym % 4
    assert isinstance(r, SymbolicScalar) and r.value == 1
    with pytest.warns(PtoSimWarning, match="C-SYM-02"):
        assert (30 % sym).value == 4


def misuse_cases():
    return {
        "if": lambda s: (1 if s else 0),
        "bool": lambda s: bool(s),
        "if-compare": lambda s: (1 if s > 3 else 0),
        "int": lambda s: int(s),
        "range": lambda s: range(s),
        "list-index": lambda s: [1, 2, 3][s],
        "pow": lambda s: s**2,
        "rpow": lambda s: 2**s,
        "builtin-min": lambda s: min(s, 3),
        "builtin-max": lambda s: max(s, 3),
        "float-operand": lambda s: s + 0.5,
        "float-multiply": lambda s: s * 0.5,
    }


@pytest.mark.parametrize("case", list(misuse_cases()))
def test_misuse_raises_symbolic_error(sym, case):
    with pytest.raises(SymbolicError) as exc:
        misuse_cases()[case](sym)
    assert exc.value.code == "symbolic"


def test_misuse_inside_a_kernel_names_the_constraint(run):
    def body(_):
        for i in pypto.loop(3):
            if i:
                pass

    with pytest.raises(SymbolicError) as exc:
        run(body, np.zeros((1, 8), np.float32), tile=None)
    assert "C-SYM-04" in str(exc.value)


def test_symbolic_view_shape_is_refused(run):
    def body(x):
        for i in pypto.loop(1, 3, 1):
            pypto.view(x, [i, 8], [0, 0])

    with pytest.raises(PtoSimError) as exc:
        run(body, np.zeros((4, 8), np.float32), tile=None)
    assert exc.value.code == "symbolic" and "C-SYM-07" in str(exc.value)


def test_dynamic_axis_of_a_jit_argument_is_symbolic():
    seen = []

    @pypto.frontend.jit
    def k(x: pypto.Tensor[[pypto.DYNAMIC, 8], pypto.DT_FP32]):
        seen.append(x.shape)

    k(np.zeros((5, 8), np.float32))
    rows, cols = seen[0]
    assert isinstance(rows, SymbolicScalar) and rows.value == 5 and cols == 8
    with pytest.raises(SymbolicError):
        range(rows)


def test_loop_unroll_list_must_cover_the_remainder():
    """PyPTO 0.2.0 has no path for the iterations an unroll_list without 1 leaves over (its CPU
    verifier wrote NaN rows for a 3-iteration kv loop with [4]); ptosim refuses, naming the fix."""

    def kernel(unroll):
        @pypto.frontend.jit()
        def k(x: pypto.Tensor[[8, 16], pypto.DT_FP32], n: pypto.Tensor[[1], pypto.DT_INT32]):
            pypto.set_vec_tile_shapes(1, 16)
            for i in pypto.loop(n[0], name="KV", idx_name="i", unroll_list=unroll):
                pypto.assemble(pypto.mul(pypto.view(x, [1, 16], [i, 0]), 2.0), [i, 0], x)

        return k

    x = np.ones((8, 16), np.float32)
    with pytest.raises(pypto.ShapeError, match=r"leaves the last 3 .*unroll_list=\[4, 1\]"):
        kernel([4])(x.copy(), np.array([3], np.int32))
    kernel([4])(x.copy(), np.array([8], np.int32))  # a multiple of 4 is covered
    kernel([4, 2, 1])(x.copy(), np.array([3], np.int32))


@pytest.mark.parametrize(
    ("n", "unroll_list", "passes"),
    [
        (15, [8, 4, 2, 1], [8, 4, 2, 1]),
        (16, [8, 4, 2, 1], [8, 8]),
        (5, [4, 2, 1], [4, 1]),
        (3, [8, 4, 2, 1], [2, 1]),
        (7, [1], [1] * 7),
    ],
)
def test_an_unrolled_loop_runs_its_iterations_in_passes(n, unroll_list, passes):
    """PyPTO 0.2.0 compiles a pass of p iterations of ``loop(..., unroll_list=)`` as one root (SK-01's
    kv loop: 8 blocks of one token in one task group, measured on its SIM); ptosim runs each
    iteration, as PyPTO computes them, and records the pass it belongs to for the cost model."""
    from ptosim.control import loop_passes

    grouped = loop_passes(n, unroll_list)
    assert len(grouped) == n
    sizes = [sum(1 for g, _ in grouped if g == k) for k in dict.fromkeys(g for g, _ in grouped)]
    assert sizes == passes and [f for g, f in dict.fromkeys(grouped)] == passes
