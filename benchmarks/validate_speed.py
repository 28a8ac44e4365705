#!/usr/bin/env python3
"""How long ``pattern-gen validate``'s checks take over the shipped catalogue, against a baseline
measured in the same run: every card expanded on every platform (``SHARE_ACROSS_PLATFORMS`` off)
versus once per group of platforms that answer the expansion's questions alike (on, the default).

Each round loads the catalogue afresh and runs ``check_catalogue`` with one setting, alternating
the two (so a machine busy for a while slows both alike); the table gives the best and median
process-CPU seconds of each, their ratio, the skeleton expansions each ran, and whether the two
reported the same problems.

    python benchmarks/validate_speed.py            # 3 rounds
    python benchmarks/validate_speed.py --rounds 5
"""

from __future__ import annotations

import argparse
import statistics
import time

from pattern_gen.catalogue.catalogue import load_catalogue
from pattern_gen.checks import check_catalogue, flows
from pattern_gen.vocab.resources import package_patterns_dir


def one_run(share: bool) -> tuple[float, int, list[tuple]]:
    calls = 0
    real = flows.expand_skeleton

    def counted(*args, **kwargs):
        nonlocal calls
        calls += 1
        return real(*args, **kwargs)

    flows.SHARE_ACROSS_PLATFORMS, flows.expand_skeleton = share, counted
    try:
        cat = load_catalogue(base=package_patterns_dir())
        start = time.process_time()
        problems = check_catalogue(cat)
        spent = time.process_time() - start
    finally:
        flows.SHARE_ACROSS_PLATFORMS, flows.expand_skeleton = True, real
    return spent, calls, [(p.code, p.message, p.where) for p in problems]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    times: dict[bool, list[float]] = {True: [], False: []}
    calls: dict[bool, int] = {}
    found: dict[bool, list[tuple]] = {}
    for _ in range(args.rounds):
        for share in (False, True):
            spent, calls[share], found[share] = one_run(share)
            times[share].append(spent)
    print(f"{'checks':<28}{'best cpu s':>11}{'median':>9}{'skeleton expansions':>21}")
    for share, name in ((False, "every platform (baseline)"), (True, "shared by answers")):
        print(f"{name:<28}{min(times[share]):>11.2f}{statistics.median(times[share]):>9.2f}{calls[share]:>21}")
    print(f"speed-up (best, baseline / shared): x{min(times[False]) / min(times[True]):.2f}; "
          f"same problems: {found[False] == found[True]} ({len(found[True])} problems)")
    return 0 if found[False] == found[True] else 1


if __name__ == "__main__":
    raise SystemExit(main())
