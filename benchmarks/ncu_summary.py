"""Per-kernel durations and DRAM traffic of a run profiled by Nsight Compute: the device's side of a
GPU generation, launch by launch, without the host's gaps.

    ncu --clock-control none --csv --print-units base --metrics gpu__time_duration.sum,dram__bytes.sum \
        -k regex:'update_partials_jobs|root_lnl|transition_matrices' --launch-skip 600 --launch-count 600 \
        python3 benchmarks/core_gpu_profile.py --data dna64x50k --ngen 300 > ncu.csv
    python3 benchmarks/ncu_summary.py ncu.csv [--bandwidth 3020]

Prints, per kernel: launches, median and mean duration (us), mean DRAM bytes (MB) and GB/s over its
own time, and the share of the device time; then the sum over all launches against the bytes moved.
"""
from __future__ import annotations

import argparse
import csv
import statistics
import sys
from collections import defaultdict


def read(path: str) -> dict:
    """{kernel name: [(duration s, dram bytes)]} from ncu's --csv --print-units base output."""
    rows: dict = defaultdict(dict)
    with open(path, newline="") as f:
        lines = [ln for ln in f if ln.startswith('"')]          # ncu's own '==PROF==' lines are dropped
    for r in csv.DictReader(lines):
        key = (r["ID"], r["Kernel Name"].split("(")[0])
        value = float(r["Metric Value"].replace(",", ""))
        rows[key][r["Metric Name"]] = value
    out: dict = defaultdict(list)
    for (_id, name), m in rows.items():
        out[name].append((m.get("gpu__time_duration.sum", 0.0) * 1e-9, m.get("dram__bytes.sum", 0.0)))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv")
    ap.add_argument("--bandwidth", type=float, default=3020.0, help="measured copy bandwidth, GB/s")
    args = ap.parse_args(argv)
    kernels = read(args.csv)
    if not kernels:
        print("no kernel rows in %s" % args.csv)
        return 1
    total_t = sum(t for runs in kernels.values() for t, _b in runs)
    total_b = sum(b for runs in kernels.values() for _t, b in runs)
    print("%-22s %8s %10s %10s %10s %8s %7s" % ("kernel", "launches", "median us", "mean us", "mean MB", "GB/s",
                                               "share"))
    for name, runs in sorted(kernels.items(), key=lambda kv: -sum(t for t, _b in kv[1])):
        ts = [t for t, _b in runs]
        bs = [b for _t, b in runs]
        print("%-22s %8d %10.1f %10.1f %10.2f %8.0f %6.1f%%" % (
            name, len(runs), 1e6 * statistics.median(ts), 1e6 * statistics.mean(ts), statistics.mean(bs) / 1e6,
            sum(bs) / sum(ts) / 1e9, 100 * sum(ts) / total_t))
    print("all: %.1f ms on the device, %.1f MB moved: %.0f GB/s, %.1f%% of %.0f GB/s"
          % (1e3 * total_t, total_b / 1e6, total_b / total_t / 1e9, 100 * total_b / total_t / 1e9 / args.bandwidth,
             args.bandwidth))
    return 0


if __name__ == "__main__":
    sys.exit(main())
