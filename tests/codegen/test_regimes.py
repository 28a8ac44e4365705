"""Skeleton regimes: SK-03's mhc_pre class (huge reduction x tiny output width) replaces the unroll
candidates, tiles, option advice and cache policy when the card's trigger rule holds, defaults to no
gamma (upstream's mhc_pre has none) and takes any N up to 64 (PyPTO 0.2.0 compiles, simulates and
verifies every N measured: tests/real_pypto/test_mhc_pre_widths.py)."""

from __future__ import annotations

import pytest

MHC = {"dims": {"K": 28672, "N": 24}, "params": {"out_dtype": "FP32"}}  # DeepSeek-V4's hc_pre width


def _stage(plan, label):
    return next(s for s in plan.all_stages if s.label == label)


def test_the_trigger_rule_selects_the_mhc_pre_settings(resolve_req):
    plan = resolve_req("SK-03", "AT-10", **MHC)
    assert plan.unroll == (16, 1) and plan.params["weight_layout"] == "kn" and plan.params["has_gamma"] is False
    linear = _stage(plan, "proj.linear")
    assert linear.split_k and linear.cube_tile["m"] == [16, 16] and linear.cube_tile["n"] == [128, 128]
    assert "split-K" in linear.tile_text() and linear.to_json()["split_k"] is True
    assert _stage(plan, "proj.rmsnorm").vec_tile[-1] == 2048
    assert plan.cache_policy == {}  # the weight is reused by every iteration: left in L2
    assert plan.runtime_options["device_sched_mode"] == 2
    assert plan.pass_options["cube_nbuffer_setting"] == {-1: 4} and plan.pass_options["vec_nbuffer_setting"] == {-1: 4}
    note = next(n for n in plan.notes if "mhc_pre regime" in n)
    assert "N <= 64 and K >= 16384 and out_dtype = FP32" in note and "all or nothing" in note


@pytest.mark.parametrize(("K", "cols"), [(16384, 1024), (18432, 2048), (20480, 1024), (28672, 2048)])
def test_the_norm_tile_pypto_cannot_simulate_is_avoided(resolve_req, K, cols):
    """PyPTO 0.2.0's SIMULATION fails on the [8, 2048] norm tile at K = 16384 and 20480 only: the
    regime's tile advice says so (``instead:``) and the plan takes [8, 1024] there, saying why."""
    plan = resolve_req("SK-03", "AT-10", **{**MHC, "dims": {"K": K, "N": 24}})
    norm = _stage(plan, "proj.rmsnorm")
    assert norm.vec_tile == [8, cols]
    assert any("instead of the advised [8, 2048]" in n and "SIMULATION" in n for n in norm.fit_notes) is (cols == 1024)


def test_a_tile_exception_takes_vec_tiles_only():
    from pydantic import ValidationError

    from pattern_gen.cards.model.performance import TileAdvice

    with pytest.raises(ValidationError, match="'instead' takes vec tiles"):
        TileAdvice(cube={"m": [16, 16], "k": [64, 64], "n": [64, 64]}, instead=[{"dims": {"K": [1]}, "vec": [8, 8], "why": "x"}])


def test_below_the_reduction_bound_the_general_settings_apply(resolve_req):
    plan = resolve_req("SK-03", "AT-10", **{**MHC, "dims": {"K": 8192, "N": 32}})
    assert plan.unroll == (128, 32, 16, 8, 1) and not _stage(plan, "proj.linear").split_k
    assert not any("mhc_pre" in n for n in plan.notes)
    assert plan.params["has_gamma"] is True  # the card's default outside the regime


@pytest.mark.parametrize("n", [1, 12, 20, 24, 40, 63, 64])
def test_the_regime_takes_any_output_width_up_to_64(resolve_req, n):
    plan = resolve_req("SK-03", "AT-10", dims={"K": 28672, "N": n}, params=MHC["params"])
    assert plan.dims["N"] == n and plan.unroll == (16, 1) and plan.name.endswith(f"-K28672-N{n}")


