"""Compare an mbgpu run on sim12_hky_g4 with MrBayes 3.2.7a's long reference run (4 runs x 600k gens).

Runs the reference block's model (HKY+G) with mbgpu (its own seed), then its own sumt/sump, and checks
every clade MrBayes found with probability >= 0.05 is within 0.05 of MrBayes' .tstat value, and the
.pstat means of TL, kappa, alpha and pi are within 3 combined standard errors (MrBayes' SE from its
variance and avgESS x nruns, ours likewise).

    python benchmarks/sim12_compare.py [--ngen 150000] [--nruns 4] [--nchains 1] [--out DIR]
"""
from __future__ import annotations

import argparse
import math
import shutil
import subprocess
import sys
import time
from pathlib import Path

REF = Path(__file__).resolve().parents[2] / "shared" / "data" / "mrbayes" / "reference_runs" / "sim12_hky_g4"


def read_parts(path: Path) -> dict[str, int]:
    out = {}
    for line in path.read_text().splitlines()[2:]:
        ident, pattern = line.split()
        out[ident] = pattern
    return out


def read_tstat(path: Path, parts: dict) -> dict[str, float]:
    out = {}
    for line in path.read_text().splitlines()[2:]:
        f = line.split()
        out[parts[f[0]]] = float(f[2])
    return out


def read_pstat(path: Path) -> dict[str, dict]:
    lines = path.read_text().splitlines()
    head = lines[1].split("\t")
    return {f[0]: dict(zip(head[1:], map(float, f[1:]))) for f in (l.split("\t") for l in lines[2:] if l)}


def run(out: Path, ngen: int, nruns: int, nchains: int, seed: int) -> float:
    out.mkdir(parents=True, exist_ok=True)
    shutil.copy(REF / "sim12_hky_g4.nex", out)
    (out / "run.nex").write_text(
        "#NEXUS\nbegin mrbayes;\n set autoclose=yes nowarn=yes seed=%d swapseed=%d;\n execute sim12_hky_g4.nex;\n"
        " lset nst=2 rates=gamma;\n mcmc ngen=%d nchains=%d nruns=%d samplefreq=100 printfreq=10000 "
        "diagnfreq=10000 filename=ours;\n sumt filename=ours nruns=%d burninfrac=0.25;\n"
        " sump filename=ours nruns=%d burninfrac=0.25;\nend;\n" % (seed, seed + 1, ngen, nchains, nruns, nruns, nruns))
    t = time.time()
    subprocess.run([sys.executable, "-m", "mbgpu", "run.nex"], cwd=out, check=True, stdout=subprocess.DEVNULL)
    return time.time() - t


def compare(out: Path, nruns: int) -> bool:
    ref = read_tstat(REF / "sim12_hky_g4.tstat", read_parts(REF / "sim12_hky_g4.parts"))
    ours = read_tstat(out / "ours.tstat", read_parts(out / "ours.parts"))
    ok = True
    print("clade          MrBayes   mbgpu    diff")
    for pattern, p in sorted(ref.items(), key=lambda kv: -kv[1]):
        if p < 0.05:
            continue
        q = ours.get(pattern, 0.0)
        good = abs(p - q) <= 0.05
        ok &= good
        print("%s  %.4f   %.4f   %+.4f %s" % (pattern, p, q, q - p, "" if good else "  <-- off"))
    rp, op = read_pstat(REF / "sim12_hky_g4.pstat"), read_pstat(out / "ours.pstat")
    print("\nparameter   MrBayes mean    mbgpu mean     z")
    for name in ("TL", "kappa", "alpha", "pi(A)", "pi(C)", "pi(G)", "pi(T)"):
        a, b = rp[name], op[name]
        se = math.sqrt(a["Variance"] / (a["avgESS"] * 4) + b["Variance"] / (b["avgESS"] * nruns))
        z = (b["Mean"] - a["Mean"]) / se
        good = abs(z) <= 3.0
        ok &= good
        print("%-8s  %12.6f  %12.6f  %6.2f %s" % (name, a["Mean"], b["Mean"], z, "" if good else "  <-- off"))
    return ok


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ngen", type=int, default=150_000)
    ap.add_argument("--nruns", type=int, default=4)
    ap.add_argument("--nchains", type=int, default=1)
    ap.add_argument("--seed", type=int, default=2027)
    ap.add_argument("--out", default="build/sim12_compare")
    a = ap.parse_args(argv)
    secs = run(Path(a.out), a.ngen, a.nruns, a.nchains, a.seed)
    print("mbgpu: %d runs x %d chains x %d generations in %.0f s (%.1f gen/s)\n"
          % (a.nruns, a.nchains, a.ngen, secs, a.ngen / secs))
    ok = compare(Path(a.out), a.nruns)
    print("\nresult:", "agree" if ok else "DISAGREE")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
