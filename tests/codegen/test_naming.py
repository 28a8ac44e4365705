"""Instance names: derived from the plan, reversed by ``explain``.

A property test draws random valid requests (skeleton, slot atom, every axis value, an unroll
candidate, a platform where allowed, non-default dims and eps, fixed-stage settings) and checks that
``explain(name(plan))`` gives back the plan's choices — and that resolving those choices again
gives the same name (a name identifies one kernel).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from pattern_gen.plan.kernel_plan import Request
from pattern_gen.plan.naming import explain, float_token, parse_float_token
from pattern_gen.plan.resolver import resolve
from pattern_gen.vocab.errors import PatternGenError

# Small dims per skeleton (valid multiples), so no tile ever fails to fit.
_DIM_CHOICES = {
    "SK-03": {"K": [64, 128, 256, 512, 4096], "N": [16, 48, 128, 1536]},
    "SK-04": {"H": [64, 256, 4096], "Q": [64, 128, 1024], "NH": [1, 3, 4, 64], "D": [128, 512], "DKV": [128, 512], "R": [16, 64]},
    "SK-05": {"H": [64, 256, 2048], "NQ": [8, 16, 32], "NKV": [1, 2, 8], "D": [16, 64, 128]},
}
_EPS = [1e-6, 1e-5, 1e-3, 3.5e-4, 0.25, 2.0]
_STAGE_PARAMS = {"has_gamma": [True, False], "rsqrt_mode": ["rsqrt", "sqrt_div"], "eps": _EPS}


def test_name_of_the_spec_example(resolve_req):
    plan = resolve_req("SK-04", "AT-10", params={"unroll": 8})
    assert plan.name == "sk04-at10-gamma-rsqrt-qnone-obf16-nobias-norstd-kn-u8-a2a3"


@pytest.mark.parametrize(
    ("skeleton", "atoms", "fields", "name"),
    [
        ("SK-03", "AT-10", {}, "sk03-at10-gamma-rsqrt-qnone-obf16-nobias-norstd-nk-u128_32_16_8-a2a3"),
        ("SK-03", "AT-03,AT-09", {"dims": {"K": 256, "N": 128}}, "sk03-at10-gamma-rsqrt-qnone-obf16-nobias-norstd-nk-u128_32_16_8-a2a3-K256-N128"),
        ("SK-03", "AT-10", {"params": {"quant_mode": "int8_w8a8"}}, "sk03-at11-gamma-rsqrt-qint8-obf16-nobias-norstd-nk-u128_32_16_8-a2a3"),
        ("SK-03", "AT-10", {"params": {"eps": "1e-5"}, "dims": {"K": 4096}}, "sk03-at10-gamma-rsqrt-qnone-obf16-nobias-norstd-nk-u128_32_16_8-a2a3-eps1em05"),
        (
            "SK-04",
            "AT-10",
            {"stage_params": {"q_head_norm": {"rsqrt_mode": "sqrt_div"}, "kv_norm": {"has_gamma": False}}},
            "sk04-at10-gamma-rsqrt-qnone-obf16-nobias-norstd-kn-u8_4_2-a2a3-kv_norm.nogamma-q_head_norm.sqrtdiv",
        ),
        ("SK-05", "AT-10", {"params": {"unroll": 4}}, "sk05-at10-gamma-rsqrt-qnone-obf16-nobias-norstd-nk-u4-a2a3"),
    ],
)
def test_names(resolve_req, skeleton, atoms, fields, name):
    """Every axis in naming.yaml's order (defaults included), then non-default eps, dims, stage settings."""
    assert resolve_req(skeleton, atoms, **fields).name == name


def test_names_are_unique_over_the_manifest(cat):
    from pattern_gen.plan.manifest import load_manifest, to_request

    manifest = load_manifest(cat.dirs[0] / "manifest.yaml")
    names = [resolve(cat, to_request(e)).name for e in manifest.instances if e.name is None]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("value", [1e-6, 1e-5, 0.001, 1e30, 2.5, 1e-300, 123456.789])
def test_float_tokens_round_trip(value):
    token = float_token(value)
    assert "-" not in token and "." not in token, "'-' separates tokens and '.' stage settings"
    assert parse_float_token(token) == value


