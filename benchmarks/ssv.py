"""SSV filter throughput: GPU cell updates per second (model length x residues) on a generated
protein database, checked against the numpy reference; optionally pyhmmer's SSV on one CPU core.

    python3 benchmarks/ssv.py [--residues 200e6] [--models 100,300,SMC_N] [--cpu-pyhmmer]

Prints a table; the figures go to docs/performance.md.
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from mbgpu.hmm.alphabet import BACKGROUND, PAD
from mbgpu.hmm.fasta import SequenceDB
from mbgpu.hmm.hmmfile import HMM, read_hmms
from mbgpu.hmm.profile import byte_profile
from mbgpu.hmm.reference import ssv_raw
from mbgpu.hmm.scores import finalize_ssv

HMM_DIR = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "aux" / "hmm"


def generated_db(residues: float, seed: int = 2) -> SequenceDB:
    """Random proteins (HMMER background, gamma(2,175) lengths) packed with 4-residue padding."""
    rng = np.random.default_rng(seed)
    n = int(residues / 350 * 1.05) + 1
    lengths = np.maximum(1, rng.gamma(2.0, 175.0, size=n).astype(np.int64))
    lengths = lengths[: int(np.searchsorted(np.cumsum(lengths), residues)) + 1]
    padded = (lengths + 3) // 4 * 4
    offsets = np.concatenate([[0], np.cumsum(padded)[:-1]]).astype(np.int64)
    codes = rng.choice(20, size=int(padded.sum()), p=BACKGROUND / BACKGROUND.sum()).astype(np.uint8)
    tail = np.repeat(offsets + lengths, padded - lengths) + (
        np.arange(int((padded - lengths).sum())) - np.repeat(np.cumsum(padded - lengths) - (padded - lengths),
                                                             padded - lengths))
    codes[tail] = PAD
    return SequenceDB(["g%d" % i for i in range(len(lengths))], lengths, offsets, codes)


def model(spec: str):
    """A model by name from the shared data, or a generated one of length int(spec) (also used
    for SMC_N's M=1142 when the shared data is absent)."""
    if not spec.isdigit() and not (HMM_DIR / ("%s.hmm" % spec)).exists():
        spec = {"SMC_N": "1142", "Pkinase": "260"}.get(spec, spec)
    if spec.isdigit():
        M = int(spec)
        rng = np.random.default_rng(M)
        mat = rng.dirichlet(np.full(20, 0.3), size=M).astype(np.float32)
        return byte_profile(HMM("gen%d" % M, M, mat, -10.0, 0.7))
    return byte_profile(read_hmms(HMM_DIR / ("%s.hmm" % spec))[0])


def copy_bandwidth(dev) -> float:
    """Device-to-device copy rate in bytes/s counting read + write (1 GiB, best of 3)."""
    import pycuda.driver as drv

    n = 1 << 30
    with dev:
        a, b = drv.mem_alloc(n), drv.mem_alloc(n)
        best = 0.0
        for _ in range(3):
            s, e = drv.Event(), drv.Event()
            s.record()
            drv.memcpy_dtod(b, a, n)
            e.record()
            e.synchronize()
            best = max(best, 2 * n / (e.time_since(s) / 1e3))
        a.free(), b.free()
    return best


def gpu_bench(args) -> None:
    import pycuda.driver as drv

    from mbgpu.cuda.context import open_device
    from mbgpu.cuda.ssv import GpuDatabase

    dev = open_device()
    with dev:
        name = dev.device.name()
        sms = dev.device.get_attribute(drv.device_attribute.MULTIPROCESSOR_COUNT)
        clock = dev.device.get_attribute(drv.device_attribute.CLOCK_RATE) * 1e3
    print("device: %s, %d SMs, %.2f GHz; copy bandwidth %.2f TB/s (read+write)"
          % (name, sms, clock / 1e9, copy_bandwidth(dev) / 1e12))
    t0 = time.time()
    db = generated_db(args.residues)
    print("database: %d sequences, %d residues (generated in %.1f s)" % (len(db), db.residues, time.time() - t0))
    small, medium = db.subset(args.check), db.subset(50000)
    gsmall, gmed, gdb = GpuDatabase(dev, small), GpuDatabase(dev, medium), GpuDatabase(dev, db)
    peak = sms * 128 * clock * 2  # one int16x2 add-max per 2 cells, 128 lanes per SM per clock
    print("%-8s %6s %12s %10s %12s %9s %s" % ("model", "M", "residues", "kernel_s", "Gcells/s", "of_peak", "check"))
    start = time.time()
    for spec in args.models.split(","):
        prof = model(spec)
        ref = ssv_raw(prof, small)
        got = gsmall.run(prof)
        L = small.lengths
        a, b = finalize_ssv(prof, got, L), finalize_ssv(prof, ref, L)
        same = np.array_equal(np.isnan(a), np.isnan(b)) and np.array_equal(a[~np.isnan(a)], b[~np.isnan(b)])
        check = "exact(%d seqs)" % len(small) if same else "MISMATCH"
        runs = [(gmed, medium)]
        timing = {}
        gmed.run(prof, timing)
        predicted = prof.M * db.residues / (prof.M * medium.residues / timing["kernel"])
        if time.time() - start + predicted < args.budget:
            runs.append((gdb, db))
        else:
            print("(full database skipped for %s: predicted %.0f s)" % (prof.name, predicted))
        for g, d in runs:
            best = float("inf")
            for _ in range(args.reps):
                g.run(prof, timing)
                best = min(best, timing["kernel"])
            rate = prof.M * d.residues / best
            print("%-8s %6d %12d %10.5f %12.1f %8.1f%% %s" % (prof.name, prof.M, d.residues, best,
                  rate / 1e9, 100 * rate / peak, check))
    gsmall.free(), gmed.free(), gdb.free()


def cpu_pyhmmer(args) -> None:
    """pyhmmer's OptimizedProfile.ssv_filter on one core over the small oracle database."""
    from pyhmmer.easel import Alphabet, SequenceFile
    from pyhmmer.plan7 import HMM as PHMM, Background, Profile
    from pyhmmer.easel import Randomness

    abc = Alphabet.amino()
    with SequenceFile(str(HMM_DIR / "rand200k.fa"), digital=True, alphabet=abc) as fh:
        seqs = list(fh)
    res = sum(len(s) for s in seqs)
    print("pyhmmer ssv_filter, one CPU core of this machine, rand200k (%d residues)" % res)
    for M in (100, 300, 1142):
        hmm = PHMM.sample(abc, M, Randomness(M))
        gm = Profile(M, abc)
        gm.configure(hmm, Background(abc), L=400)
        om = gm.to_optimized()
        dt = float("inf")
        for _ in range(5):
            t0 = time.perf_counter()
            for s in seqs:
                om.L = len(s)
                om.ssv_filter(s)
            dt = min(dt, time.perf_counter() - t0)
        print("  M=%5d  %.3f s  %.1f Gcells/s" % (M, dt, M * res / dt / 1e9))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--residues", type=float, default=200e6)
    p.add_argument("--models", default="100,300,SMC_N,Pkinase")
    p.add_argument("--check", type=int, default=1000, help="sequences checked against numpy")
    p.add_argument("--budget", type=float, default=200.0, help="seconds for all models")
    p.add_argument("--reps", type=int, default=3, help="timed runs per model (best kept)")
    p.add_argument("--cpu-pyhmmer", action="store_true")
    args = p.parse_args()
    if args.cpu_pyhmmer:
        cpu_pyhmmer(args)
    else:
        gpu_bench(args)


if __name__ == "__main__":
    main()
