"""The resolver: skeleton + atoms + parameters + dims + platform -> a kernel plan.

Plans of the three skeletons, the composition rules (pair -> AT-10, int8 upgrade -> AT-11, mxfp8
needs scaled_mm, refuse rules), tile fitting against the platform (checked against ptosim by
running the kernel), option levels and --option, and every kind of bad request.
"""

from __future__ import annotations

import shutil

import pytest

from pattern_gen.output.instances import run_instance
from pattern_gen.vocab.errors import PatternGenError
from pattern_gen.vocab.expr import render as render_expr


def _stage(plan, label):
    found = [s for s in plan.all_stages if s.label == label]
    assert found, f"no stage {label!r} in {[s.label for s in plan.all_stages]}"
    return found[0]


def _io(tensors):
    return {t.name: (t.shape, t.dtype, t.role) for t in tensors}


def _ops(plan):
    return [(s.label, s.unit, s.hoist, [op.op for op in s.stage.ops]) for s in plan.all_stages]


# --- plans of the three skeletons --------------------------------------------------------------


def test_sk03_default_plan(resolve_req):
    plan = resolve_req("SK-03", "AT-10")
    assert (plan.skeleton, plan.atom, plan.slot, plan.platform, plan.unroll) == ("SK-03", "AT-10", "proj", "a2a3", (128, 32, 16, 8, 1))
    assert plan.dims == {"K": 4096, "N": 1536}
    assert _io(plan.inputs) == {
        "x": (["T", "K"], "BF16", "activation"),
        "gamma": (["K"], "BF16", "weight"),
        "weight": (["N", "K"], "BF16", "weight"),
    }
    assert _io(plan.outputs) == {"y": (["T", "N"], "BF16", "output")}
    x = next(t for t in plan.inputs if t.name == "x")
    assert x.token_axis == 0 and x.default_shape == [plan.example_T, 4096]
    # V (norm) then C (matmul) inside the loop; gamma prepared once before it.
    norm, linear = _stage(plan, "proj.rmsnorm"), _stage(plan, "proj.linear")
    assert (norm.unit, linear.unit) == ("V", "C")
    assert [s.label for s in plan.stages].index("proj.rmsnorm") < [s.label for s in plan.stages].index("proj.linear")
    assert norm.vec_tile == [4, 4096], "the skeleton's (4, K) tile fits UB at K=4096"
    assert linear.cube_tile == {"m": [32, 32], "k": [256, 512], "n": [128, 256]}
    assert "matmul" in [op.op for op in linear.stage.ops]
    prep = _stage(plan, "proj.weight_prep")
    assert prep.hoist and prep in plan.prologue
    # options: must ones always, the recommended one unless overridden; levels recorded
    assert plan.runtime_options["stitch_function_max_num"] == 128
    assert plan.option_levels["stitch_function_max_num"].startswith("must")
    assert plan.pass_options["vec_nbuffer_setting"] == {0: 2}
    assert plan.option_levels["vec_nbuffer_setting"].startswith("recommended")
    assert plan.operation_options == {"combine_axis": True}
    assert plan.cache_policy == {"weight": "NONE_CACHEABLE"}


