"""A/B of the host-only harness (benchmarks/host_overhead.py) between two source trees, in one command.

Runs alternate between the trees (each run a fresh process whose PYTHONPATH imports that tree's own
`mbgpu`: benchmarks/source_tree.py) and the median and the per-round ratios are printed: on shared machines single runs
vary by 20-30%, so only figures alternated in one command are compared; the best run of each tree is
printed too (interference from other jobs only ever slows a run down).

    git worktree add /tmp/base HEAD~5        # or: mkdir /tmp/base && git archive REV | tar -x -C /tmp/base
    python3 benchmarks/host_ab.py /tmp/base . [--gens 800] [--rounds 4] [--cases dna,protein]
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from source_tree import import_path  # noqa: E402

LINE = re.compile(r"^(\w+)\s.*gen/s ([\d.]+)", re.M)


def run_tree(tree: str, gens: int, cases: str) -> dict[str, float]:
    """{case: host-only gen/s} of one run of `tree`'s own harness on `tree`'s own code."""
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=import_path(tree))
    out = subprocess.run([sys.executable, os.path.join("benchmarks", "host_overhead.py"), "--gens", str(gens),
                          "--cases", cases], cwd=tree, env=env, capture_output=True, text=True, check=True).stdout
    return {m.group(1): float(m.group(2)) for m in LINE.finditer(out)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--gens", type=int, default=800)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--cases", default="dna,protein")
    args = ap.parse_args(argv)
    got: dict[tuple[str, str], list[float]] = {}
    for r in range(args.rounds):
        order = (args.before, args.after) if r % 2 == 0 else (args.after, args.before)
        for tree in order:
            for case, rate in run_tree(tree, args.gens, args.cases).items():
                got.setdefault((tree, case), []).append(rate)
    for case in args.cases.split(","):
        a, b = got[(args.before, case)], got[(args.after, case)]
        ratios = [y / x for x, y in zip(a, b)]
        print("%-8s before %6.1f  after %6.1f gen/s (medians of %d; best %.1f, %.1f: ratio %.2f)  ratio median %.2f  [%s]"
              % (case, statistics.median(a), statistics.median(b), len(a), max(a), max(b), max(b) / max(a),
                 statistics.median(ratios), " ".join("%.2f" % q for q in ratios)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
