"""Morphology under Mkv (`lset coding=variable`, MrBayes' default for standard data) with gamma rates, against
MrBayes 3.2.7a: the posterior means of LnL, TL and the gamma shape over seeds (slow). The runs go through the
compiled core (its Mkv divisions' likelihoods after moves are checked in tests/test_core/test_division.py).

The data are 16 living taxa of hymfossil.nex's morphology (Vilhelmsen's characters; the characters constant
among them dropped). Until session 45 the interpreted sampler kept the Mkv correction's gamma categories at
the start's shape: the shape's posterior then left MrBayes' (this test caught it)."""
from __future__ import annotations

import io
import math
import subprocess

import numpy as np
import pytest

from mbgpu.console import Console
from mbgpu.interpreter import Interpreter
from tests.hymfossil_subset import subset
from tests.test_clock.test_chain_sampling import _batch_se

TAXA = ("Xyela", "Macroxyela", "Tenthredo", "Athalia", "Gilpinia", "Arge", "Cephalcia", "Pamphilius",
        "Megalodontesc", "Cephus", "Syntexis", "Sirex", "Urocerus", "Xiphydria", "Orussus", "Vespidae")
Z_MAX = 4.5


def morphology_subset(hymfossil: str) -> str:
    """A standard-data NEXUS file: TAXA's rows of the morphology block, characters observed in two states or
    more among them (polymorphisms kept, written as MrBayes reads them)."""
    return subset(hymfossil, TAXA)


def _commands(seed: int, ngen: int) -> str:
    return ("#NEXUS\nbegin mrbayes;\n  set autoclose=yes nowarn=yes seed=%d swapseed=%d;\n  execute morph.nex;\n"
            "  lset coding=variable rates=gamma;\n  mcmcp nruns=1 nchains=1 samplefreq=50 printfreq=%d diagnfreq=%d "
            "checkpoint=no filename=x;\n  mcmc ngen=%d;\nend;\n" % (seed, seed + 100, ngen, ngen, ngen))


def _table(path) -> dict:
    lines = path.read_text().splitlines()[1:]
    rows = np.array([[float(x) for x in ln.split("\t")] for ln in lines[1:]])
    rows = rows[len(rows) // 10:]
    return {h: rows[:, i] for i, h in enumerate(lines[0].split("\t"))}


def _run(who, folder, data: str, text: str, binary=None, monkeypatch=None) -> dict:
    folder.mkdir(parents=True)
    (folder / "morph.nex").write_text(data)
    (folder / "cmd.nex").write_text(text)
    if who == "mb":
        done = subprocess.run([str(binary), "cmd.nex"], cwd=folder, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stdout[-2000:]
    else:
        monkeypatch.chdir(folder)
        Interpreter(Console(io.StringIO())).run_file(str(folder / "cmd.nex"))
    return _table(folder / "x.p")


@pytest.mark.slow
def test_posterior_equals_mrbayes(shared_data, mb_double, tmp_path, monkeypatch):
    """4 seeds x 100k generations per program; per-seed batch-means errors combined."""
    data = morphology_subset(str(shared_data / "mrbayes" / "hymfossil.nex"))
    got = {"mb": [], "ours": []}
    for seed in range(1, 5):
        for who in got:
            got[who].append(_run(who, tmp_path / ("%s%d" % (who, seed)), data, _commands(seed, 100000), mb_double,
                                 monkeypatch))
    for col in ("LnL", "TL", "alpha"):
        means = {w: np.mean([t[col].mean() for t in got[w]]) for w in got}
        ses = {w: math.sqrt(sum(_batch_se(t[col]) ** 2 for t in got[w])) / len(got[w]) for w in got}
        z = (means["ours"] - means["mb"]) / math.hypot(ses["ours"], ses["mb"])
        print("%s: MrBayes %.5g, mbgpu %.5g (z %.2f)" % (col, means["mb"], means["ours"], z))
        assert abs(z) < Z_MAX, "%s: MrBayes %.5g, mbgpu %.5g (z %.1f)" % (col, means["mb"], means["ours"], z)