def test_sk04_default_plan(resolve_req):
    plan = resolve_req("SK-04", "AT-10")
    assert plan.unroll == (8, 4, 2, 1) and plan.params["weight_layout"] == "kn", "SK-04 defaults to the upstream [K, N] layout"
    assert plan.loop["submit_before_loop"] is True
    assert _io(plan.inputs) == {
        "x": (["T", "H"], "BF16", "activation"),
        "wq_a": (["H", "Q"], "BF16", "weight"),
        "gamma_cq": (["Q"], "BF16", "weight"),
        "wq_b": (["Q", "NH*D"], "BF16", "weight"),
        "wkv": (["H", "DKV"], "BF16", "weight"),
        "gamma_ckv": (["DKV"], "BF16", "weight"),
        "cos": (["T", "R"], "BF16", "activation"),
        "sin": (["T", "R"], "BF16", "activation"),
    }
    assert _io(plan.outputs) == {
        "qr": (["T", "Q"], "BF16", "output"),
        "q": (["T", "NH", "D"], "BF16", "output"),
        "kv": (["T", "DKV"], "BF16", "output"),
    }
    units = {s.label: s.unit for s in plan.all_stages}
    for label, unit in {
        "q_a_proj": "C",
        "q_norm_proj.rmsnorm": "V",
        "q_norm_proj.linear": "C",
        "q_head_norm": "V",
        "kv_proj": "C",
        "kv_norm": "V",
    }.items():
        assert units.get(label) == unit, (label, units)
    # per-stage tiles from the skeleton's performance table (the V4 kernel's values)
    assert _stage(plan, "q_a_proj").cube_tile == {"m": [32, 32], "k": [512, 512], "n": [64, 64]}
    assert _stage(plan, "q_norm_proj.linear").cube_tile == {"m": [32, 32], "k": [128, 128], "n": [256, 256]}
    assert _stage(plan, "kv_proj").cube_tile == {"m": [32, 32], "k": [256, 256], "n": [128, 128]}
    assert _stage(plan, "q_norm_proj.rmsnorm").vec_tile == [8, 1024]
    assert _stage(plan, "q_head_norm").vec_tile == [16, 512]
    # the per-head norm has no gamma: nothing multiplies by a [1, D] weight in that stage
    assert "gamma" not in " ".join(op.out or "" for op in _stage(plan, "q_head_norm").stage.ops)
    # NONE_CACHEABLE on the three matmul weights, never on the gammas
    assert plan.cache_policy == {"wq_a": "NONE_CACHEABLE", "wq_b": "NONE_CACHEABLE", "wkv": "NONE_CACHEABLE"}
    assert plan.option_levels["cube_l1_reuse_setting"].startswith("must")
    assert not any("AT-04" in item for item in plan.left_out), "RoPE is built (variant B on the last R dims)"
    assert not any("kr output" in item for item in plan.left_out), "the V2/V3 kr layout is the kv_layout parameter"


def test_sk04_int8_io(resolve_req, small):
    plan = resolve_req("SK-04", "AT-10", params={"quant_mode": "int8_w8a8"}, dims=small["SK-04"])
    assert plan.atom == "AT-11"
    ins, outs = _io(plan.inputs), _io(plan.outputs)
    assert ins["wq_b"][1] == "INT8" and ins["wq_b_scale"] == (["NH*D"], "FP32", "scale")
    assert outs["qr"][1] == "INT8" and outs["qr_scale"] == (["T", "1"], "FP32", "output")
    assert outs["q"] == (["T", "NH", "D"], "BF16", "output")
    assert set(plan.cache_policy) == {"wq_a", "wq_b", "wkv"}


def test_sk05_default_plan(resolve_req):
    plan = resolve_req("SK-05", "AT-10")
    assert plan.dims == {"H": 2048, "NQ": 16, "NKV": 8, "D": 128, "NB": 8, "BS": 128, "MB": 8}
    assert set(_io(plan.inputs)) == {
        "x", "residual", "gamma", "weight", "q_gamma", "k_gamma", "cos", "sin", "slot_mapping", "block_table", "context_lens",
    }
    assert next(t for t in plan.inputs if t.name == "slot_mapping").index_into == "k_cache"
    assert _io(plan.outputs) == {
        "q": (["T", "NQ", "D"], "BF16", "output"),
        "k_cache": (["NB*BS", "NKV*D"], "BF16", "cache"),
        "v_cache": (["NB*BS", "NKV*D"], "BF16", "cache"),
        "residual_out": (["T", "H"], "BF16", "output"),
        "attn": (["T", "NQ", "D"], "BF16", "output"),
    }
    labels = [s.label for s in plan.all_stages]
    for label in ("add_residual", "qkv_proj.rmsnorm", "qkv_proj.linear", "q_norm", "k_norm"):
        assert label in labels
    assert _stage(plan, "qkv_proj.linear").unit == "C"
    buffers = [op for s in plan.stages for op in s.stage.ops if op.op == "buffer"]
    assert {op.attrs["name"] for op in buffers} >= {"q_tmp", "k_tmp", "v_tmp"}, "named hand-off buffers"
    assert plan.cache_policy == {"weight": "NONE_CACHEABLE"}, "q_gamma/k_gamma/gamma are not matmul weights"
    # phase 2 runs after the token loop, over the caches phase 1 wrote
    after = [s.label for s in plan.stages if s.stage.after_loop]
    assert after[0] == "attn_sequence" and after[-1] == "attn_finalize_store" and "attn_softmax.first" in after
    assert not any(s.stage.after_loop for s in plan.stages[: plan.stages.index(_stage(plan, "v_cache_write")) + 1])


