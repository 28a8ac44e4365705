"""Vector groups run per column tile, and a matmul's bias copied in per output tile (rules
vec-task-per-column-tile and cube-bias-per-output-tile), as PyPTO 0.2.0's SIM ran a SwiGLU FFN and
an RMSNorm + linear with a bias epilogue."""

import ml_dtypes
import numpy as np

import ptosim as pypto
from ptosim.cost import estimate

BF16, FP32 = pypto.DT_BF16, pypto.DT_FP32


def _ffn(vec_tile=(64, 128), nbuf=None, chain="swiglu", bias=False):
    """x [1, 256] -> gate, up [1, 512] FP32 -> an elementwise act on vec tiles ``vec_tile`` -> down [1, 256]."""
    passes = {"cube_l1_reuse_setting": {-1: 2}, **({"vec_nbuffer_setting": nbuf} if nbuf else {})}

    @pypto.frontend.jit(pass_options=passes)
    def ffn(x: pypto.Tensor[[1, 256], BF16], wg: pypto.Tensor[[512, 256], BF16], wu: pypto.Tensor[[512, 256], BF16],
            bg: pypto.Tensor[[1, 512], FP32], wd: pypto.Tensor[[256, 512], BF16], y: pypto.Tensor[[1, 256], BF16]):
        for _ in pypto.loop(1, name="L"):
            pypto.set_semantic_label("gate_up")
            pypto.set_cube_tile_shapes([128, 128], [128, 256], [128, 128])
            ext = {"extend_params": {"bias_tensor": bg}} if bias else {}
            g = pypto.matmul(x, wg, FP32, b_trans=True, **ext)
            u = pypto.matmul(x, wu, FP32, b_trans=True)
            pypto.set_semantic_label("act")
            pypto.set_vec_tile_shapes(*vec_tile)
            if chain == "swiglu":
                a = pypto.mul(pypto.div(g, pypto.add(pypto.exp(pypto.neg(g)), 1.0)), u)
            elif chain == "rowsum":  # a row reduction joins the column tiles
                a = pypto.mul(g, pypto.sum(u, dim=-1, keepdim=True))
            else:
                a = pypto.mul(g, u)
            h = pypto.cast(a, BF16)
            pypto.set_semantic_label("down")
            pypto.assemble(pypto.matmul(h, wd, BF16, b_trans=True), [0, 0], y)

    rng = np.random.default_rng(0)
    def bf(*s):
        return rng.uniform(-0.1, 0.1, s).astype(ml_dtypes.bfloat16)
    ffn(bf(1, 256), bf(512, 256), bf(512, 256), np.zeros((1, 512), np.float32), bf(256, 512),
        np.zeros((1, 256), ml_dtypes.bfloat16))
    return estimate(ffn.last_record)


def _act(est):
    return [t for t in est.work_tasks if t.label == "act" and t.kind == "AIV"]


def test_elementwise_vector_group_runs_per_column_tile():
    """The FFN's act on [1, 512] with vec tile [64, 128]: PyPTO 0.2.0 ran 4 AIV tasks under vec_nbuffer
    {-1: 1}, 2 under {-1: 2} (also with {0: 4} beside it: the hash order's key does not reach them), 1
    under {-1: 4}; one task with vec tile [8, 512]. Each task copies in its own 128 columns."""
    one = _ffn(nbuf={-1: 1})
    assert len(_act(one)) == 4 and "vec-task-per-column-tile" in one.rules_fired
    ins = {op.shape for t in _act(one) for op in t.ops if op.name == "COPY_IN"}
    assert ins == {(1, 128)}
    assert len(_act(_ffn(nbuf={-1: 2}))) == 2
    assert len(_act(_ffn(nbuf={-1: 2, 0: 4}))) == 2
    assert len(_act(_ffn(nbuf={-1: 4}))) == 1
    assert len(_act(_ffn(chain="mul", nbuf={-1: 2}))) == 2
    wide = _ffn(vec_tile=(8, 512), nbuf={-1: 1})
    assert len(_act(wide)) == 1 and "vec-task-per-column-tile" not in wide.rules_fired
    # each column task waits for the gate_up task that made its columns, not for all of them
    gate_up = {t.id for t in one.work_tasks if t.label == "gate_up"}
    assert all(len(t.preds & gate_up) == 1 for t in _act(one))


def test_a_row_reduction_keeps_the_column_tiles_together():
    """A sum along the row reads every column tile: the group is not cut per column tile."""
    est = _ffn(chain="rowsum", nbuf={-1: 1})
    assert "vec-task-per-column-tile" not in est.rules_fired