def test_the_regime_defaults_to_no_gamma_but_takes_one(resolve_req):
    plan = resolve_req("SK-03", "AT-10", dims=MHC["dims"], params={**MHC["params"], "has_gamma": True})
    assert plan.params["has_gamma"] is True and "-gamma-" in plan.name
    assert plan.param_defaults["has_gamma"] is False  # the regime's default, shown as such by the plan
    assert "-nogamma-" in resolve_req("SK-03", "AT-10", **MHC).name


@pytest.mark.parametrize(
    "dims, says",
    [
        ({"K": 8192, "N": 24}, "use --dim N=16 or 32; SK-03's mhc_pre regime takes it when N <= 64 and K >= 16384 and out_dtype = FP32"),
        ({"K": 28672, "N": 72}, "use --dim N=64 or 80"),  # wider than the regime: the card's own step
    ],
)
def test_outside_the_regime_n_is_a_multiple_of_16(problems, dims, says):
    found = problems("SK-03", "AT-10", dims=dims, params=MHC["params"])
    assert [c for c, _ in found] == ["bad-dim"]
    assert found[0][1] == f"dim N={dims['N']} must be a multiple of 16 (Output features); {says}"


def test_a_bf16_output_is_not_the_regime_so_n_24_is_refused(problems):
    found = problems("SK-03", "AT-10", dims=MHC["dims"], params={"out_dtype": "BF16"})
    assert [c for c, _ in found] == ["bad-dim"] and "mhc_pre regime takes it when" in found[0][1]


@pytest.mark.parametrize(
    "change",
    [
        {"dims": {"K": 28672, "N": 32}, "params": {"out_dtype": "BF16", "has_gamma": False}},  # split-K needs an FP32 output: not the class
        {"dims": {"K": 28672, "N": 80}},  # output wider than 64
    ],
)
def test_outside_the_rule_the_general_tiles_do_not_fit_k_28672(problems, change):
    """Without the regime's long-K vec tiles the norm keeps its whole row in UB and cannot: the
    general settings are refused with the reason, not silently swapped for the regime's."""
    found = problems("SK-03", "AT-10", **{**MHC, **change})
    assert found[0][0] == "tile-unfit" and "reduction axis is never split" in found[0][1]


def test_a_parameter_the_regime_needs_cannot_be_overridden(problems):
    found = problems("SK-03", "AT-10", dims=MHC["dims"], params={**MHC["params"], "weight_layout": "nk"})
    assert [c for c, _ in found] == ["bad-param-value"]
    assert "mhc_pre regime" in found[0][1] and "needs weight_layout=kn" in found[0][1]


def test_the_unroll_must_be_one_of_the_regimes(problems):
    found = problems("SK-03", "AT-10", dims=MHC["dims"], params={**MHC["params"], "unroll": 128})
    assert found[0][0] == "bad-param-value" and "128 is not one of the candidates 16, 1 in its mhc_pre regime" in found[0][1]


def test_the_kernel_sets_split_k_and_passes_its_golden(instance_factory):
    from pattern_gen.output.instances import run_instance

    folder = instance_factory("SK-03", "AT-10", **MHC)
    text = (folder / "kernel.py").read_text()
    assert "enable_split_k=True" in text and "b_trans=True" not in text and "NONE_CACHEABLE" not in text
    assert run_instance(folder, T=17, estimate=False).passed


@pytest.mark.parametrize("n", [1, 20])
def test_ptosim_runs_widths_below_a_cube_tile_as_pypto_does(instance_factory, n):
    """The n tile (128) covers beyond N: ptosim clips it to the tensor, as PyPTO 0.2.0 does (it
    compiles, simulates and verifies N = 1 to 64, measured)."""
    from pattern_gen.output.instances import run_instance

    folder = instance_factory("SK-03", "AT-10", dims={"K": 28672, "N": n}, params=MHC["params"])
    assert run_instance(folder, T=17, estimate=False).passed