@pytest.mark.parametrize(
    ("params", "platform", "expect"),
    [
        ({"weight_layout": "kn"}, None, {"weight": (["K", "N"], "BF16", "weight")}),
        ({"has_bias": True}, None, {"bias": (["N"], "BF16", "bias")}),
        ({"quant_mode": "int8_w8a8"}, None, {"weight": (["N", "K"], "INT8", "weight"), "weight_scale": (["N"], "FP32", "scale")}),
        (
            {"quant_mode": "mxfp8"},
            "ascend950",
            {"weight": (["N", "K"], "FP8E4M3", "weight"), "weight_scale": (["N", "K/32"], "FP8E8M0", "scale")},
        ),
        ({"has_gamma": False}, None, {}),
    ],
)
def test_sk03_inputs_follow_parameters(resolve_req, small, params, platform, expect):
    plan = resolve_req("SK-03", "AT-10", params=params, dims=small["SK-03"], platform=platform)
    ins = _io(plan.inputs)
    for name, want in expect.items():
        assert ins[name] == want
    assert ("gamma" in ins) == params.get("has_gamma", True)


def test_sk03_outputs_follow_parameters(resolve_req, small):
    plan = resolve_req("SK-03", "AT-10", params={"output_rstd": True, "out_dtype": "FP32"}, dims=small["SK-03"])
    assert _io(plan.outputs) == {"y": (["T", "N"], "FP32", "output"), "rstd": (["T", "1"], "FP32", "output")}


# --- composition rules -------------------------------------------------------------------------


def test_pair_is_at10(resolve_req, small):
    pair = resolve_req("SK-03", "AT-03,AT-09", dims=small["SK-03"])
    single = resolve_req("SK-03", "AT-10", dims=small["SK-03"])
    assert pair.atom == "AT-10" and pair.atoms_requested == ["AT-03", "AT-09"]
    assert any("AT-03 + AT-09" in n and "AT-10" in n and "same kernel" in n for n in pair.notes), pair.notes
    assert pair.name == single.name
    assert _ops(pair) == _ops(single)
    # the order of the pair does not matter
    assert resolve_req("SK-03", "AT-09,AT-03", dims=small["SK-03"]).name == single.name


def test_int8_upgrades_to_at11(resolve_req, small):
    plan = resolve_req("SK-03", "AT-10", params={"quant_mode": "int8_w8a8"}, dims=small["SK-03"])
    assert plan.atom == "AT-11" and plan.name.startswith("sk03-at11-")
    assert any("AT-10" in n and "becomes AT-11" in n for n in plan.notes), plan.notes
    units = [s.unit for s in plan.stages if s.label.startswith("proj.")]
    assert units[:1] == ["V"] and "C" in units and units[-1] == "V", "V -> C -> V (quant, INT32 matmul, dequant)"
    matmuls = [op for s in plan.stages for op in s.stage.ops if op.op == "matmul"]
    assert [op.attrs["out_dtype"] for op in matmuls] == ["INT32"]
    # asking for AT-11 directly gives the same kernel, without the upgrade note
    direct = resolve_req("SK-03", "AT-11", dims=small["SK-03"])
    assert direct.name == plan.name and not any("becomes" in n for n in direct.notes)


def test_mxfp8_refused_on_a2a3(problems, small):
    found = problems("SK-03", "AT-10", params={"quant_mode": "mxfp8"}, dims=small["SK-03"])
    assert [c for c, _ in found] == ["composition-refused"]
    message = found[0][1]
    assert "a2a3" in message and ("FP8" in message or "scaled_mm" in message), message
    assert "ascend950" in message, "the refusal suggests the platform that has it"


