"""The golden sweep: every parameter value of every skeleton, one at a time around the defaults,
generated at the skeleton's default (seed) dims and run against its golden at the test's token
counts with several seeds.

``validate`` proves every combination is *legal*; this proves each value is *right*: a variation
whose kernel and golden disagree (SK-04 with ``has_gamma=false`` failed at T=9 with seed 0 while the
manifest only held it at small dims) is found by the project, not by a user.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Sequence

from ..catalogue.catalogue import Catalogue
from ..plan.kernel_plan import Request
from ..plan.resolver import DEFAULT_PLATFORM, resolve
from ..plan.test_points import SEEDS, test_values
from ..vocab.errors import PatternGenError
from ..vocab.text import yaml_word
from .instances import run_instance, write_instance

__all__ = ["Variation", "VariationResult", "variations", "run_variation", "SWEEP_MAX_T", "SWEEP_SEEDS"]

#: token counts above this are left to the manifest's instances (the sweep runs every parameter
#: value at the seed dims, where SK-05's phase 2 grows with T²: its T = 512 case alone takes ~10 s)
SWEEP_MAX_T = 300


@dataclass(frozen=True)
class Variation:
    """One request of the sweep: a skeleton and slot atom with at most one parameter changed."""

    skeleton: str
    atom: str
    param: str | None = None
    value: Any = None
    platform: str | None = None  #: None: the default; set where only another platform has the value
    #: a second change the value cannot go without (mxfp8 on SK-04 needs weight_layout=nk)
    companion: tuple[str, Any] | None = None

    @property
    def label(self) -> str:
        change = f" {self.param}={yaml_word(self.value)}" if self.param else " (defaults)"
        if self.companion:
            change += f" {self.companion[0]}={yaml_word(self.companion[1])}"
        return f"{self.skeleton} {self.atom}{change}" + (f" on {self.platform}" if self.platform else "")

    def request(self) -> Request:
        params = {self.param: self.value} if self.param else {}
        if self.companion:
            params[self.companion[0]] = self.companion[1]
        return Request(skeleton=self.skeleton, atoms=(self.atom,), params=params, platform=self.platform)


@dataclass
class VariationResult:
    variation: Variation
    refused: str = ""  #: the resolver's reason, when the variation is not a kernel on the default platform
    failures: list[str] = field(default_factory=list)  #: "T=…, seed=…: output: FAIL — …"
    runs: int = 0

    @property
    def passed(self) -> bool:
        return not self.failures


def variations(cat: Catalogue, skeletons: Sequence[str] = ()) -> Iterator[Variation]:
    """The defaults (on every platform), then each other value of each enumerable parameter and each
    unroll candidate, for every slot atom of every skeleton (or of ``skeletons``); a variation that resolves to a
    kernel already listed (AT-10 with int8_w8a8 is AT-11) is listed once."""
    seen: set[str] = set()
    for v in _candidates(cat, skeletons):
        if v.platform is not None:  # the defaults on another platform: there or nowhere
            yield v
            continue
        resolved = _on_a_platform_that_has_it(cat, v)
        if resolved is None:
            if not _refused_by_a_card(cat, v):
                yield v  # refused everywhere, and no card says so: run_variation reports why
            continue
        v, name = resolved
        if name not in seen:
            seen.add(name)
            yield v


def _on_a_platform_that_has_it(cat: Catalogue, v: Variation) -> tuple[Variation, str] | None:
    """The variation on the default platform, else on the first other one that can build it (mxfp8
    needs the Ascend 950), else with the first single other parameter change that makes it a kernel
    (mxfp8's block scales need an [N, K] weight), with its instance name."""
    for companion in [None] + list(_companions(cat, v)):
        for platform in [None] + sorted(p for p in cat.platforms):
            candidate = Variation(v.skeleton, v.atom, v.param, v.value, platform, companion)
            try:
                return candidate, resolve(cat, candidate.request()).name
            except PatternGenError:
                continue
    return None


def _refused_by_a_card(cat: Catalogue, v: Variation) -> bool:
    """Whether the variation is one a card's ``refuse:`` rule names (AT-11 with k_split=true: AT-09
    refuses a quantised K split): not a kernel by the cards' own statement, so nothing to sweep."""
    try:
        resolve(cat, v.request())
    except PatternGenError as exc:
        return exc.refused_by is not None
    return False


def _companions(cat: Catalogue, v: Variation) -> Iterator[tuple[str, Any]]:
    if v.param is None:
        return
    for name, spec in cat.slot_specs(cat.card(v.skeleton), v.atom).items():
        if name != v.param:  # the default too: stated, it overrides a value the skeleton's call pins
            for value in spec.valid_values or []:
                yield name, value


def _candidates(cat: Catalogue, skeletons: Sequence[str]) -> Iterator[Variation]:
    for sk in cat.skeletons():
        if skeletons and sk.id not in skeletons:
            continue
        slot = next(iter(sk.slots.values()))
        for platform in sorted(p for p in cat.platforms if p != DEFAULT_PLATFORM):
            yield Variation(sk.id, slot.default, platform=platform)  # every platform builds the defaults
        for atom in cat.slot_atoms(sk):
            yield Variation(sk.id, atom.id)
            for name, spec in cat.slot_specs(sk, atom.id).items():
                for value in spec.valid_values or []:
                    if value != spec.default:
                        yield Variation(sk.id, atom.id, name, value)
            for u in sk.loop.candidates:  # each factor alone (the default list takes them together)
                if (u, 1) != sk.loop.default_list() and (u,) != sk.loop.default_list():
                    yield Variation(sk.id, atom.id, "unroll", u)


#: one seed per token count, one the generated tests do not use: the sweep adds draws, not repeats
SWEEP_SEEDS: tuple[int, ...] = (max(SEEDS) + 1,)


def run_variation(cat: Catalogue, variation: Variation, seeds: Sequence[int] = SWEEP_SEEDS, max_T: int = SWEEP_MAX_T) -> VariationResult:
    """Generate the variation into a temporary folder and run its golden at every test T up to
    ``max_T`` with each seed."""
    result = VariationResult(variation)
    try:
        plan = resolve(cat, variation.request())
    except PatternGenError as exc:
        result.refused = "; ".join(p.message for p in exc.problems)
        return result
    with tempfile.TemporaryDirectory(prefix="pattern-gen-sweep-") as tmp:
        _, folder, _ = write_instance(cat, variation.request(), Path(tmp))
        for T in [t for t in test_values(plan.unroll) if t <= max_T]:
            for seed in seeds:
                run = run_instance(folder, T=T, seed=seed, estimate=False)
                result.runs += 1
                if not run.passed:
                    messages = [o["message"] for o in run.outputs.values() if not o["passed"]] or [run.error]
                    result.failures += [f"T={T}, seed={seed}: {m}" for m in messages]
    return result
