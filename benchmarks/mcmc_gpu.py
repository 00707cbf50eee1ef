"""End-to-end MCMC throughput: generations/s of `mcmc nchains=4 nruns=2` through the real interpreter,
CUDA backend vs numpy backend in one run, on simulated DNA (64 taxa x 50k sites, GTR+I+G4) and
protein (40 taxa x 20k sites, WAG+G4) data sets.

Each configuration runs in a fresh subprocess (`mbgpu --backend=gpu|cpu`; the per-chain path, pipeline groups,
host parsimony and asynchronous flushes through the arguments RUNNER passes: they are no settings of a run)
and the rate is measured between the first and the last printed generation, so start-up (data,
kernels, initial state) is not counted; "median" is the median rate over the printed intervals (less
moved by a stall such as a first-use kernel compile or a busy host). The numpy backend runs few generations: it is slow on these
sizes. Configurations (CONFIGS): batched or per-chain ("chain", the code before batching), fp64 or
fp32, with MrBayes' default moves or without ParsSPR ("-nopars"); "gpu-cpupars": ParsSPR's parsimony in numpy
instead of on the GPU (build_runs' gpu_parsimony=False); "gpu-async", "gpu-async-p4": asynchronous flushes
(choose_backend's asynchronous=True; two and four pipeline groups).

    python3 benchmarks/mcmc_gpu.py [--gpu-gens 200] [--cpu-gens 12] [--cases dna,protein]
                                   [--configs gpu,gpu-chain,...] [--scale 1.0] [--profile gpu-nopars]
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

from mbgpu.datatypes import PROTEIN
from mbgpu.models import ModelSpec, build_model
from mbgpu.tree import random_tree

CASES = {
    "dna": dict(n_taxa=64, n_sites=50_000, alphabet="ACGT", lset="lset nst=6 rates=invgamma;", prset="",
                spec=ModelSpec(datatype="dna", nst=6, revmat=(1.0, 4.0, 0.7, 1.2, 3.9, 1.0),
                               statefreqs=(0.3, 0.2, 0.22, 0.28), rates="invgamma", alpha=0.5, pinvar=0.2)),
    "protein": dict(n_taxa=40, n_sites=20_000, alphabet=PROTEIN, lset="lset rates=gamma;",
                    prset="prset aamodelpr=fixed(wag);",
                    spec=ModelSpec(datatype="protein", aamodel="wag", rates="gamma", alpha=0.5)),
}
# label -> (`--backend=`, PartFactory's mode, extra `set` options, ParsSPR in the move mix)
# "chain" = the per-chain path (one backend instance per chain, calls per proposal): the code before batching.
# "-nopars": ParsSPR's weight set to 0 (its parsimony runs on the host and dominates at these sizes).
CONFIGS = {
    "gpu": ("gpu", "batched", "", True),
    "gpu-single": ("gpu", "batched", "beagleprecision=single", True),
    "gpu-chain": ("gpu", "chain", "", True),
    "cpu": ("cpu", "batched", "", True),
    "cpu-chain": ("cpu", "chain", "", True),
    "gpu-nopars": ("gpu", "batched", "", False),
    "gpu-single-nopars": ("gpu", "batched", "beagleprecision=single", False),
    "gpu-chain-nopars": ("gpu", "chain", "", False),
    "cpu-nopars": ("cpu", "batched", "", False),
    "gpu-nopars-p2": ("gpu", "batched", "", False),      # groups=2: two groups, launch overlaps proposals
    "gpu-p2": ("gpu", "batched", "", True),              # the same with MrBayes' default moves
    "gpu-p1": ("gpu", "batched", "", True),              # groups=1: one flush per generation
    "gpu-cpupars": ("gpu", "batched", "", True),         # ParsSPR's parsimony in numpy (gpu_parsimony=False)
    "gpu-async": ("gpu", "batched", "", True),           # asynchronous=True (page-locked flushes, events)
    "gpu-async-p4": ("gpu", "batched", "", True),        # the same with four pipeline groups
}
PIPELINE = {"gpu-nopars-p2": 2, "gpu-p2": 2, "gpu-p1": 1, "gpu-async-p4": 4}   # others: the default (2)
HOST_PARSIMONY = {"gpu-cpupars"}
ASYNC = {"gpu-async", "gpu-async-p4"}
# argv: block, knobs (JSON: pars, sampler, groups, gpu_parsimony, asynchronous), profile file, backend. The
# knobs are arguments of mbgpu's functions (no settings of a run), bound here before the run starts.
RUNNER = """import functools, json, sys
knobs = json.loads(sys.argv[2])
if not knobs["pars"]:
    import mbgpu.moves.pars_spr as m
    m.ParsSPR.weight = 0.0