def test_mxfp8_accepted_on_ascend950(resolve_req, small):
    plan = resolve_req("SK-03", "AT-10", params={"quant_mode": "mxfp8"}, dims=small["SK-03"], platform="ascend950")
    assert plan.atom == "AT-10" and plan.platform == "ascend950"
    assert "scaled_mm" in [op.op for s in plan.stages for op in s.stage.ops]


def test_sk04_mxfp8_refused_with_kn_layout(problems, resolve_req, small):
    found = problems("SK-04", "AT-10", params={"quant_mode": "mxfp8"}, dims=small["SK-04"], platform="ascend950")
    assert [c for c, _ in found] == ["composition-refused"]
    assert "AT-09" in found[0][1] and "weight_layout=nk" in found[0][1], found[0][1]
    plan = resolve_req("SK-04", "AT-10", params={"quant_mode": "mxfp8", "weight_layout": "nk"}, dims=small["SK-04"], platform="ascend950")
    assert plan.params["weight_layout"] == "nk"


def test_k_split_is_two_half_matmuls_summed_in_fp32(problems, resolve_req, small):
    """AT-22 through AT-09's k_split: the Cube stage runs two matmuls over the halves of K (each
    with an FP32 result), the epilogue adds them before the output cast; the quantised paths are
    refused (their scales would need splitting too)."""
    plan = resolve_req("SK-03", "AT-10", params={"k_split": True}, dims=small["SK-03"])
    ops = [op for s in plan.stages for op in s.stage.ops]
    matmuls = [op for op in ops if op.op == "matmul"]
    assert [op.attrs["out_dtype"] for op in matmuls] == ["FP32", "FP32"]
    views = [op for op in ops if op.op == "view" and op.out.endswith(("x_lo", "x_hi"))]
    assert len(views) == 2 and all(op.card == "AT-22" and render_expr(op.attrs["shape"][1]) == "K // 2" for op in views)
    assert any(op.op == "add" and op.out.endswith("acc_f") for op in ops)
    found = problems("SK-03", "AT-10", params={"k_split": True, "quant_mode": "int8_w8a8"}, dims=small["SK-03"])
    assert [c for c, _ in found] == ["composition-refused"] and "k_split=false" in found[0][1]
    sk04 = resolve_req("SK-04", "AT-10", dims=small["SK-04"], stage_params={"q_a_proj": {"k_split": "true"}})
    assert sum(op.op == "matmul" for s in sk04.stages if s.label.startswith("q_a_proj") for op in s.stage.ops) == 2


def test_fixed_stage_settings(resolve_req, small):
    plan = resolve_req("SK-04", "AT-10", dims=small["SK-04"], stage_params={"kv_norm": {"has_gamma": "false"}})
    assert plan.stage_params == {"kv_norm": {"has_gamma": False}}
    assert "gamma_ckv" not in _io(plan.inputs), "an input the flow no longer reads is left out"
    assert any("gamma_ckv" in n for n in plan.notes)
    assert plan.name.endswith("-kv_norm.nogamma")


def test_fixed_stage_setting_at_its_default_is_no_setting(resolve_req, small):
    """kv_norm.has_gamma=true is the default: same kernel, same name as not saying it."""
    plain = resolve_req("SK-04", "AT-10", dims=small["SK-04"])
    explicit = resolve_req("SK-04", "AT-10", dims=small["SK-04"], stage_params={"kv_norm": {"has_gamma": "true"}})
    assert explicit.stage_params == {} and explicit.name == plain.name


# --- tile fitting --------------------------------------------------------------------------------


def test_vec_tile_rows_halved_when_they_do_not_fit(resolve_req):
    plan = resolve_req("SK-03", "AT-10", dims={"K": 16384, "N": 128})
    norm = _stage(plan, "proj.rmsnorm")
    assert norm.vec_tile == [1, 16384], "rows halved 4 -> 2 -> 1, the reduction axis kept whole"
    assert norm.fit_notes, "the plan records why the tile changed"
    note = norm.fit_notes[0]
    assert "[4, 16384]" in note and "[1, 16384]" in note and "UB" in note and "rows halved" in note, note
    assert any(n.startswith("proj.rmsnorm:") and "UB" in n for n in plan.notes)
    # the card's tile is kept where it fits
    assert _stage(resolve_req("SK-03", "AT-10", dims={"K": 4096, "N": 128}), "proj.rmsnorm").vec_tile == [4, 4096]