@st.composite
def requests(draw, cat):
    skeleton = draw(st.sampled_from(["SK-03", "SK-04", "SK-05"]))
    card = cat.cards[skeleton]
    atoms = draw(st.sampled_from(["AT-10", "AT-11", "AT-03,AT-09"]))
    params: dict = {}
    for axis, values in [
        ("has_gamma", [True, False]),
        ("rsqrt_mode", ["rsqrt", "sqrt_div"]),
        ("quant_mode", ["none", "int8_w8a8", "mxfp8"]),
        ("out_dtype", ["BF16", "FP32"]),
        ("has_bias", [True, False]),
        ("output_rstd", [True, False]),
        ("weight_layout", ["nk", "kn"]),
    ]:
        if draw(st.booleans()):
            params[axis] = draw(st.sampled_from(values))
    if atoms == "AT-11":
        params["quant_mode"] = "int8_w8a8"
    if params.get("quant_mode") == "mxfp8":
        params["weight_layout"] = "nk"  # MX scales need [N, K] (AT-09's refuse rule; SK-04 defaults to kn)
    if draw(st.booleans()):
        params["eps"] = draw(st.sampled_from(_EPS))
    if draw(st.booleans()):
        params["unroll"] = draw(st.sampled_from(card.loop.candidates))
    if params.get("quant_mode") == "mxfp8":
        platform = "ascend950"
    else:
        platform = draw(st.sampled_from([None, "a2a3", "ascend950"]))
    dims = {d: draw(st.sampled_from(v)) for d, v in _DIM_CHOICES[skeleton].items() if draw(st.booleans())}
    stage_params: dict = {}
    fixed = [i for i in card.stages if getattr(i, "use", None) == "AT-03"]
    for item in fixed:
        for key, values in _STAGE_PARAMS.items():
            if key not in item.params and draw(st.integers(0, 3)) == 0:
                stage_params.setdefault(item.as_, {})[key] = draw(st.sampled_from(values))
    return Request(skeleton, tuple(atoms.split(",")), params, stage_params, dims, platform)


class _Context:
    """The catalogue and the request strategy, with a short repr (hypothesis prints arguments)."""

    def __init__(self, cat):
        self.cat = cat
        self.requests = requests(cat)

    def __repr__(self) -> str:
        return "<shipped catalogue>"


@pytest.fixture(scope="module")
def ctx(cat):
    return _Context(cat)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_explain_reverses_name(ctx, data):
    cat = ctx.cat
    req = data.draw(ctx.requests, label="request")
    try:
        plan = resolve(cat, req)
    except PatternGenError as exc:  # a combination the cards refuse is not a name
        assume(not all(p.code in ("composition-refused", "tile-unfit") for p in exc.problems))
        raise AssertionError(f"unexpected refusal of {req}: {exc}") from None
    decoded = explain(cat, plan.name)
    assert decoded["skeleton"] == plan.skeleton and decoded["atom"] == plan.atom
    assert tuple(decoded["unroll"]) == plan.unroll and decoded["platform"] == plan.platform
    axes = {a["param"] for a in cat.naming["axes"]}
    expected_params = {k: v for k, v in plan.params.items() if k in axes or v != plan.param_defaults[k]}
    assert decoded["params"] == expected_params
    assert decoded["dims"] == {k: v for k, v in plan.dims.items() if v != plan.dim_defaults[k]}
    assert decoded["stage_params"] == plan.stage_params
    # the decoded choices make the same kernel, hence the same name
    again = resolve(
        cat,
        Request(
            decoded["skeleton"],
            (decoded["atom"],),
            {**decoded["params"], "unroll": decoded["unroll"]},
            decoded["stage_params"],
            decoded["dims"],
            decoded["platform"],
        ),
    )
    assert again.name == plan.name
    assert [(s.label, [op.op for op in s.stage.ops]) for s in again.all_stages] == [
        (s.label, [op.op for op in s.stage.ops]) for s in plan.all_stages
    ]


@pytest.mark.parametrize(
    "name",
    [
        "",
        "sk03",
        "foo-bar",
        "at10-sk03",
        "sk03-sk04",
        "sk99-at10",
        "sk03-at05",
        "sk03-at10-zzz",
        "sk03-at10--gamma",
        "sk03-at10-gamma-nogamma",
        "sk03-at10-u3",
        "sk03-at10-u",
        "sk03-at10-K100",
        "sk03-at10-K256x",
        "sk03-at10-epsabc",
        "sk03-at10-kv_norm.nogamma",
        "sk04-at10-kv_nrom.nogamma",
        "sk04-at10-kv_norm.zzz",
        "sk04-at10-kv_norm.qint8",
        "sk04-at10-a2a3-ascend950",
        "at10-at10-K256",
    ],
)
def test_bad_names(cat, name):
    with pytest.raises(PatternGenError) as info:
        explain(cat, name)
    assert [p.code for p in info.value.problems] == ["bad-name"]
    assert "cannot decode" in str(info.value)
