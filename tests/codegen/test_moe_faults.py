"""Fault injection for SK-07 (MoE) with AT-15 (expert gating): break ptosim where the router or the
expert loop runs and check that the *generated* golden test fails. Each fault counts how often it
fired, so one that no longer reaches the kernel fails here.

- bias ignored: the score-correction bias not added to the choice scores (DeepSeek-V3 picks with it);
- group mask ignored: every group stays eligible (no group-limited choice);
- k-th expert dropped: the threshold comparison strict (``gt``), so each token keeps top_k - 1 experts;
- weights not normalised: the division by the chosen weights' sum skipped;
- weights by the biased score: the chosen experts weighted by the choice score instead of the sigmoid;
- routing column shifted: expert e weighted by expert e+1's column;
- softmax router without normalisation (Qwen3-MoE instance), and the generic faults: BF16
  accumulation on the Cube, one bad output row.

INT8 W8A8 (quant_mode=int8_w8a8, the grouped instance's form):

- token scale dropped: an expert's gate/up dequant skips x's per-token scale;
- channel scales shifted: expert e dequantised with expert e+1's slice of the stacked scales;
- down scale dropped: an expert's down product dequantised without its channel scale;
- activation codes truncated: the expert's activation quantiser truncates instead of rounding to
  nearest (the codes the tie tolerance allows one step of, only near a boundary);
- shared down scale dropped: the shared expert's down product without its channel scale;
- and the generic faults: wrong cast mode everywhere, BF16 accumulation, one bad output row.
"""

from __future__ import annotations

import pytest

import ptosim
from pattern_gen.plan.test_points import FAST_LANE_MAX_T

from ptosim.cast import CastMode

from .test_fault_injection import (
    Fault,
    _current_label,
    bad_last_row,
    bf16_accumulation,
    failing_T,
    load_generated_test,
    wrong_cast_mode,
)


@pytest.fixture(scope="module")
def folders(instance_factory, small):
    return {
        "grouped": instance_factory("SK-07", "AT-15", dims=small["SK-07"], params={"routed_scaling_factor": 2.5}),
        "softmax": instance_factory("SK-07", "AT-15", dims=small["SK-07"], params={"router": "softmax", "shared_expert": False}),
        "int8": instance_factory(
            "SK-07", "AT-15", dims=small["SK-07"], params={"routed_scaling_factor": 2.5, "quant_mode": "int8_w8a8"}
        ),
    }


def _patch(monkeypatch: pytest.MonkeyPatch, op: str, where: str, change) -> Fault:
    """``ptosim.<op>`` replaced by ``change(original, *args)`` while the kernel's label contains
    ``where`` and ``change`` does not return None."""
    fault = Fault()
    original = getattr(ptosim, op)
    label = _current_label(monkeypatch)

    def patched(*args, **kwargs):
        if where in label[0]:
            out = change(original, *args, **kwargs)
            if out is not None:
                fault.fired += 1
                return out
        return original(*args, **kwargs)

    monkeypatch.setattr(ptosim, op, patched)
    return fault


def _is_row(t) -> bool:
    return isinstance(t, ptosim.Tensor) and t.dim == 2 and t.dims[0] == 1


def bias_ignored(mp):
    return _patch(mp, "add", "gate.scores", lambda add, a, b: a if _is_row(b) else None)


def group_mask_ignored(mp):
    return _patch(mp, "where", "gate.group_mask", lambda where, c, a, b: a)


def kth_expert_dropped(mp, stage="gate.select"):
    return _patch(mp, "ge", stage, lambda ge, a, b: ptosim.gt(a, b))


def weights_not_normalised(mp, stage="gate.select"):
    return _patch(mp, "div", stage, lambda div, a, b: a)


def weights_by_choice_score(mp):
    seen = {}

    def add(original, a, b):  # remember the choice scores c = s + bias
        out = original(a, b)
        seen["c"] = out
        return None

    fault = _patch(mp, "add", "gate.scores", add)
    where_fault = _patch(mp, "where", "gate.select", lambda where, c, a, b: where(c, seen["c"], b) if "c" in seen and not isinstance(b, ptosim.Tensor) else None)
    del fault
    return where_fault


