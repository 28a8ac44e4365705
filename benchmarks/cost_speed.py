#!/usr/bin/env python3
"""How long and how much memory ptosim's cost estimate takes, per (instance, T) — issue #31 item 6.

Each case runs in a child process: the kernel is recorded once (a ``pattern-gen new`` instance on
ptosim), then ``ptosim.cost.estimate`` is timed and the child's peak RSS read (``ru_maxrss``) before
and after it. The table prints the estimate's time and memory and a ratio against a baseline
measured in the same run:

* ``--against REV``: the same case estimated by ptosim as of git revision REV (its ``src/ptosim``
  extracted with ``git archive`` to a temporary folder; nothing in the work tree changes). The
  ratio is old time / new time (wall, and process CPU time: steadier on a shared machine), and ``same`` says whether the estimates agree bit for bit
  (end-to-end cycles and µs, task counts, per-label µs and task counts).
* without it, the ratio is each case's time over the first case's (the reference case).

    python benchmarks/cost_speed.py                          # all cases
    python benchmarks/cost_speed.py --against ea6e60f        # old vs new, same run
    python benchmarks/cost_speed.py --only SK-05-seed --T 128,512,1024
    python benchmarks/cost_speed.py --save /tmp/est.json     # the estimates, to --check later
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SMALL_TS = (1, 16, 37, 128)
#: (case name, skeleton, atom, dims, Ts)
CASES: list[tuple[str, str, str, dict[str, int], tuple[int, ...]]] = [
    ("SK-05-seed", "SK-05", "AT-10", {}, SMALL_TS + (512, 1024)),
    ("SK-05-small", "SK-05", "AT-10", {"H": 256, "NQ": 4, "NKV": 2, "D": 64, "NB": 16, "BS": 32, "MB": 4}, SMALL_TS),
    ("SK-03-seed", "SK-03", "AT-10", {}, SMALL_TS),
    ("SK-03-small", "SK-03", "AT-10", {"K": 256, "N": 128}, SMALL_TS),
    ("SK-04-seed", "SK-04", "", {}, SMALL_TS),
    ("SK-04-small", "SK-04", "", {"H": 256, "Q": 128, "NH": 4, "D": 64, "DKV": 64, "R": 32}, SMALL_TS),
    ("SK-01-seed", "SK-01", "AT-01", {}, SMALL_TS),
    ("SK-01-small", "SK-01", "AT-01", {"NQ": 4, "NKV": 2, "D": 64, "NB": 16, "BS": 32, "MB": 4}, SMALL_TS),
    ("SK-06-seed", "SK-06", "AT-07", {}, SMALL_TS),
    ("SK-06-small", "SK-06", "AT-07", {"H": 256, "I": 512}, SMALL_TS),
    ("SK-02-seed", "SK-02", "AT-02", {}, SMALL_TS),
    ("SK-07-small", "SK-07", "", {"H": 256, "I": 128, "E": 16, "G": 4, "KG": 2, "K": 4, "IS": 128}, SMALL_TS),
]


def instance(work: Path, name: str, skeleton: str, atom: str, dims: dict[str, int]) -> Path:
    """The instance folder of a case (made once under ``work``)."""
    folder = work / name
    if not (folder / "instance.json").is_file():
        cmd = ["pattern-gen", "new", "--skeleton", skeleton, "--out", str(work), "--name", name, "-q", "--force"]
        cmd += ["--atoms", atom] if atom else []
        for k, v in dims.items():
            cmd += ["--dim", f"{k}={v}"]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return folder


def _rss_mb() -> float:
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(folder: str, T: int) -> None:
    """Record the kernel at T, time the estimate; print one JSON line."""
    from pattern_gen.output.instances import _kernel_attr, call_instance, load_instance_module
    from ptosim import cost

    path = Path(folder)
    kernel, golden = load_instance_module(path, "kernel"), load_instance_module(path, "golden")
    t0 = time.perf_counter()
    call_instance(kernel, "run", call_instance(golden, "make_inputs", T, seed=0))
    record = getattr(kernel, _kernel_attr(kernel)).last_record
    t1 = time.perf_counter()
    rss0 = _rss_mb()
    c1 = time.process_time()
    est = cost.estimate(record)
    s = est.summary()
    t2 = time.perf_counter()
    c2 = time.process_time()
    keep = {k: s[k] for k in ("e2e_us", "cycles", "tasks", "tasks_by_kind", "device_tasks", "roots", "per_label_us",
                              "per_label_tasks", "per_path_us", "l2", "utilization")}
    print(json.dumps({"record_s": t1 - t0, "est_s": t2 - t1, "est_cpu_s": c2 - c1, "rss0_mb": rss0, "rss_mb": _rss_mb(), "summary": keep}))


def run_case(folder: Path, T: int, src: Path | None) -> dict:
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = str(src) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    out = subprocess.run([sys.executable, __file__, "--child", str(folder), str(T)], env=env, check=True,
                         capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def old_source(rev: str, dest: Path) -> Path:
    """``src/ptosim`` as of ``rev``, extracted under ``dest`` (for PYTHONPATH), with that revision's
    platform profiles beside it (ptosim finds ``patterns/platforms`` two folders up from itself)."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "src/ptosim", "patterns/platforms"], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest / "src"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--child", nargs=2, metavar=("FOLDER", "T"), help=argparse.SUPPRESS)
    ap.add_argument("--against", metavar="REV", help="baseline: ptosim as of this git revision, same cases, same run")
    ap.add_argument("--only", help="comma-separated case names (default: all)")
    ap.add_argument("--T", help="comma-separated Ts (default: each case's)")
    ap.add_argument("--work", default=str(Path(tempfile.gettempdir()) / "cost_speed"), help="instance folders (reused)")
    ap.add_argument("--save", help="write the estimates to this JSON file")
    ap.add_argument("--check", help="compare the estimates with this JSON file (from --save)")
    args = ap.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]))
        return 0
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    only = set(args.only.split(",")) if args.only else None
    Ts = tuple(int(t) for t in args.T.split(",")) if args.T else None
    tmp = tempfile.TemporaryDirectory(prefix="cost-speed-old-")
    old = old_source(args.against, Path(tmp.name)) if args.against else None
    saved = json.loads(Path(args.check).read_text()) if args.check else {}
    results: dict[str, dict] = {}
    ref = None
    print(f"{'case':<14}{'T':>6}{'record s':>10}{'est s':>9}{'cpu s':>8}{'est MB':>8}{'peak MB':>9}"
          + (f"{'old s':>9}{'old cpu':>8}{'old MB':>8}{'old/new':>9}{'cpu o/n':>8}{'same':>6}" if old else f"{'ratio':>8}")
          + (f"{'saved':>7}" if saved else "") + "  e2e µs / tasks", flush=True)
    bad = 0
    for name, skeleton, atom, dims, case_ts in CASES:
        if only and name not in only:
            continue
        folder = instance(work, name, skeleton, atom, dims)
        for T in Ts or case_ts:
            key = f"{name}@T{T}"
            new = run_case(folder, T, None)
            results[key] = new["summary"]
            line = (f"{name:<14}{T:>6}{new['record_s']:>10.2f}{new['est_s']:>9.2f}{new['est_cpu_s']:>8.2f}"
                    f"{new['rss_mb'] - new['rss0_mb']:>8.0f}{new['rss_mb']:>9.0f}")
            if old:
                o = run_case(folder, T, old)
                same = o["summary"] == new["summary"]
                bad += not same
                line += (f"{o['est_s']:>9.2f}{o['est_cpu_s']:>8.2f}{o['rss_mb'] - o['rss0_mb']:>8.0f}"
                         f"{o['est_s'] / max(new['est_s'], 1e-9):>9.2f}{o['est_cpu_s'] / max(new['est_cpu_s'], 1e-9):>8.2f}"
                         f"{'yes' if same else 'NO':>6}")
            else:
                ref = ref or new["est_s"]
                line += f"{new['est_s'] / max(ref, 1e-9):>8.2f}"
            if saved:
                ok = saved.get(key) == new["summary"] if key in saved else None
                bad += ok is False
                line += f"{'-' if ok is None else 'yes' if ok else 'NO':>7}"
            print(line + f"  {new['summary']['e2e_us']} / {new['summary']['tasks']}", flush=True)
    if args.save:
        Path(args.save).write_text(json.dumps(results, indent=1, sort_keys=True))
    if old or saved:
        print("estimates identical in every case" if not bad else f"{bad} case(s) DIFFER", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
