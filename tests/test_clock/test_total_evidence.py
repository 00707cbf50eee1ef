"""A total-evidence dating analysis in hymfossil.nex's setting against MrBayes 3.2.7a (slow): 16 living
Hymenoptera with morphology and 28S, 6 Mesozoic fossils with morphology only and uniform tip-age
calibrations; morphology Mk(v) + gamma, 28S GTR + gamma, unlinked, rate multipliers; the fossilized
birth-death prior with diversity sampling, an IGR relaxed clock and a lognormal clock rate (hymfossil's priors).

Compared over seeds per program, within Monte Carlo error: the `.p` means (LnL, tree height and length, clock
rate, IGR variance, FBD parameters, the proportion of sampled ancestors, the morphology shape), clade
frequencies of the `.t` files, and the ages (node depth / clock rate) of the clades both programs support."""
from __future__ import annotations

import math
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from mbgpu.output.tfile import read_tfile
from tests.hymfossil_subset import n_morphology, subset
from tests.test_clock.test_chain_sampling import _batch_se
from tests.test_sampler.test_mkv_posterior import TAXA

FOSSILS = {"Gigantoxyelinae": (125, 145), "Undatoma": (145, 152), "Mesolyda": (152, 163),
           "Protosirex": (152, 163), "Cleistogaster": (168, 191), "Symphytopterus": (152, 163)}
SEEDS = range(1, 9)
NGEN = 400000
BURN = 0.2
Z_MAX = 4.5
COLUMNS = ("LnL", "TH{all}", "TL{all}", "clockrate{all}", "igrvar{all}", "net_speciation{all}",
           "relative_extinction{all}", "relative_fossilization{all}", "prop_ancfossil{all}", "alpha{1}")


def commands(seed: int, n_morph: int, n_char: int, ngen: int = NGEN) -> str:
    """hymfossil.nex's model and priors on the subset (tip dates: its uniform fossil-age calibrations; a
    tree-age prior in place of its root and Holometabola calibrations, which lie outside the subset)."""
    ages = " ".join("%s=uniform(%d,%d)" % (f, lo, hi) for f, (lo, hi) in FOSSILS.items())
    return ("#NEXUS\nbegin mrbayes;\n set autoclose=yes nowarn=yes seed=%d swapseed=%d;\n execute te.nex;\n"
            " charset morph = 1-%d; charset gene = %d-%d;\n partition te = 2: morph, gene; set partition=te;\n"
            " lset applyto=(1) coding=variable rates=gamma;\n lset applyto=(2) nst=6 rates=gamma;\n"
            " unlink statefreq=(all) revmat=(all) shape=(all);\n prset applyto=(all) ratepr=variable;\n"
            " prset brlenspr=clock:fossilization speciationpr=exp(20) extinctionpr=beta(1,1) "
            "fossilizationpr=beta(1,1) sampleprob=0.0005 samplestrat=diversity treeagepr=uniform(200,400) "
            "nodeagepr=calibrated clockvarpr=igr igrvarpr=exp(37) clockratepr=lognorm(-7.1,0.5);\n"
            " calibrate %s;\n mcmcp nruns=1 nchains=1 samplefreq=100 printfreq=%d diagnfreq=%d checkpoint=no "
            "filename=x;\n mcmc ngen=%d;\nend;\n" % (seed, seed + 100, n_morph, n_morph + 1, n_char, ages, ngen,
                                                     ngen, ngen))


def _run(who, folder, data: str, text: str, binary) -> tuple:
    """One program's run in its own process: (.p table after burn-in, clade ages by sample)."""
    folder.mkdir(parents=True)
    (folder / "te.nex").write_text(data)
    (folder / "cmd.nex").write_text(text)
    command = [str(binary)] if who == "mb" else [sys.executable, "-m", "mbgpu"]
    done = subprocess.run(command + ["cmd.nex"], cwd=folder, capture_output=True, text=True, timeout=3600,
                          env=dict(os.environ, NUMBA_NUM_THREADS="1"))
    assert done.returncode == 0, (who, done.stdout[-2000:], done.stderr[-2000:])
    lines = (folder / "x.p").read_text().splitlines()[1:]
    rows = np.array([[float(x) for x in ln.split("\t")] for ln in lines[1:]])
    table = {h: rows[int(len(rows) * BURN):, i] for i, h in enumerate(lines[0].split("\t"))}
    return table, _clade_ages(folder / "x.t")


def _clade_ages(path) -> list:
    """Per sampled tree after burn-in, {clade (frozenset of names): age}; age = (height of the tree above
    its youngest tip - distance from the root) / clock rate (the living tips are the youngest, age 0)."""
    tfile = read_tfile(str(path))
    out = []
    for tree in tfile.trees[int(len(tfile.trees) * BURN):]:
        lengths = {bits: x for bits, x in tree.lengths["edges"] if x == x}
        tips = [b for b in lengths if b & (b - 1) == 0]
        above = {b: sum(x for c, x in lengths.items() if c & b == b) for b in lengths}
        height = max(above[t] for t in tips)
        names = {b: frozenset(tfile.taxa[i] for i in range(len(tfile.taxa)) if b >> i & 1) for b in lengths}
        ages = {names[b]: (height - above[b]) / tree.clockrate for b in lengths if b not in tips}
        ages[frozenset(tfile.taxa)] = height / tree.clockrate
        out.append(ages)
    return out


