#!/usr/bin/env python3
"""Does each skeleton's default unroll list hold its own against every single factor at every T?

For SK-03, SK-04 and SK-05 (seed dims unless ``--dim`` overrides), the default ``unroll_list`` and
each of the card's candidates alone (PyPTO appends 1: ``[16]`` runs as ``[16, 1]``) are estimated by
ptosim's cost model at T = 1, 2, 4, …, 1024 and 37, 129, 1000 — the baseline of each T is the best
single factor, measured in the same run. It prints, per T, the paths the default takes, its
estimate, the best single factor's, and the ratio (goal: <= 1.10 everywhere). A single factor
that needs more than ``--max-passes`` loop passes at a T (token by token at 1000 tokens) is not
estimated: it cannot be the best one there, and the cost model needs minutes for it.

    python benchmarks/unroll_lists.py                      # all three skeletons, seed dims
    python benchmarks/unroll_lists.py --skeleton SK-03 --T 1,16,37,128
    python benchmarks/unroll_lists.py --skeleton SK-05 --max-T 256   # SK-05's attention grows with T^2

Runs share ptosim runs where a list takes the same paths as another (``tune.evaluate``).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from pattern_gen.catalogue.catalogue import load_catalogue
from pattern_gen.plan.kernel_plan import Request
from pattern_gen.plan.resolver import resolve
from pattern_gen.plan.unroll import describe_paths, list_key, path_counts
from pattern_gen.tune.evaluate import Evaluator
from pattern_gen.tune.space import tuning_space

DEFAULT_TS = (1, 2, 4, 8, 16, 32, 37, 64, 128, 129, 256, 512, 1000, 1024)
SKELETONS = {"SK-03": "AT-10", "SK-04": "AT-10", "SK-05": "AT-10"}
GOAL = 1.10


def bench(cat, skeleton: str, atom: str, dims: dict[str, int], Ts: list[int], max_passes: int, jobs: int, unroll: str | None = None) -> dict:
    params = {"unroll": unroll} if unroll else {}
    plan = resolve(cat, Request(skeleton=skeleton, atoms=(atom,), dims=dims, params=params))
    space = tuning_space(plan, cat.card(skeleton).loop.candidates, all_unrolls=True)
    configs = [space.default.with_pick(0, i) for i in range(len(space.axes[0].choices))]
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-unroll-") as work:
        # one evaluator per T: a single factor too slow at one T stays in the race at the others
        for T in Ts:
            fits = [c for c in configs if sum(n for _, n in path_counts(T, space.unroll(c))) <= max_passes]
            with Evaluator(cat, space, {T: 1.0}, Path(work) / f"T{T}", jobs=jobs) as ev:
                points = {space.unroll(p.config): p for p in ev.evaluate(fits, bound=False)}
            default = points[plan.unroll]
            singles = {u: p for u, p in points.items() if len(u) <= 2 and p.ok}
            best_u, best = min(singles.items(), key=lambda kv: kv[1].us[T])
            ratio = default.us[T] / best.us[T]
            rows.append({"T": T, "paths": describe_paths(T, plan.unroll), "default_us": default.us[T], "best_single": best_u[0],
                         "best_single_us": best.us[T], "ratio": ratio, "tasks": default.tasks[T]})
            print(f"  {skeleton} T={T:5d}  default {default.us[T]:9.2f} µs ({describe_paths(T, plan.unroll)[len(f'T={T}: '):]})"
                  f"  best single [{best_u[0]}] {best.us[T]:9.2f} µs  ratio {ratio:5.3f}{'' if ratio <= GOAL else '  > goal'}", flush=True)
    return {"skeleton": skeleton, "dims": plan.dims, "default": list_key(plan.unroll), "rows": rows,
            "worst_ratio": max(r["ratio"] for r in rows)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--skeleton", action="append", choices=sorted(SKELETONS), help="repeatable; default: all three")
    ap.add_argument("--dim", action="append", default=[], help="NAME=VALUE, for every skeleton that has the dim")
    ap.add_argument("--T", default=",".join(map(str, DEFAULT_TS)))
    ap.add_argument("--max-T", type=int, default=None, help="skip larger T (SK-05's attention phase makes T=1024 minutes)")
    ap.add_argument("--max-passes", type=int, default=256)
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("--unroll", default=None, help="a list to measure instead of the card's default (128,32,16,8)")
    ap.add_argument("--json", type=Path, default=None, help="write the figures here")
    args = ap.parse_args()
    cat = load_catalogue([])
    Ts = [int(t) for t in args.T.split(",") if not args.max_T or int(t) <= args.max_T]
    overrides = dict(d.split("=", 1) for d in args.dim)
    results = []
    for skeleton in args.skeleton or list(SKELETONS):
        card = cat.card(skeleton)
        dims = {k: int(v) for k, v in overrides.items() if k in card.dims}
        started = time.perf_counter()
        print(f"{skeleton}: unroll_list {args.unroll or list(card.loop.default_list())}", flush=True)
        res = bench(cat, skeleton, SKELETONS[skeleton], dims, Ts, args.max_passes, args.jobs, args.unroll)
        res["seconds"] = round(time.perf_counter() - started, 1)
        results.append(res)
        print(f"{skeleton}: worst default / best single = {res['worst_ratio']:.3f} (goal <= {GOAL}); {res['seconds']} s", flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    return 0 if all(r["worst_ratio"] <= GOAL for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