def test_elementwise_stage_may_split_its_last_axis(resolve_req, instance_factory):
    """The MLA-prolog-quant dequant epilogue over NH*D = 32768 columns has no reduction: once its rows
    are 1 the fitter halves the last axis (instead of refusing the DeepSeek-V4 shape)."""
    dims = {"H": 256, "Q": 128, "NH": 64, "D": 512, "DKV": 64, "R": 32}
    plan = resolve_req("SK-04", "AT-10", params={"quant_mode": "int8_w8a8"}, dims=dims)
    epilogue = _stage(plan, "q_norm_proj.linear.epilogue")
    assert epilogue.vec_tile[0] == 1 and epilogue.vec_tile[-1] < 32768 and epilogue.vec_tile[-1] % 8 == 0
    assert "last axis" in epilogue.fit_notes[0]
    # the norms keep their reduction axis whole
    assert _stage(plan, "q_head_norm").vec_tile[-1] == 512
    folder = instance_factory("SK-04", "AT-10", params={"quant_mode": "int8_w8a8"}, dims=dims)
    for T in (9, 1):
        result = run_instance(folder, T=T, estimate=False)
        assert result.passed, (T, result.error, result.outputs)
    # and the seed-dims MLA prolog quant resolves
    assert resolve_req("SK-04", "AT-10", params={"quant_mode": "int8_w8a8"}).atom == "AT-11"


def test_tile_unfit_when_one_row_does_not_fit(problems):
    found = problems("SK-03", "AT-10", dims={"K": 131072, "N": 128})
    assert [c for c, _ in found] == ["tile-unfit"]
    assert "UB" in found[0][1] and "--dim" in found[0][1], found[0][1]


def test_tile_unfit_carries_the_skeletons_way_out(problems):
    """SK-02's score row is one vector tile: past the UB the refusal names SK-01 (the skeleton's
    ``performance.unfit``), at the fitting S it resolves."""
    found = problems("SK-02", "AT-02", dims={"S": 32768})
    assert [c for c, _ in found] == ["tile-unfit"]
    assert "SK-02:" in found[0][1] and "SK-01" in found[0][1] and "UB" in found[0][1], found[0][1]


def test_sk02_resolves_at_the_longest_fitting_key_range(resolve_req):
    assert resolve_req("SK-02", "AT-02", dims={"S": 16384}).dims["S"] == 16384


@pytest.mark.parametrize(
    ("params", "platform"),
    [
        ({}, None),
        ({"quant_mode": "int8_w8a8"}, None),
        ({"output_rstd": True, "rsqrt_mode": "sqrt_div", "has_bias": True}, None),
        ({"quant_mode": "mxfp8"}, "ascend950"),
    ],
    ids=["bf16", "int8", "rstd-sqrtdiv-bias", "mxfp8-950"],
)
def test_accepted_vec_tile_passes_ptosim(instance_factory, params, platform):
    """The halved tile runs on ptosim (its own UB check) and matches the golden, tail included."""
    folder = instance_factory("SK-03", "AT-10", dims={"K": 16384, "N": 128}, params=params, platform=platform)
    for T in (129, 1):  # one full 128-row tile and the tail path
        result = run_instance(folder, T=T, estimate=False)
        assert result.passed, (T, result.error, result.outputs)


def test_one_row_more_than_the_fitted_tile_is_refused_by_ptosim(instance_factory, tmp_path):
    """The boundary is ptosim's: doubling the fitted tile's rows makes ptosim refuse the kernel."""
    folder = instance_factory("SK-03", "AT-10", dims={"K": 16384, "N": 128})
    copy = tmp_path / folder.name
    shutil.copytree(folder, copy)
    kernel = copy / "kernel.py"
    text = kernel.read_text(encoding="utf-8")
    # the weight prep's call is the only one: the token loop's norm runs under the shape it leaves in force
    fitted = "pypto.set_vec_tile_shapes(1, 16384)\n    gamma_2d"
    assert fitted in text and text.count("set_vec_tile_shapes") == 1
    kernel.write_text(text.replace(fitted, "pypto.set_vec_tile_shapes(2, 16384)\n    gamma_2d"), encoding="utf-8")
    result = run_instance(copy, T=128, estimate=False)  # the 128-row path: rows of the tile in force
    assert not result.passed and result.error and "ptosim refused" in result.error, result
    assert "UB" in result.error and "proj.rmsnorm" in result.error, result.error


