"""The kernel families of the manifest, and the families each ptosim cost rule was read from.

ptosim's rules (``ptosim.cost.rules.RULES``) say in free text which kernel each was read off
(``read_from``); ptosim never names pattern-gen's skeletons, so the mapping to pattern-gen's
kernels lives here, beside the benchmark that uses it. A *family* is what pattern-gen makes of a
request once the parameters that change the kernel's structure are fixed: the skeleton, the atom
that fills its slot after upgrades (AT-10 with quant_mode=int8_w8a8 is AT-11), the skeleton's
regime, and per skeleton the parameters that add, drop or rewire stages (``STRUCTURE``). Other
parameters (gamma, rsqrt form, bias, output dtype, weight layout, eps, unroll, dims) are variants
within a family.

``costmodel_vs_pypto.py --suite manifest`` calls a case *fit* when a rule was read from its
family and *held out* otherwise, so a family no rule was read from is compared before a rule is
added for it. A new rule must be classified in ``RULE_FAMILIES`` and a new kind of manifest
instance must have a family (tests/benchmarks/test_kernel_families.py).

    python benchmarks/kernel_families.py        # the families and the rules read from each, as markdown
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["BY_ID", "FAMILIES", "FEATURES", "RULE_FAMILIES", "STRUCTURE", "Family", "family_of", "fit_families",
           "markdown", "rules_from", "structure_of"]


@dataclass(frozen=True)
class Family:
    id: str
    skeleton: str
    atom: str  #: the slot's atom after composition and upgrades (the plan's ``atom``)
    structure: tuple[tuple[str, Any], ...]  #: every ``STRUCTURE`` feature of the skeleton, with its value
    about: str  #: one line

    def key(self) -> tuple[str, str, tuple[tuple[str, Any], ...]]:
        return self.skeleton, self.atom, self.structure


def _regime(cat: Any, plan: Any) -> str | None:
    from pattern_gen.plan.regime import select_regime

    reg = select_regime(cat.cards[plan.skeleton], plan.dims, plan.params)
    return reg.name if reg else None


#: how each structural feature is read off a resolved plan (``cat`` is the catalogue)
FEATURES: dict[str, Callable[[Any, Any], Any]] = {
    "regime": _regime,
    "k_split": lambda cat, plan: "AT-22" in plan.cards_used,  # the slot's k_split or a stage's (q_a_proj.k_split)
    "kv_layout": lambda cat, plan: plan.params.get("kv_layout"),
    "quant_mode": lambda cat, plan: plan.params.get("quant_mode"),
    "down_proj": lambda cat, plan: plan.params.get("down_proj"),
    "router": lambda cat, plan: plan.params.get("router"),
    "shared_expert": lambda cat, plan: plan.params.get("shared_expert"),
}

#: per skeleton, the features beside the slot atom that change the kernel's structure
STRUCTURE: dict[str, tuple[str, ...]] = {
    "SK-01": (),
    "SK-02": (),
    "SK-03": ("regime", "k_split"),
    "SK-04": ("kv_layout", "k_split"),
    "SK-05": ("k_split",),
    "SK-06": ("quant_mode", "down_proj"),
    "SK-07": ("router", "shared_expert", "quant_mode"),
}


def _f(fid: str, skeleton: str, atom: str, about: str, **structure: Any) -> Family:
    return Family(fid, skeleton, atom, tuple(sorted(structure.items())), about)


FAMILIES: tuple[Family, ...] = (
    _f("norm-linear", "SK-03", "AT-10", "RMSNorm + BF16 linear projection (any gamma, rsqrt form, bias, rstd, output "
       "dtype, weight layout, unroll)", regime=None, k_split=False),
    _f("norm-linear-int8", "SK-03", "AT-11", "RMSNorm + INT8 W8A8 activation quant + linear + dequant",
       regime=None, k_split=False),
    _f("norm-linear-ksplit", "SK-03", "AT-10", "RMSNorm + linear with K split in two accumulating halves (AT-22)",
       regime=None, k_split=True),
    _f("mhc-pre", "SK-03", "AT-10", "SK-03's mhc_pre regime: K >= 16384, N <= 64, FP32 out; unroll 16, split-K cube "
       "tiles, [K, N] weight left cacheable", regime="mhc_pre", k_split=False),
    _f("mla-prolog", "SK-04", "AT-10", "MLA prolog, DeepSeek-V4 kv layout (q down/up projections, norms, RoPE pairs)",
       kv_layout="v4", k_split=False),
    _f("mla-prolog-int8", "SK-04", "AT-11", "MLA prolog with INT8 W8A8 projections (MLAPrologQuant)",
       kv_layout="v4", k_split=False),
    _f("mla-prolog-v3", "SK-04", "AT-10", "MLA prolog, DeepSeek-V2/V3 kv layout (latent normed into kv, k_pe rotated "
       "into kr, no q norm)", kv_layout="v3", k_split=False),
    _f("mla-prolog-ksplit", "SK-04", "AT-10", "MLA prolog with q_a_proj's K split in two halves (AT-22)",
       kv_layout="v4", k_split=True),
    _f("pre-attention", "SK-05", "AT-10", "fused pre-attention: residual add, RMSNorm, QKV projection, q/k norms, "
       "RoPE, KV cache scatter, attention", k_split=False),
    _f("pre-attention-int8", "SK-05", "AT-11", "fused pre-attention with an INT8 W8A8 QKV projection (dequant "
       "epilogue)", k_split=False),
    _f("paged-flash-attention", "SK-01", "AT-01", "online-softmax flash attention over a paged KV cache"),
    _f("single-pass-attention", "SK-02", "AT-02", "single-pass attention: the whole score row softmaxed at once"),
    _f("ffn", "SK-06", "AT-07", "SwiGLU FFN: gate and up projections, SiLU·mul, down projection",
       quant_mode="none", down_proj=True),
    _f("ffn-int8", "SK-06", "AT-07", "SwiGLU FFN with INT8 W8A8 projections", quant_mode="int8_w8a8", down_proj=True),
    _f("swiglu", "SK-06", "AT-07", "fused SwiGLU without the down projection (upstream's FusedSwiGLU)",
       quant_mode="none", down_proj=False),
    _f("swiglu-int8", "SK-06", "AT-07", "fused SwiGLU without the down projection, INT8 W8A8",
       quant_mode="int8_w8a8", down_proj=False),
    _f("moe-grouped", "SK-07", "AT-15", "MoE block, DeepSeek-V3's grouped sigmoid router, a shared expert",
       router="grouped_sigmoid", shared_expert=True, quant_mode="none"),
    _f("moe-grouped-int8", "SK-07", "AT-15", "MoE block, grouped sigmoid router, a shared expert, INT8 W8A8 experts",
       router="grouped_sigmoid", shared_expert=True, quant_mode="int8_w8a8"),
    _f("moe-softmax", "SK-07", "AT-15", "MoE block, Qwen3-MoE's softmax router, no shared expert",
       router="softmax", shared_expert=False, quant_mode="none"),
)

BY_ID: dict[str, Family] = {f.id: f for f in FAMILIES}

_NORM_LINEAR = ("norm-linear",)
_MLA = ("mla-prolog",)
_PRE = ("pre-attention",)
_FLASH = ("paged-flash-attention",)
_MODEL_WIDE: tuple[str, ...] = ()

#: Per rule id of ``ptosim.cost.rules.RULES``, the families its ``read_from`` names; () for a rule
#: read from PyPTO's model or options rather than from a kernel (model-wide). "RMSNorm + linear" is
#: SK-03's AT-10 (the configs suite's kernel too), "MLA prolog" SK-04 with its default (V4) kv
#: layout, "fused pre-attention" SK-05, "online flash attention over a paged KV cache" SK-01; a
#: quantised kernel is named as such ("INT8").
RULE_FAMILIES: dict[str, tuple[str, ...]] = {
    "tileop-level1-latency": _NORM_LINEAR,
    "tile-op-issue-gap": _NORM_LINEAR,
    "l2-off-in-sim": _FLASH,
    "none-cacheable-bypasses-l2": _MODEL_WIDE,  # PyPTO's cache model (CacheConfig.toml), not measured
    "vec-task-per-row-block": _NORM_LINEAR,
    # the column split read from the FFN's act and an RMSNorm + linear bias epilogue on [64, 128] tiles;
    # a new group at a change of column tiling from the INT8 FFN (dequant / act / requant apart)
    "vec-task-per-column-tile": ("ffn", "ffn-int8", "norm-linear"),
    "cube-task-per-output-tile": _NORM_LINEAR,
    "cube-bias-per-output-tile": ("ffn",),  # SwiGLU FFN with gate and up biases
    "vec-fuse-same-grid-and-stage": _FLASH,
    "vec-fuse-whole-blocks": ("norm-linear-int8",),  # RMSNorm + INT8 activation quant + linear
    "constant-joins-reader": ("mla-prolog-int8",),  # MLA prolog with INT8 activation quant
    "two-argument-reads-alone": _PRE,
    "strided-view-op-alone": _MLA,
    "column-broadcast-joins": ("moe-grouped", "moe-softmax"),  # read from SK-07 after its held-out comparison
    "assembled-pieces-share-task": ("mla-prolog", "pre-attention"),  # RoPE pairs; pre-attention's K and Q halves
    "reshaped-slice-joins-producer": ("pre-attention", "pre-attention-int8"),  # a bias epilogue, or INT8 dequant
    "argument-copy-readers-share-task": _PRE,
    "reshape-task-of-multi-block-result": _MLA,
    "reshape-task-in-unrolled-root": _MLA,
    "copied-view-task": _FLASH + ("single-pass-attention",),  # narrowed after its held-out comparison
    "copied-assemble-per-head": _PRE,
    "scatter-writes-gm": _PRE,
    "vec-split-over-ub": _NORM_LINEAR,
    "vec-nbuffer-merge": _NORM_LINEAR,
    "vec-hash-order-from-end": _NORM_LINEAR,  # with a bias epilogue: a variant of the family
    "vec-hash-order-viewed-a-first": ("norm-linear-ksplit",),  # K=256 N=128; SK-05 and the unsplit linear unmoved
    # RMSNorm + INT8 linear with a dequant epilogue; the INT8 FFN at T=128; the norm tiles of RMSNorm + linear
    "vec-merge-needs-shared-neighbour": ("norm-linear-int8", "ffn-int8") + _NORM_LINEAR,
    "l1-reuse-auto": ("single-pass-attention",),  # 16384 keys: 256 q.k^T tiles per head
    "ready-in-task-id-order": ("single-pass-attention",),  # the seed dims at T=4: q·kᵀ before P·V
    "vec-merge-across-same-hash": ("moe-grouped-int8", "ffn-int8"),  # per-expert tasks; the gate/up dequants
    "l1-reuse-along-m": _NORM_LINEAR,
    "l1-reuse-along-n-static-rows": _PRE,  # pre-attention's phase-2 q·kᵀ
    "l1-keeps-first-and-last-blocks": _NORM_LINEAR,
    "l1-hash-classes": ("norm-linear-ksplit",),  # read after its held-out comparison (x0.83-1.20)
    "l1-reuse-shared-view-a": ("norm-linear-ksplit",),  # checked against the unsplit linear, which it leaves as it was
    "l1-reuse-shared-a": ("ffn", "moe-grouped", "moe-softmax"),  # SK-06 gate/up and SK-07's experts, held out until then
    "cube-nbuffer-merge": _NORM_LINEAR,
    "split-k-partials-summed-on-aiv": ("mhc-pre",),  # SK-03's mhc_pre regime, K=28672 N=24, after its held-out comparison
    "column-reduce-through-gm": ("mhc-pre",),  # SK-03's mhc_pre norm, K=28672 N=24 [8, 2048] tiles; K=16384/20480 held out
    "write-supersedes-covered-write": _PRE,
    "buffer-read-waits-root-writers": _FLASH,
    "later-listed-writer-edge": _PRE,
    "sync-join-from-three": _MODEL_WIDE,  # PyPTO's task topology, the kernel not recorded
    "root-start-sync": _MLA,
    "root-end-sync": _MODEL_WIDE,  # PyPTO's task topology, the kernel not recorded
    "reshape-root-sync": _FLASH,
    "submit-before-loop-device-task": _MODEL_WIDE,  # PyPTO's runtime option semantics
    "device-task-stitch": _NORM_LINEAR,
    "aicpu-schedulers": _MODEL_WIDE,  # PyPTO's AICPU model
    "sync-task-costs-nothing": _MODEL_WIDE,  # PyPTO's AICPU model
    "resolve-end-is-a-step": _NORM_LINEAR,
    "one-next-cycle": _NORM_LINEAR,
    "task-start-steps": _MLA,
}


def structure_of(cat: Any, plan: Any) -> tuple[str, str, tuple[tuple[str, Any], ...]]:
    """A resolved plan's family key: skeleton, slot atom, and its skeleton's structural features."""
    feats = STRUCTURE.get(plan.skeleton, ())
    return plan.skeleton, plan.atom, tuple(sorted((name, FEATURES[name](cat, plan)) for name in feats))


def family_of(cat: Any, plan: Any) -> Family | None:
    """The family of a resolved plan (None: no family has its key — add one)."""
    key = structure_of(cat, plan)
    found = [f for f in FAMILIES if f.key() == key]
    return found[0] if len(found) == 1 else None


def rules_from(family_id: str) -> list[str]:
    """The rule ids read from a family, in ``RULES``'s order."""
    return [rid for rid, fams in RULE_FAMILIES.items() if family_id in fams]


def fit_families() -> set[str]:
    """The families some rule was read from."""
    return {f for fams in RULE_FAMILIES.values() for f in fams}


def markdown() -> str:
    """Per rule, the families it was read from; then per family, whether rules were read from it."""
    from ptosim.cost.rules import RULES

    out = ["| rule | read from (ptosim.cost.rules) | families |", "|---|---|---|"]
    for r in RULES:
        fams = RULE_FAMILIES.get(r.id)
        cell = "**unclassified**" if fams is None else (", ".join(fams) or "— (model-wide)")
        out.append(f"| `{r.id}` | {r.read_from} | {cell} |")
    out += ["", "| family | skeleton + atom | structure | rules read from it | split |", "|---|---|---|---|---|"]
    fit = fit_families()
    for f in FAMILIES:
        struct = ", ".join(f"{k}={v}" for k, v in f.structure) or "—"
        out.append(f"| {f.id} | {f.skeleton} + {f.atom} | {struct} | {len(rules_from(f.id))} | "
                   f"{'fit' if f.id in fit else 'held out'} |")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.stdout.write(markdown())
