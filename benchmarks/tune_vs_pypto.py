#!/usr/bin/env python3
"""Does ``pattern-gen tune`` rank configurations as PyPTO 0.2.0's SIM cost model does?

``tune`` ranks the configurations of a request (SK-03 + AT-10 by default) by ptosim's cost model;
this script takes a sample of them spread over the ranking (the winner, the card defaults and
every k-th), writes each for the pypto target, runs PyPTO's SIM at every T of the distribution
(one subprocess per run, as ``costmodel_vs_pypto.py``) and reports

* Spearman's rank correlation of the two weighted times over the sample (goal >= 0.9);
* the regret of the tuner's choice: PyPTO's time of ptosim's winner / PyPTO's best in the sample
  (goal <= 1.1);
* the speed-up of the winner over the card defaults (the baseline of the same run) in both models.

    python benchmarks/tune_vs_pypto.py                         # SK-03 K=1024 N=512, T 1,16,128, 24 configurations
    python benchmarks/tune_vs_pypto.py --dim K=4096 --dim N=1536 --T 1,16,128 --sample 20
    python benchmarks/tune_vs_pypto.py --json benchmarks/data/tune_vs_pypto.json

Without pypto installed it says so and exits 0.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def spearman(a: list[float], b: list[float]) -> float:
    """Spearman's rho with average ranks for ties (Pearson's r of the ranks)."""
    def ranks(x: list[float]) -> np.ndarray:
        order = np.argsort(x, kind="stable")
        r = np.empty(len(x))
        xs = np.asarray(x)[order]
        i = 0
        while i < len(x):
            j = i
            while j + 1 < len(x) and xs[j + 1] == xs[i]:
                j += 1
            r[order[i:j + 1]] = (i + j) / 2 + 1
            i = j + 1
        return r
    ra, rb = ranks(a), ranks(b)
    return float(np.corrcoef(ra, rb)[0, 1])


def sample(ranked: list, n: int, must: list) -> list:
    """``must`` plus configurations spread evenly over the ranking, ``n`` in all."""
    picked = []
    for p in must:
        if all(p is not q for q in picked):
            picked.append(p)
    rest = [p for p in ranked if all(p is not q for q in picked)]
    k = max(0, n - len(picked))
    if k and rest:
        idx = np.linspace(0, len(rest) - 1, num=min(k, len(rest))).round().astype(int)
        picked += [rest[i] for i in dict.fromkeys(idx.tolist())]
    return picked


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--skeleton", default="SK-03")
    ap.add_argument("--atoms", default="AT-10")
    ap.add_argument("--dim", action="append", default=None, metavar="NAME=VALUE")
    ap.add_argument("--T", default="1,16,128")
    ap.add_argument("--sample", type=int, default=24)
    ap.add_argument("--strategy", default="exhaustive", help="the tuner's search for the ranking (exhaustive: all of the sampled space)")
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    if importlib.util.find_spec("pypto") is None:
        print("pypto is not installed: pip install 'pattern-gen[pypto]' to run this benchmark")
        return 0
    from costmodel_vs_pypto import _pypto_instance  # noqa: E402  (the SIM subprocess runner)

    from pattern_gen.catalogue.catalogue import load_catalogue
    from pattern_gen.output.instances import write_instance
    from pattern_gen.plan.kernel_plan import Request
    from pattern_gen.tune.search import tune
    from pattern_gen.tune.weights import parse_T_list

    dims = {k: int(v) for k, v in (d.split("=", 1) for d in (a.dim or ["K=1024", "N=512"]))}
    weights = parse_T_list(a.T)
    cat = load_catalogue([])
    # the exhaustive ranking needs a space it can sweep: the option axis fixed at the card value
    base = Request(skeleton=a.skeleton, atoms=tuple(a.atoms.split(",")), dims=dict(dims),
                   options={"vec_nbuffer_setting": {0: 2}} if a.strategy == "exhaustive" else {})
    t0 = time.perf_counter()
    result = tune(cat, base, weights, strategy=a.strategy, check=1)
    print(f"tune: {len(result.ranked)} configurations ranked in {time.perf_counter() - t0:.1f} s; "
          f"winner {result.space.describe(result.best.config)} x{result.speedup(result.best):.2f}; golden {result.checked}")
    points = sample(result.ranked, a.sample, [result.best, result.default])
    rows = []
    with tempfile.TemporaryDirectory(prefix="pg-tune-pypto-") as work:
        for i, p in enumerate(points):
            req = replace(result.space.request(p.config), target="pypto")
            _plan, folder, _ = write_instance(cat, req, Path(work) / f"c{i}")
            t1 = time.perf_counter()
            pto = {T: (_pypto_instance(folder, T, sys.executable) or {}).get("e2e_us") for T in weights}
            if any(v is None for v in pto.values()):
                print(f"  PyPTO failed on {result.space.describe(p.config)}; left out")
                continue
            pw = sum(result.weights[T] * pto[T] for T in weights)
            rows.append({"configuration": result.space.describe(p.config), "ptosim": p.score, "pypto": pw,
                         "ptosim_us": {str(T): p.us[T] for T in weights}, "pypto_us": {str(T): pto[T] for T in weights},
                         "winner": p is result.best, "default": p is result.default})
            print(f"  {i + 1:2}/{len(points)} {rows[-1]['configuration'][:70]:70} ptosim {p.score:8.2f}  PyPTO {pw:8.2f}  "
                  f"ratio {p.score / pw:5.2f}  ({time.perf_counter() - t1:.0f} s)", flush=True)
    if len(rows) < 3:
        print("too few PyPTO runs to rank")
        return 1
    rho = spearman([r["ptosim"] for r in rows], [r["pypto"] for r in rows])
    best_pypto = min(r["pypto"] for r in rows)
    win = next(r for r in rows if r["winner"])
    default = next(r for r in rows if r["default"])
    regret = win["pypto"] / best_pypto
    pyptos_best = min(rows, key=lambda r: r["pypto"])
    print()
    print(f"configurations compared: {len(rows)} (T {','.join(map(str, weights))}, dims {dims})")
    print(f"Spearman rank correlation ptosim vs PyPTO: {rho:.3f}   (goal >= 0.9)")
    print(f"regret of the tuner's winner on PyPTO: {regret:.3f}   (goal <= 1.1); PyPTO's best: {pyptos_best['configuration']}")
    print(f"winner over the card defaults: ptosim x{default['ptosim'] / win['ptosim']:.2f}, PyPTO x{default['pypto'] / win['pypto']:.2f}")
    if a.json:
        Path(a.json).write_text(json.dumps({"dims": dims, "weights": {str(k): v for k, v in result.weights.items()},
                                            "spearman": rho, "regret": regret, "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
