"""The AT-04 reference of the goldens (``golden/atoms.py: rope``) against float64 rotation math."""

from __future__ import annotations

import importlib.util

import ml_dtypes
import numpy as np
import pytest

from pattern_gen.emit.render import GOLDEN


def _atoms():
    spec = importlib.util.spec_from_file_location("golden_atoms_for_rope", GOLDEN / "atoms.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


ATOMS = _atoms()


def _pairs64(x, cos, sin, r):
    """DeepSeek's interleaved form in float64: rotate_half over pairs, r[2i] = -x[2i+1],
    r[2i+1] = x[2i]; out = x*cos + r*sin on the last r dims."""
    x = x.astype(np.float64)
    c, s = cos.astype(np.float64)[:, None, :], sin.astype(np.float64)[:, None, :]
    d = x.shape[-1]
    part = x[..., d - r:]
    rot = np.empty_like(part)
    rot[..., 0::2], rot[..., 1::2] = -part[..., 1::2], part[..., 0::2]
    return np.concatenate([x[..., : d - r], part * c + rot * s], axis=-1)


@pytest.mark.parametrize(("d", "r"), [(64, 64), (512, 64), (128, 32)])
def test_interleaved_rope_is_deepseeks_rotate_half_of_pairs(d, r):
    rng = np.random.default_rng(7 * d + r)
    x = rng.standard_normal((4, 2, d)).astype(np.float32)
    cos, sin = ATOMS.rope_angles(rng, 4, r)
    got = ATOMS.rope(x, cos, sin, partial=r < d, interleaved=True)
    want = _pairs64(x, cos.astype(np.float32), sin.astype(np.float32), r)
    np.testing.assert_allclose(got, want, rtol=0, atol=4 * np.finfo(np.float32).eps * np.abs(x).max())
    assert not np.allclose(got, ATOMS.rope(x, cos, sin, partial=r < d))  # the two variants differ


def _rotated64(x, cos, sin, r):
    """Each pair (x[i], x[i + r/2]) of the last r dims rotated by its own angles, in float64."""
    x = x.astype(np.float64)
    c, s = cos.astype(np.float64)[:, None, :], sin.astype(np.float64)[:, None, :]
    d, h = x.shape[-1], r // 2
    lo, hi = x[..., d - r:d - h], x[..., d - h:]
    return np.concatenate([x[..., :d - r], lo * c[..., :h] - hi * s[..., :h], hi * c[..., h:] + lo * s[..., h:]], axis=-1)


@pytest.mark.parametrize(("d", "r"), [(64, 64), (128, 128), (512, 64)])
def test_rope_is_the_rotation_to_fp32_precision(d, r):
    rng = np.random.default_rng(d + r)
    x = rng.standard_normal((5, 3, d)).astype(np.float32)
    cos, sin = ATOMS.rope_angles(rng, 5, r)
    got = ATOMS.rope(x, cos, sin, partial=r < d)
    want = _rotated64(x, cos.astype(np.float32), sin.astype(np.float32), r)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=0, atol=4 * np.finfo(np.float32).eps * np.abs(x).max())
    np.testing.assert_array_equal(got[..., : d - r], x[..., : d - r])  # the unrotated part passes through


def test_rope_of_unit_angles_is_the_identity_and_a_quarter_turn_swaps_the_halves():
    x = np.arange(2 * 2 * 8, dtype=np.float32).reshape(2, 2, 8)
    ones, zeros = np.ones((2, 8), ml_dtypes.bfloat16), np.zeros((2, 8), ml_dtypes.bfloat16)
    np.testing.assert_array_equal(ATOMS.rope(x, ones, zeros), x)
    quarter = ATOMS.rope(x, zeros, ones)  # cos 0, sin 1: o1 = -r, o2 = l
    np.testing.assert_array_equal(quarter, np.concatenate([-x[..., 4:], x[..., :4]], axis=-1))


def test_the_golden_angles_differ_per_element():
    cos, sin = ATOMS.rope_angles(np.random.default_rng(0), 4, 64)
    c = cos.astype(np.float32)
    assert not np.array_equal(c[:, :32], c[:, 32:]) and not np.array_equal(c, sin.astype(np.float32))
    np.testing.assert_allclose(c**2 + sin.astype(np.float32) ** 2, 1.0, atol=2e-2)  # BF16 cos/sin of one angle