# --- options -------------------------------------------------------------------------------------


def test_option_overrides_a_recommended_option(resolve_req, small):
    plan = resolve_req("SK-03", "AT-10", dims=small["SK-03"], options={"vec_nbuffer_setting": {0: 4}})
    assert plan.pass_options["vec_nbuffer_setting"] == {0: 4}
    assert plan.option_levels["vec_nbuffer_setting"] == "user (--option)"
    assert plan.pass_options["cube_l1_reuse_setting"] == {-1: 2, 1: 1}, "other options keep their advice"


def test_option_over_a_must_option_is_noted(resolve_req, small):
    plan = resolve_req("SK-03", "AT-10", dims=small["SK-03"], options={"stitch_function_max_num": 64})
    assert plan.runtime_options["stitch_function_max_num"] == 64
    assert any("overrides a must-level setting" in n for n in plan.notes)


def test_unknown_option(problems):
    found = problems("SK-03", "AT-10", options={"stitch_function_max_nm": 3})
    assert [c for c, _ in found] == ["bad-option"]
    assert "did you mean 'stitch_function_max_num'" in found[0][1]


def test_option_out_of_range(problems):
    found = problems("SK-03", "AT-10", options={"stitch_function_max_num": 0, "vec_nbuffer_setting": "x"})
    assert [c for c, _ in found] == ["bad-option", "bad-option"]
    assert any("1..1024" in m for _, m in found)


# --- bad requests ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("skeleton", "atoms", "fields", "code", "words"),
    [
        ("SK-03", "AT-10", {"params": {"has_gama": "true"}}, "unknown-param", ["AT-10", "has_gama", "did you mean 'has_gamma'"]),
        ("SK-03", "AT-10", {"params": {"out_dtype": "FP16"}}, "bad-param-value", ["out_dtype", "BF16, FP32"]),
        ("SK-03", "AT-10", {"params": {"has_gamma": "maybe"}}, "bad-param-value", ["has_gamma", "true or false"]),
        ("SK-03", "AT-10", {"params": {"eps": "0"}}, "bad-param-value", ["eps", "> 0"]),
        ("SK-03", "AT-10", {"params": {"eps": "inf"}}, "bad-param-value", ["eps", "finite"]),
        ("SK-03", "AT-10", {"params": {"quant": "int8_w8a8"}}, "unknown-param", ["'quant'", "renamed", "'quant_mode'"]),
        ("SK-04", "AT-10", {"stage_params": {"kv_nrom": {"has_gamma": "false"}}}, "unknown-param", ["kv_nrom", "did you mean 'kv_norm'"]),
        ("SK-03", "AT-10", {"stage_params": {"kv_norm": {"has_gamma": "false"}}}, "unknown-param", ["SK-03", "kv_norm", "fixed stages"]),
        ("SK-04", "AT-10", {"stage_params": {"q_a_proj": {"weight_layout": "nk"}}}, "unknown-param", ["q_a_proj.weight_layout", "fixed by SK-04"]),
        ("SK-04", "AT-10", {"stage_params": {"q_head_norm": {"has_gamma": "true"}}}, "unknown-param", ["q_head_norm.has_gamma", "fixed"]),
        ("SK-04", "AT-10", {"stage_params": {"kv_norm": {"rsqrt_mode": "foo"}}}, "bad-param-value", ["kv_norm", "rsqrt, sqrt_div"]),
        ("SK-03", "AT-10", {"dims": {"Z": 3}}, "bad-dim", ["'Z'", "K, N"]),
        ("SK-03", "AT-10", {"dims": {"K": 100}}, "bad-dim", ["K=100", "multiple of 64"]),
        ("SK-03", "AT-10", {"dims": {"N": "abc"}}, "bad-dim", ["N", "positive integer"]),
        ("SK-03", "AT-10", {"dims": {"K": 0}}, "bad-dim", ["K", "positive integer"]),
        ("SK-03", "AT-10", {"params": {"unroll": 3}}, "bad-param-value", ["unroll", "128, 64, 32, 16, 8, 1"]),
        ("SK-03", "AT-10", {"platform": "a2a4"}, "unknown-platform", ["a2a4", "did you mean 'a2a3'"]),
        ("SK-03", "AT-10", {"platform": "a2a3", "params": {"platform": "ascend950"}}, "bad-param-value", ["platform"]),
        ("SK-09", "AT-10", {}, "unknown-card", ["SK-09", "SK-03, SK-04, SK-05"]),
        ("SK-03", "AT-99", {}, "unknown-card", ["AT-99", "AT-10, AT-11"]),
        ("SK-03", "AT-05", {}, "slot-mismatch", ["AT-05", "cannot fill", "AT-10, AT-11"]),
        ("SK-03", "AT-03,AT-05", {}, "slot-mismatch", ["AT-03 + AT-05"]),
        ("SK-03", "AT-08", {"platform": "ascend950"}, "slot-mismatch", ["AT-08", "cannot fill"]),
        ("SK-03", "AT-10", {"platform": "a2a3", "params": {"quant_mode": "fp8_w8a8"}}, "composition-refused", ["FP8E4M3", "a2a3", "ascend950"]),
        ("SK-05", "AT-10", {"params": {"quant_mode": "fp8_w8a8"}}, "composition-refused", ["FP8E4M3", "ascend950"]),
        ("SK-03", "AT-11", {"params": {"quant_mode": "none"}}, "bad-param-value", ["AT-11", "int8_w8a8"]),
        ("SK-03", "AT-10", {"name": "a/b"}, "bad-name", ["a/b", "path separators"]),
        ("SK-03", "AT-10", {"name": ".."}, "bad-name", ["'..'"]),
    ],
)
def test_bad_request(problems, skeleton, atoms, fields, code, words):
    found = problems(skeleton, atoms, **fields)
    assert [c for c, _ in found] == [code], found
    for word in words:
        assert word in found[0][1], (word, found[0][1])