def column_shifted(mp):
    def view(original, t, shape, offsets, *args, **kwargs):
        if list(shape)[1:] == [1] and len(offsets) == 2 and not isinstance(offsets[1], ptosim.SymbolicScalar) and t.dims[1] > 1:
            e = int(offsets[1])
            return original(t, shape, [offsets[0], (e + 1) % t.dims[1]], *args, **kwargs)
        return None

    return _patch(mp, "view", "", view)


def _is_column(t) -> bool:
    return isinstance(t, ptosim.Tensor) and t.dim == 2 and t.dims[1] == 1


def token_scale_dropped(mp):
    return _patch(mp, "mul", "dequant", lambda mul, a, b: a if _is_column(b) else None)


def channel_scales_shifted(mp):
    def view(original, t, shape, offsets, *args, **kwargs):
        if t.dim == 2 and t.dims[0] == 1 and list(shape)[0] == 1:  # a slice of the stacked scales' row
            step = 2 * int(shape[1])  # one expert's gate and up channels
            return original(t, shape, [0, (int(offsets[1]) + step) % int(t.dims[1])], *args, **kwargs)
        return None

    label = _current_label(mp)
    fault = Fault()
    original = ptosim.view

    def patched(t, shape, offsets, *args, **kwargs):
        if label[0] == "dequant":
            out = view(original, t, shape, offsets, *args, **kwargs)
            if out is not None:
                fault.fired += 1
                return out
        return original(t, shape, offsets, *args, **kwargs)

    mp.setattr(ptosim, "view", patched)
    return fault


def down_scale_dropped(mp, stage="combine"):
    return _patch(mp, "mul", stage, lambda mul, a, b: a if _is_row(b) else None)


def activation_codes_truncated(mp):
    def cast(original, t, dtype, mode=CastMode.CAST_NONE, *args, **kwargs):
        if mode == CastMode.CAST_RINT:
            return original(t, dtype, CastMode.CAST_TRUNC, *args, **kwargs)
        return None

    return _patch(mp, "cast", "down_quant", cast)


FAULTS = {
    "bias-ignored": ("grouped", bias_ignored),
    "group-mask-ignored": ("grouped", group_mask_ignored),
    "kth-expert-dropped": ("grouped", kth_expert_dropped),
    "weights-not-normalised": ("grouped", weights_not_normalised),
    "weights-by-choice-score": ("grouped", weights_by_choice_score),
    "routing-column-shifted": ("grouped", column_shifted),
    # the softmax router is one vector stage: its label is the slot's
    "softmax-kth-expert-dropped": ("softmax", lambda mp: kth_expert_dropped(mp, "gate")),
    "softmax-not-normalised": ("softmax", lambda mp: weights_not_normalised(mp, "gate")),
    "bf16-accumulation": ("grouped", bf16_accumulation),
    "bad-last-row": ("softmax", bad_last_row),
    "int8-token-scale-dropped": ("int8", token_scale_dropped),
    "int8-channel-scales-shifted": ("int8", channel_scales_shifted),
    "int8-down-scale-dropped": ("int8", down_scale_dropped),
    "int8-activation-codes-truncated": ("int8", activation_codes_truncated),
    "int8-shared-down-scale-dropped": ("int8", lambda mp: down_scale_dropped(mp, "output")),
    "int8-wrong-cast-mode": ("int8", wrong_cast_mode),
    "int8-bf16-accumulation": ("int8", bf16_accumulation),
    "int8-bad-last-row": ("int8", bad_last_row),
}


@pytest.mark.parametrize("key", ["grouped", "softmax", "int8"])
def test_unpatched_generated_test_passes(folders, key):
    module = load_generated_test(folders[key])
    assert len(module.T_VALUES) >= 3 and len(module.SEEDS) >= 2
    for T in [t for t in module.T_VALUES if t <= FAST_LANE_MAX_T]:
        for seed in module.SEEDS:
            module.test_matches_golden(T, seed)


@pytest.mark.parametrize("fault_name", list(FAULTS))
def test_moe_fault_makes_the_generated_test_fail(folders, monkeypatch, fault_name):
    key, make = FAULTS[fault_name]
    fault = make(monkeypatch)
    failed = failing_T(folders[key])
    assert fault.fired, f"the {fault_name} fault never reached the MoE kernel"
    assert failed, f"the MoE kernel's generated golden test passes with {fault_name} injected"
