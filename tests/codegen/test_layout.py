"""emit/layout.py's decisions on small hand-made stage contexts: which tile calls stay, which casts
are shared, what leaves the token loop, which names get shorter."""

from __future__ import annotations

from pattern_gen.emit.layout import drop_repeated_tiles, hoist_invariants, share_casts, shorten_names


def _op(kind, out=None, args=(), **attrs):
    family = {"loop": "loop", "if": "if", "else": "else", "end": "end"}.get(kind, kind)
    return {"kind": kind, "macro": family, "out": out, "args": list(args), "note": "", **attrs}


def _stage(label, vec=None, ops=()):
    return {"label": label, "tile": {"kind": "vec", "shape": list(vec)} if vec else None, "ops": list(ops)}


def _tiles(*regions):
    return [s["label"] for stages in regions for s in stages if s["tile"]]


def test_a_repeated_shape_is_not_set_again():
    pro = [_stage("a", (1, 64)), _stage("b", (1, 64))]
    body = [_stage("c", (4, 256)), _stage("d", (4, 256)), _stage("e", (8, 128))]
    drop_repeated_tiles(pro, body, [])
    assert _tiles(pro, body) == ["a", "c", "e"]


def test_a_loop_body_ending_on_another_shape_sets_its_first_again():
    # the token loop's body ends on (8, 128): its first stage's (4, 256) is needed on every pass
    body = [_stage("c", (4, 256)), _stage("e", (8, 128))]
    pro = [_stage("a", (4, 256))]
    drop_repeated_tiles(pro, body, [])
    assert _tiles(pro, body) == ["a", "c", "e"]
    # a body that leaves the shape it starts with needs no call where the prologue set it
    pro, body = [_stage("a", (4, 256))], [_stage("c", (4, 256))]
    drop_repeated_tiles(pro, body, [])
    assert _tiles(pro, body) == ["a"]


def test_branches_count_both_ways():
    after = [
        _stage("head", (2, 64), [_op("loop", index="j")]),
        _stage("first", (2, 128), [_op("if")]),
        _stage("first_update", (2, 64), [_op("else")]),
        _stage("rescale", (2, 128)),  # the else starts with (2, 64) or (2, 128): set again
        _stage("rest_update", (2, 64), [_op("end")]),
        _stage("finalize", (2, 64), [_op("end")]),  # both branches leave (2, 64)
    ]
    drop_repeated_tiles([], [], after)
    assert _tiles(after) == ["head", "first", "first_update", "rescale", "rest_update"]


def test_a_cast_is_shared_only_where_the_first_one_is_in_scope():
    body = [
        _stage("q_rope", ops=[_op("cast", "q_cf", ["cos_t"], to="FP32"), _op("mul", "q_y", ["q_cf", "x"])]),
        _stage("k_rope", ops=[_op("cast", "k_cf", ["cos_t"], to="FP32"), _op("mul", "k_y", ["k_cf", "x"])]),
        _stage("other", ops=[_op("cast", "h", ["cos_t"], to="BF16")]),
    ]
    assert share_casts([[], body, []]) == 1
    assert [op["out"] for s in body for op in s["ops"]] == ["q_cf", "q_y", "k_y", "h"]
    assert body[1]["ops"][0]["args"] == ["q_cf", "x"]
    # a cast inside an if branch is not in scope in the else branch, nor after a write to its source
    body = [
        _stage("s", ops=[_op("if"), _op("cast", "a", ["t"], to="FP32"), _op("else"), _op("cast", "b", ["t"], to="FP32"), _op("end")]),
        _stage("w", ops=[_op("cast", "c", ["u"], to="FP32"), _op("assemble", None, ["c", "u"]), _op("cast", "d", ["u"], to="FP32")]),
    ]
    assert share_casts([[], body, []]) == 0


def test_only_an_invariant_in_place_reshape_leaves_the_token_loop():
    body = [
        _stage(
            "sequence",
            ops=[
                _op("reshape", "q_rows", ["q"], shape="[T * NQ, D]", inplace=True),
                _op("reshape", "x_rows", ["x"], shape="[tile * NQ, D]", inplace=True),  # reads the tile factor
                _op("view", "w_lo", ["w"], shape="[N, K // 2]", offsets="[0, 0]"),  # a view: stays
                _op("reshape", "o_rows", ["out"], shape="[T, D]", inplace=True),  # out is written below
                _op("assemble", None, ["x_rows", "out"], offsets="[t_off, 0]"),
            ],
        )
    ]
    hoisted = hoist_invariants(body, {"q", "x", "w", "out", "T"}, {"t_off", "tile"})
    assert [(label, op["out"]) for label, op in hoisted] == [("sequence", "q_rows")]
    assert [op["out"] for op in body[0]["ops"]] == ["x_rows", "w_lo", "o_rows", None]


def test_names_shorten_where_unique():
    stages = [
        _stage("proj.rmsnorm", ops=[_op("cast", "proj_norm_xf", ["x"], to="FP32")]),
        _stage("proj.linear", ops=[_op("full", "proj_linear_q_c127"), _op("div", "proj_linear_q_qs", ["proj_linear_q_c127", "x"])]),
        _stage("q_norm", ops=[_op("mul", "q_norm_sq", ["a", "a"])]),
        _stage("k_norm", ops=[_op("mul", "k_norm_sq", ["b", "b"]), _op("mul", "k_normed", ["k_norm_sq", "b"])]),
    ]
    shorten_names([stages], {"x", "a", "b"})
    outs = [op["out"] for s in stages for op in s["ops"]]
    # under proj the call path is proj (norm and linear differ): each keeps its last two words
    assert outs == ["norm_xf", "q_c127", "q_qs", "q_norm_sq", "k_norm_sq", "k_normed"]
    assert stages[1]["ops"][1]["args"] == ["q_c127", "x"]
