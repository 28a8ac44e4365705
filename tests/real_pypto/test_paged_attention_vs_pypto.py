"""The hand-written paged attention (tests/ptosim/paged_attention_kernel.py) on real PyPTO 0.2.0's
CPU verifier gives the same bits as on ptosim: element reads of the block table, the dynamic kv
loop, ``is_loop_begin`` / ``is_loop_end``, ``buf[:] =`` accumulators and the ``valid_shape`` tail
mean the same thing in both. Skipped where pypto is not installed."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

pypto = pytest.importorskip("pypto", reason="pypto is not installed: pip install -e '.[pypto]'")
torch = pytest.importorskip("torch")

from tests.ptosim import paged_attention_kernel as pa  # noqa: E402

SOURCE = Path(pa.__file__)


def _real_module(tmp_path: Path):
    """The kernel file with ``import pypto`` (PyPTO's jit parser reads the module's source)."""
    text = SOURCE.read_text().replace("import ptosim as pypto", "import pypto")
    path = tmp_path / "paged_attention_pypto.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location("paged_attention_pypto", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _torch(a: np.ndarray):
    a = np.ascontiguousarray(a)
    if a.dtype == ml_dtypes.bfloat16:
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(a)


def _verify(kernel, args, workdir: Path) -> np.ndarray:
    # PyPTO 0.2.0 copies CPU inputs for its verifier with CopyToHost (all zeros without an NPU):
    # hand it the tensors' own data, as the generated pypto hosts do.
    from pypto import pypto_impl
    from pypto.frontend.parser import entry
    from pypto.runtime import _pto_to_tensor_data, _pto_verify_datas

    def setup(pto_tensors):
        entry.BuildOnlineManager().build_and_load_calculator()
        pypto_impl.SetVerifyData(_pto_to_tensor_data(pto_tensors), [], _pto_verify_datas.get_data())

    entry.JitCallableWrapper._setup_verify_data = staticmethod(setup)
    tensors = [_torch(a) for a in args]
    here = os.getcwd()
    os.chdir(workdir)
    try:
        pypto.set_verify_options(enable_pass_verify=True)
        kernel(*tensors)
    finally:
        pypto.set_verify_options(enable_pass_verify=False)
        os.chdir(here)
    return tensors[-1].view(torch.int16).numpy().view(ml_dtypes.bfloat16)


@pytest.mark.parametrize("lens", [(70, 40), (32, 1)])
def test_pypto_verify_matches_ptosim_bit_for_bit(lens, tmp_path):
    real = _real_module(tmp_path)
    args = pa.inputs(lens)
    got = _verify(real.paged_attention, [a.copy() for a in args], tmp_path)
    pa.paged_attention(*args)
    np.testing.assert_array_equal(got.view(np.int16), args[-1].view(np.int16))
    np.testing.assert_allclose(got.astype(np.float64), pa.golden(*args[:5]), atol=4e-3, rtol=8e-3)


@pytest.mark.parametrize("lens", [(70, 40), (32, 1)])
def test_pypto_kv_unroll_needs_a_path_for_the_remainder(lens, tmp_path):
    """The kv loop unrolled by [4, 2, 1] verifies (3, 2 and 1 blocks per sequence); ptosim refuses
    [4] alone, for which PyPTO 0.2.0's verifier wrote NaN rows (measured, 8 of 8 rows)."""
    text = SOURCE.read_text().replace("import ptosim as pypto", "import pypto")
    loop = 'for j in pypto.loop(nblk, name="KV_LOOP", idx_name="j"):'
    assert loop in text
    path = tmp_path / "paged_attention_unrolled.py"
    path.write_text(text.replace(loop, loop[:-2] + ", unroll_list=[4, 2, 1]):"))
    spec = importlib.util.spec_from_file_location("paged_attention_unrolled", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    args = pa.inputs(lens)
    got = _verify(module.paged_attention, [a.copy() for a in args], tmp_path).astype(np.float64)
    assert not np.isnan(got).any()
    np.testing.assert_allclose(got, pa.golden(*args[:5]), atol=4e-3, rtol=8e-3)