import mbgpu.likelihood.select as select
import mbgpu.sampler.batch_step as batch_step
import mbgpu.sampler.mc3 as mc3
import mbgpu.sampler.setup as setup
setup.PartFactory = functools.partial(batch_step.PartFactory, mode=knobs["sampler"])
setup.build_runs = functools.partial(setup.build_runs, gpu_parsimony=knobs["gpu_parsimony"])
select.choose_backend = functools.partial(select.choose_backend, asynchronous=knobs["asynchronous"])
if knobs["groups"]:
    mc3.step_generation = functools.partial(batch_step.step_generation, groups=knobs["groups"])
from mbgpu.cli import main
argv = ["--backend=" + sys.argv[4], sys.argv[1]]
if sys.argv[3]:
    import cProfile, pstats
    prof = cProfile.Profile()
    code = prof.runcall(main, argv)
    with open(sys.argv[3], "w") as f:
        pstats.Stats(prof, stream=f).sort_stats("tottime").print_stats(30)
    sys.exit(code)
sys.exit(main(argv))
"""


def simulate(n_taxa: int, n_sites: int, spec: ModelSpec, seed: int) -> np.ndarray:
    """State indices int[n_taxa, n_sites] evolved on a random tree under `spec` (gamma categories, +I)."""
    rng = np.random.default_rng(seed)
    model = build_model(spec)
    tree = random_tree(n_taxa, rng, brlen=lambda g, n: g.exponential(0.08, n))
    s = model.n_states
    cat = rng.choice(model.n_categories, size=n_sites, p=model.category_weights)
    invariant = rng.random(n_sites) < model.pinvar
    states = np.empty((tree.n_nodes, n_sites), dtype=np.int64)
    root = tree.root
    states[root] = rng.choice(s, size=n_sites, p=model.frequencies)
    order = tree.postorder()[::-1]           # parents before children
    for v in order.tolist():
        if v == root:
            continue
        parent = states[tree.parent[v]]
        p = model.eigen.transition_matrices(tree.brlen[v] * model.category_rates)   # (C, S, S)
        cum = np.cumsum(p, axis=2)
        cum /= cum[:, :, -1:]
        u = rng.random(n_sites)
        child = (u[:, None] > cum[cat, parent]).sum(axis=1)
        states[v] = np.where(invariant, parent, np.minimum(child, s - 1))
    return states[:n_taxa]


INTERLEAVE_ABOVE = 60_000      # longer rows are written interleaved: MrBayes 3.2.7a rejects 100k-site lines


def write_nexus(path: str, states: np.ndarray, alphabet: str, datatype: str) -> None:
    """A NEXUS data block of the simulated matrix (interleaved in blocks of 20,000 sites beyond
    INTERLEAVE_ABOVE sites, so MrBayes can read it; shorter matrices are written as before)."""
    table = np.frombuffer(alphabet.encode("ascii"), dtype=np.uint8)
    n_char = states.shape[1]
    step = 20_000 if n_char > INTERLEAVE_ABOVE else n_char
    with open(path, "w", encoding="ascii") as f:
        f.write("#NEXUS\nbegin data;\n  dimensions ntax=%d nchar=%d;\n  format datatype=%s%s;\n  matrix\n"
                % (states.shape[0], n_char, datatype, " interleave=yes" if step < n_char else ""))
        for start in range(0, n_char, step):
            for t, row in enumerate(states):
                f.write("t%d  %s\n" % (t + 1, table[row[start:start + step]].tobytes().decode("ascii")))
            if start + step < n_char:
                f.write("\n")
        f.write("  ;\nend;\n")


def mcmc_block(case: dict, data: str, ngen: int, printfreq: int, extra_set: str) -> str:
    return ("#NEXUS\nbegin mrbayes;\n  set autoclose=yes nowarn=yes seed=11 swapseed=12 %s;\n  execute %s;\n  %s %s\n"
            "  mcmc ngen=%d nchains=4 nruns=2 samplefreq=%d printfreq=%d diagnfreq=%d filename=out;\nend;\n"
            % (extra_set, data, case["lset"], case["prset"], ngen, printfreq, printfreq, max(ngen, 1000)))


GEN_LINE = re.compile(r"^\s+(\d+) -- [\[(]")


def run_config(folder: str, case: dict, data: str, label: str, ngen: int, timeout: float,
               profile: str = "") -> dict:
    """Run one configuration in a subprocess; gen/s between the first and the last printed generation."""
    backend, sampler, extra, pars = CONFIGS[label]
    printfreq = max(1, ngen // 10)
    work = os.path.join(folder, label)
    os.makedirs(work, exist_ok=True)
    block = os.path.join(work, "run.nex")
    with open(block, "w", encoding="ascii") as f:
        f.write(mcmc_block(case, data, ngen, printfreq, extra))
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    knobs = {"pars": pars, "sampler": sampler, "groups": PIPELINE.get(label),
             "gpu_parsimony": label not in HOST_PARSIMONY, "asynchronous": label in ASYNC}
    start = time.time()
    proc = subprocess.Popen([sys.executable, "-c", RUNNER, block, json.dumps(knobs), profile, backend], cwd=work,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    stamps, lines = [], []
    for line in proc.stdout:
        lines.append(line)
        m = GEN_LINE.match(line)
        if m:
            stamps.append((int(m.group(1)), time.time()))
        if time.time() - start > timeout:
            proc.kill()
            lines.append("(stopped after %.0f s)\n" % timeout)
            break
    proc.wait()
    out = "".join(lines)
    if len(stamps) < 2:
        return {"label": label, "error": out[-2000:]}
    (g0, t0), (g1, t1) = stamps[0], stamps[-1]
    best = re.findall(r'"cold" chain of run \d was (-?[\d.]+)', out)
    steps = [(b[0] - a[0]) / (b[1] - a[1]) for a, b in zip(stamps, stamps[1:]) if b[1] > a[1]]
    return {"label": label, "gens": g1 - g0, "rate": (g1 - g0) / (t1 - t0), "wall": time.time() - start,
            "median": float(np.median(steps)) if steps else float("nan"),
            "backend": next((l.strip() for l in lines if l.startswith("Likelihood backend")), "?"),
            "best": best, "patterns": re.findall(r"has (\d+) unique site patterns", out)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpu-gens", type=int, default=200)
    ap.add_argument("--cpu-gens", type=int, default=12)
    ap.add_argument("--cases", default="dna,protein")
    ap.add_argument("--configs", default="gpu,gpu-single,gpu-chain,cpu,gpu-nopars,gpu-chain-nopars,cpu-nopars")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per configuration at most")
    ap.add_argument("--profile", default="", help="also run this configuration under cProfile (FOLDER/CASE-LABEL.prof.txt)")
    ap.add_argument("--profile-cases", default="dna,protein")
    ap.add_argument("--profile-gens", type=int, default=500)
    ap.add_argument("--nopars-factor", type=int, default=5, help="generations x this without ParsSPR")
    ap.add_argument("--scale", type=float, default=1.0, help="multiply the site counts (quick local checks)")
    ap.add_argument("--keep", default=None, help="folder for the data and runs (default: a temporary one)")
    args = ap.parse_args(argv)
    folder = args.keep or tempfile.mkdtemp(prefix="mcmc_gpu_")
    os.makedirs(folder, exist_ok=True)
    print("%-8s %-18s %6s %9s %9s %8s %8s  %s" % ("case", "config", "gens", "gen/s", "median", "vs cpu", "patterns",
                                                  "backend"))
    for name in args.cases.split(","):
        case = CASES[name]
        n_sites = max(100, int(case["n_sites"] * args.scale))
        states = simulate(case["n_taxa"], n_sites, case["spec"], seed=5)
        data = os.path.join(folder, "%s.nex" % name)
        write_nexus(data, states, case["alphabet"], case["spec"].datatype)
        results = []
        for label in args.configs.split(","):
            gens = args.cpu_gens if CONFIGS[label][0] == "cpu" else args.gpu_gens
            gens *= 1 if CONFIGS[label][3] else args.nopars_factor
            results.append(run_config(os.path.join(folder, name), case, data, label, gens, args.timeout))
        for r in results:
            if "error" in r:
                print("%-8s %-18s failed:\n%s" % (name, r["label"], r["error"]))
                continue
            ref = "cpu-nopars" if r["label"].endswith("-nopars") else "cpu"
            cpu = next((x["rate"] for x in results if x["label"] == ref and "rate" in x), None)
            ratio = "%.1fx" % (r["rate"] / cpu) if cpu else "-"
            print("%-8s %-18s %6d %9.1f %9.1f %8s %8s  %s" % (name, r["label"], r["gens"], r["rate"], r["median"], ratio,
                                                      "+".join(r["patterns"]), r["backend"]), flush=True)
        if args.profile and name in args.profile_cases.split(","):
            label = args.profile
            gens = args.profile_gens
            prof = os.path.abspath(os.path.join(folder, "%s-%s.prof.txt" % (name, label)))
            run_config(os.path.join(folder, name, "profile"), case, data, label, gens, 3 * args.timeout, prof)
            print("  profile of %s (cProfile, not timed) in %s" % (label, prof))
        print("  (%d taxa x %d sites; best cold lnL per config: %s)"
              % (case["n_taxa"], n_sites, "; ".join("%s %s" % (r["label"], r.get("best")) for r in results)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