def test_all_problems_of_a_request_reported_together(problems):
    found = problems(
        "SK-03",
        "AT-10",
        params={"quant": "int8_w8a8", "has_gama": True, "out_dtype": "FP16", "unroll": 3},
        dims={"K": 100, "Z": 3},
        stage_params={"kv_norm": {"has_gamma": False}},
        platform="a2a4",
        name="a/b",
    )
    codes = sorted(c for c, _ in found)
    assert codes == sorted(
        ["unknown-param", "unknown-param", "bad-param-value", "bad-param-value", "bad-dim", "bad-dim", "unknown-param", "unknown-platform", "bad-name"]
    ), found


def test_atom_problems_come_with_the_others(problems):
    found = problems("SK-03", "AT-05", dims={"K": 100}, params={"unroll": 3})
    assert sorted(c for c, _ in found) == ["bad-dim", "bad-param-value", "slot-mismatch"], found


def test_manifest_refusals_hold(cat, request_of):
    """Every `refused:` entry of the manifest is refused with its expected code."""
    from pattern_gen.plan.manifest import load_manifest, to_request
    from pattern_gen.plan.resolver import resolve
    from pattern_gen.vocab.errors import PatternGenError

    manifest = load_manifest(cat.dirs[0] / "manifest.yaml")
    assert len(manifest.refused) >= 8
    for entry in manifest.refused:
        with pytest.raises(PatternGenError) as info:
            resolve(cat, to_request(entry))
        codes = [p.code for p in info.value.problems]
        assert entry.expect in codes, (entry, codes)


def test_a_rope_dim_as_wide_as_the_head_is_refused_with_the_dims(resolve_req):
    """SK-04 rotates the last R dims and passes D − R through: R = D leaves a zero-wide tensor,
    which is refused at the card line that makes it, naming the dims to change."""
    with pytest.raises(PatternGenError) as err:
        resolve_req("SK-04", "AT-10", dims={"H": 256, "Q": 128, "NH": 4, "D": 64, "DKV": 64})
    (problem,) = err.value.problems
    assert problem.code == "bad-expression" and problem.file.endswith("AT-04-rope.yaml") and problem.line
    assert "D - R = 0" in problem.message and "D=64" in problem.message and "R=64" in problem.message and "--dim" in problem.message