def test_column_tasks_feeding_no_shared_task_are_not_merged():
    """An epilogue (add a bias row, cast) assembled straight to the output: PyPTO 0.2.0 left its 4 column
    tasks unmerged under vec_nbuffer {0: 2} (RMSNorm + linear, K=256 N=512, vec tile [64, 128])."""

    @pypto.frontend.jit(pass_options={"vec_nbuffer_setting": {-1: 2}})
    def epi(x: pypto.Tensor[[1, 256], BF16], w: pypto.Tensor[[512, 256], BF16], b: pypto.Tensor[[1, 512], FP32],
            y: pypto.Tensor[[1, 512], BF16]):
        for _ in pypto.loop(1, name="L"):
            pypto.set_cube_tile_shapes([16, 16], [256, 256], [128, 128])
            acc = pypto.matmul(x, w, FP32, b_trans=True)
            pypto.set_semantic_label("epilogue")
            pypto.set_vec_tile_shapes(64, 128)
            pypto.assemble(pypto.cast(pypto.add(acc, b), BF16), [0, 0], y)

    def bf(*s):
        return np.full(s, 0.01, ml_dtypes.bfloat16)
    epi(bf(1, 256), bf(512, 256), np.zeros((1, 512), np.float32), np.zeros((1, 512), ml_dtypes.bfloat16))
    est = estimate(epi.last_record)
    tasks = [t for t in est.work_tasks if t.label == "epilogue"]
    assert len(tasks) == 4 and not any(t.merge for t in tasks)


def test_a_matmul_bias_is_copied_in_per_output_tile():
    """PyPTO 0.2.0's gate_up with a gate bias: per output tile a COPY_IN of the bias's [1, 128] FP32 slice
    (1411 cycles) and an L1_TO_BT (13 cycles) the tile's first A_MUL_B waits for."""
    est = _ffn(bias=True)
    assert "cube-bias-per-output-tile" in est.rules_fired
    gate_up = [t for t in est.work_tasks if t.label == "gate_up"]
    bt = [op for t in gate_up for op in t.ops if op.name == "L1_TO_BT"]
    assert len(bt) == 4 and {op.cycles for op in bt} == {13}
    ins = [op for t in gate_up for op in t.ops if op.name == "COPY_IN" and op.shape == (1, 128)]
    assert len(ins) == 4 and {op.cycles for op in ins} == {1411}
    biased = [op for t in gate_up for op in t.ops if op.name == "A_MUL_B" and any(t.ops[d].name == "L1_TO_BT" for d in op.deps)]
    assert len(biased) == 4  # the gate's tiles (up has no bias)
    plain = [t for t in _ffn().work_tasks if t.label == "gate_up"]
    assert sum(t.end - t.start for t in gate_up) > sum(t.end - t.start for t in plain)


def test_an_op_on_another_column_tiling_starts_a_task():
    """The W8A8 FFN's act ([64, 128] tiles) between its dequant and requant ([8, 512] tiles): three groups
    in PyPTO 0.2.0, the act's 4 column tasks merged 2 at a time under vec_nbuffer {-1: 2} (they meet the
    requant's one task)."""

    def run(nbuf):
        @pypto.frontend.jit(pass_options={"vec_nbuffer_setting": nbuf})
        def k(x: pypto.Tensor[[1, 256], BF16], w: pypto.Tensor[[512, 256], BF16], y: pypto.Tensor[[1, 512], FP32]):
            for _ in pypto.loop(1, name="L"):
                pypto.set_cube_tile_shapes([16, 16], [256, 256], [128, 128])
                g = pypto.matmul(x, w, FP32, b_trans=True)
                pypto.set_semantic_label("dequant")
                pypto.set_vec_tile_shapes(8, 512)
                g = pypto.mul(g, 2.0)
                pypto.set_semantic_label("act")
                pypto.set_vec_tile_shapes(64, 128)
                a = pypto.mul(pypto.exp(g), g)
                pypto.set_semantic_label("requant")
                pypto.set_vec_tile_shapes(8, 512)
                pypto.assemble(pypto.div(a, pypto.amax(pypto.abs(a), -1, keepdim=True)), [0, 0], y)

        def bf(*s):
            return np.full(s, 0.01, ml_dtypes.bfloat16)
        k(bf(1, 256), bf(512, 256), np.zeros((1, 512), np.float32))
        est = estimate(k.last_record)
        out: dict[str, int] = {}
        for t in est.work_tasks:
            if t.kind == "AIV":
                out[t.label] = out.get(t.label, 0) + 1
        return out

    assert run({-1: 1}) == {"dequant": 1, "act": 4, "requant": 1}
    assert run({-1: 2}) == {"dequant": 1, "act": 2, "requant": 1}