def _z(a: list, b: list) -> tuple:
    """Means over seeds of per-seed samples and z of their difference; each program's error the larger of
    the per-seed batch-means one and the spread of the seeds' means (slow topology moves show there)."""
    def mean_se(runs):
        means = np.array([x.mean() for x in runs])
        batch = math.sqrt(sum(_batch_se(x) ** 2 for x in runs)) / len(runs)
        return means.mean(), max(batch, means.std(ddof=1) / math.sqrt(len(runs)))
    (ma, sa), (mb, sb) = mean_se(a), mean_se(b)
    return ma, mb, (mb - ma) / math.hypot(sa, sb)


@pytest.mark.slow
def test_total_evidence_posterior_equals_mrbayes(shared_data, mb_double, tmp_path):
    data = subset(str(shared_data / "mrbayes" / "hymfossil.nex"), TAXA + tuple(FOSSILS), "28S")
    k = n_morphology(data)
    jobs = [(who, seed) for seed in SEEDS for who in ("mb", "ours")]
    with ThreadPoolExecutor(max(1, len(os.sched_getaffinity(0)))) as pool:
        done = list(pool.map(lambda job: _run(job[0], tmp_path / ("%s%d" % job), data, commands(job[1], k, k + 552),
                                              mb_double), jobs))
    got = {who: [r for (w, _s), r in zip(jobs, done) if w == who] for who in ("mb", "ours")}
    bad = []
    for col in COLUMNS:
        a, b, z = _z(*([t[col] for t, _ in got[w]] for w in ("mb", "ours")))
        print("%-28s MrBayes %10.5g  mbgpu %10.5g  z %5.2f" % (col, a, b, z))
        bad += [col] if abs(z) >= Z_MAX else []
    bad += _check_clades(got)
    assert not bad, bad


def _check_clades(got) -> list:
    """Clade frequencies (per seed; z over the seeds' spread, at least 0.02 per program) and, for the clades
    both programs hold in >= 90% of the samples, the mean age (as _z) and the 95% interval's ends (each seed's
    2.5% and 97.5% points; z over the seeds' spread: the runs sit in different modes of the ages for long)."""
    bad = []
    freq = {w: [_frequencies(run) for _, run in got[w]] for w in got}
    clades = set().union(*(f for w in freq for f in freq[w]))
    for clade in clades:
        per = {w: np.array([f.get(clade, 0.0) for f in freq[w]]) for w in freq}
        se = math.hypot(*(max(0.02, x.std(ddof=1)) / math.sqrt(len(x)) for x in per.values()))
        p, q = per["mb"].mean(), per["ours"].mean()
        if max(p, q) >= 0.05:
            print("clade %-70s MrBayes %.3f  mbgpu %.3f  z %5.2f" % (" ".join(sorted(clade))[:70], p, q, (q - p) / se))
        if abs(q - p) >= Z_MAX * se:
            bad.append(("clade", sorted(clade), p, q))
    pooled = {w: {c: np.mean([f.get(c, 0.0) for f in freq[w]]) for c in clades} for w in freq}
    for clade in sorted((c for c in clades if min(pooled["mb"][c], pooled["ours"][c]) >= 0.9), key=len):
        per = {w: [x for x in (np.array([a[clade] for a in run if clade in a]) for _, run in got[w]) if len(x) >= 100]
               for w in got}
        a, b, z = _z(per["mb"], per["ours"])
        line = "age of %-50s mean MrBayes %6.1f mbgpu %6.1f z %5.2f" % (" ".join(sorted(clade))[:50], a, b, z)
        bad += [("age", sorted(clade), a, b)] if abs(z) >= Z_MAX else []
        for q in (2.5, 97.5):                   # the interval's ends: per seed, z over the seeds' spread
            ends = {w: np.array([np.percentile(x, q) for x in per[w]]) for w in per}
            se = math.hypot(*(x.std(ddof=1) / math.sqrt(len(x)) for x in ends.values()))
            zq = (ends["ours"].mean() - ends["mb"].mean()) / se
            line += "  %4.1f%%: %6.1f %6.1f z %5.2f" % (q, ends["mb"].mean(), ends["ours"].mean(), zq)
            bad += [("age %g%%" % q, sorted(clade), ends["mb"].mean(), ends["ours"].mean())] if abs(zq) >= Z_MAX else []
        print(line)
    return bad


def _frequencies(run: list) -> dict:
    """{clade: fraction of the run's sampled trees that hold it}."""
    counts: dict = {}
    for ages in run:
        for clade in ages:
            counts[clade] = counts.get(clade, 0) + 1
    return {c: k / len(run) for c, k in counts.items()}
