"""benchmarks/kernel_families.py: every cost rule is classified by the kernel families it was read
from, and every a2a3 manifest instance belongs to exactly one family — so a new rule, or a new kind
of instance, forces a decision before the benchmark splits fit from held out."""

from __future__ import annotations

import importlib.util
import sys
from functools import lru_cache
from pathlib import Path

import pytest

from ptosim.cost.rules import RULES

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("kernel_families", ROOT / "benchmarks" / "kernel_families.py")
kf = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("kernel_families", kf)
_spec.loader.exec_module(kf)


@lru_cache(maxsize=1)
def _a2a3_plans():
    from pattern_gen.catalogue.catalogue import load_catalogue
    from pattern_gen.plan.manifest import load_manifest, to_request
    from pattern_gen.plan.resolver import resolve

    cat = load_catalogue([str(ROOT / "patterns")])
    man = load_manifest(ROOT / "patterns" / "manifest.yaml")
    plans = [resolve(cat, to_request(e)) for e in man.instances if (e.platform or "a2a3") == "a2a3"]
    return cat, plans


def test_every_rule_is_classified_and_names_known_families():
    ids = [r.id for r in RULES]
    assert sorted(kf.RULE_FAMILIES) == sorted(ids), (
        f"unclassified: {sorted(set(ids) - set(kf.RULE_FAMILIES))}; "
        f"no such rule: {sorted(set(kf.RULE_FAMILIES) - set(ids))}")
    for rid, fams in kf.RULE_FAMILIES.items():
        assert isinstance(fams, tuple), rid
        unknown = [f for f in fams if f not in kf.BY_ID]
        assert not unknown, f"{rid} names no family {unknown}"


def test_families_have_unique_ids_and_keys_over_each_skeletons_structure():
    assert len(kf.BY_ID) == len(kf.FAMILIES)
    keys = [f.key() for f in kf.FAMILIES]
    assert len(set(keys)) == len(keys)
    for f in kf.FAMILIES:
        assert f.skeleton in kf.STRUCTURE, f.id
        assert [k for k, _ in f.structure] == sorted(kf.STRUCTURE[f.skeleton]), f"{f.id}: structure keys"
        assert all(name in kf.FEATURES for name in kf.STRUCTURE[f.skeleton])


def test_every_a2a3_manifest_instance_is_in_exactly_one_family():
    cat, plans = _a2a3_plans()
    assert plans
    for plan in plans:
        key = kf.structure_of(cat, plan)
        matches = [f.id for f in kf.FAMILIES if f.key() == key]
        assert len(matches) == 1, f"{plan.name}: {key} matches {matches or 'no family'}"
        assert kf.family_of(cat, plan).id == matches[0]


def test_every_family_has_an_a2a3_manifest_instance():
    cat, plans = _a2a3_plans()
    used = {kf.family_of(cat, p).id for p in plans}
    assert sorted(set(kf.BY_ID) - used) == []


def test_the_split_is_derived_from_the_rules():
    fit = kf.fit_families()
    for f in kf.FAMILIES:
        assert (f.id in fit) == bool(kf.rules_from(f.id))
    assert fit and set(kf.BY_ID) - fit  # both splits have families
    md = kf.markdown()
    assert "unclassified" not in md
    assert all(f"`{r.id}`" in md for r in RULES)


@pytest.mark.parametrize("fid", ["mhc-pre", "norm-linear-ksplit"])
def test_a_family_apart_from_its_skeletons_default_is_not_fit_by_the_defaults_rules(fid):
    """SK-03's rules were read from the plain norm-linear: none of them makes its regime or its K-split
    fit (each is fit by the rules read from its own kernel alone, after its held-out comparison)."""
    own = {"mhc-pre": ["split-k-partials-summed-on-aiv", "column-reduce-through-gm"],
           "norm-linear-ksplit": ["vec-hash-order-viewed-a-first", "l1-hash-classes", "l1-reuse-shared-view-a"]}[fid]
    assert kf.rules_from(fid) == own and kf.rules_from("norm-linear")
    assert not set(kf.rules_from(fid)) & set(kf.rules_from("norm-linear"))