def test_sk04_kv_layout_v3_is_a_skeleton_parameter(resolve_req, cat):
    """DeepSeek-V2/V3's kv layout: wkv gains the R k_pe columns and kr is a separate output; the
    parameter is the skeleton's own (not the slot atom's), named as a suffix and decoded by explain."""
    from pattern_gen.plan.naming import explain

    plan = resolve_req("SK-04", "AT-10", params={"kv_layout": "v3"})
    ins, outs = _io(plan.inputs), _io(plan.outputs)
    assert ins["wkv"][0] == ["H", "DKV+R"] and outs["kr"] == (["T", "R"], "BF16", "output")
    assert "kv_split" in [s.label for s in plan.all_stages]
    assert "-kv_layoutv3" in plan.name
    assert explain(cat, plan.name)["params"]["kv_layout"] == "v3"
    default = resolve_req("SK-04", "AT-10")
    assert "kr" not in _io(default.outputs) and "kv_layout" not in default.name


def test_an_unknown_kv_layout_is_refused(problems):
    found = problems("SK-04", "AT-10", params={"kv_layout": "v2"})
    assert found[0][0] == "bad-param-value" and "v4, v3" in found[0][1]


@pytest.mark.parametrize("D", [64, 128, 256])
def test_the_softmax_scale_follows_the_head_dim(resolve_req, D):
    """Issue 29: the scale was 1/sqrt(128) whatever D (18-22 % off at D=64, silently). Unset, it is
    1/sqrt(D) as transformers' attention modules set it; a default is no setting (not in the name)."""
    sk01 = resolve_req("SK-01", "AT-01", dims={"D": D})
    assert sk01.params["scale"] == pytest.approx(D ** -0.5, rel=1e-15) and "scale" not in sk01.name
    sk05 = resolve_req("SK-05", "AT-10", dims={"D": D, "H": 256, "NQ": 4, "NKV": 2})
    scales = [a.expr.value for s in sk05.stages for op in s.stage.ops for a in op.args if getattr(a, "param", None) == "scale"]
    assert scales and all(v == pytest.approx(D ** -0.5, rel=1e-15) for v in scales), scales
    assert "scale" not in sk05.name


def test_a_stated_scale_is_kept_and_named(resolve_req):
    plan = resolve_req("SK-01", "AT-01", dims={"D": 64}, params={"scale": 0.08838834764831845})
    assert plan.params["scale"] == 0.08838834764831845 and "scale" in plan.name
    sk05 = resolve_req("SK-05", "AT-10", dims={"D": 64, "H": 256, "NQ": 4, "NKV": 2}, stage_params={"attn_softmax": {"scale": 0.125}})
    assert "scale" not in sk05.name, "the stated value equals the head dim's default"


def test_sk04_v3_has_no_q_head_norm(resolve_req):
    """Issue 29: kv_layout=v3 gave q DeepSeek-V4's per-head norm (60-67 % off DeepseekV3Attention)."""
    labels = lambda plan: {s.label for s in plan.stages}  # noqa: E731
    assert "q_head_norm" in labels(resolve_req("SK-04", "AT-10"))
    assert "q_head_norm" not in labels(resolve_req("SK-04", "AT-10", params={"kv_layout": "v3"}))


def test_a_dims_upper_bound_names_the_bound_and_its_dims(cli, tmp_path):
    """SK-07's top_k must fit the eligible groups' experts (K <= KG*E/G): past it the router's
    k-th best would be a dropped group's -1e30 and every expert would be chosen."""
    run = cli("new", "--skeleton", "SK-07", "--dim", "E=16", "--dim", "G=4", "--dim", "KG=1", "--dim", "K=6", "--out", tmp_path / "k")
    run.assert_bad_input("bad-dim")
    (text,) = run.with_code("bad-dim")
    assert "dim K=6 must be at most KG*E/G = 4 with E=16, G=4, KG=1" in text and "change --dim K" in text
    assert not (tmp_path / "k").exists()
    cli("new", "--skeleton", "SK-07", "--dim", "E=16", "--dim", "G=4", "--dim", "KG=1", "--dim", "K=4", "--dry-run").assert_ok()
