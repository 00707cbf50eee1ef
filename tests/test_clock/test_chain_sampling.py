"""The clock sampler against mb-double, run for run: the prior (`mcmc data=no`) and the posterior (primates
under HKY+G) of a clock tree, from the same start tree, compared column by column of the `.p` files (tree
height, tree length, clock rate, tree-prior parameters, LnL) and by clade frequencies of the `.t` files,
each within Monte Carlo error (batch means of both runs). The issue's second and third "done when" for
the strict clock under the uniform, birth-death and coalescent priors, with calibrations and tip dates."""
from __future__ import annotations

import math
import shutil
import subprocess

import numpy as np
import pytest

from mbgpu.output.tfile import read_tfile
from tests.helpers import interp_for
from tests.test_clock.gen0 import SETUP
from tests.test_clock.trees import DATA, T1, T2, T4

APES = "taxset apes = Homo_sapiens Pan Gorilla Pongo Hylobates; constraint apes = apes;"
UNIFORM = "prset brlenspr=clock:uniform"
Z_MAX = 4.5          # |difference of means| / its batch-means standard error
BATCHES = 25

# name -> (commands, start tree, generations, columns compared)
PRIOR = {
    "uniform_gamma_age": (SETUP + UNIFORM + " treeagepr=gamma(0.5,0.2);", T1, 60000, ("TH", "TL")),
    "birthdeath": (SETUP + "prset brlenspr=clock:birthdeath speciationpr=exponential(5) extinctionpr=beta(2,2);",
                   T2, 60000, ("TH", "TL", "net_speciation", "relative_extinction")),
    "coalescence": (SETUP + "prset brlenspr=clock:coalescence popsizepr=gamma(2,20);", T2, 60000,
                    ("TH", "TL", "popsize")),
    "calibrated_free_rate": (SETUP + APES + UNIFORM + " topologypr=constraints(apes) nodeagepr=calibrated "
                             "clockratepr=lognormal(0,0.5) treeagepr=uniform(0.5,1); calibrate apes=uniform(0.15,0.3);",
                             T1, 60000, ("TH", "TL", "clockrate")),
    # tip dates with a free rate mix too slowly in both programs for 60k generations (a fixed tip date pins
    # the ridge of age x rate): a uniform date on each dated tip and a tree-age prior that bounds the root
    "tip_dates": (SETUP + UNIFORM + " nodeagepr=calibrated treeagepr=uniform(0.55,0.8); calibrate "
                  "Tarsius_syrichta=uniform(0.05,0.15) Lemur_catta=uniform(0.02,0.08);", T4, 60000, ("TH", "TL")),
}
POSTERIOR = {
    # without calibrations a free clock rate only trades against the tree age (a ridge both programs cross
    # slowly): the rate is fixed here, and free in the calibrated case below
    "hky_uniform": ("lset nst=2 rates=gamma; " + UNIFORM + ";", T1, 100000, ("LnL", "TH", "TL", "kappa", "alpha")),
    # two heated chains: the prior is heated too (MrBayes); a calibrated clade under birth-death
    "birthdeath_calibrated_heated": ("mcmcp nchains=2; lset nst=2; " + APES + " prset brlenspr=clock:birthdeath "
                                     "topologypr=constraints(apes) nodeagepr=calibrated clockratepr=lognormal(-2,1); "
                                     "calibrate apes=offsetexponential(0.5,1);", T1, 60000,
                                     ("LnL", "TH", "TL", "kappa", "clockrate", "net_speciation",
                                      "relative_extinction")),
}


def _file(commands: str, newick: str, ngen: int, data: bool) -> str:
    return ("#NEXUS\nbegin mrbayes; set seed=7 swapseed=7; execute primates.nex; end;\n"
            "begin trees; tree t1 = [&R] %s\nend;\nbegin mrbayes; mcmcp nchains=1; %s startvals tau=t1 v=t1;\n"
            "mcmc ngen=%d samplefreq=20 printfreq=%d nruns=1 mcmcdiagn=no checkpoint=no %sfilename=x;\n"
            "end;\n" % (newick, commands, ngen, ngen, "" if data else "data=no "))


def _runs(tmp_path, monkeypatch, mb_double, commands, newick, ngen, data, matrix=DATA):
    """Both programs' .p tables ({column: samples after 10% burn-in}) and .t files (`matrix`: the primates
    file to run on). Under fossil-sampling shifts MrBayes' header has one name more than its rows (an empty
    name before relative_fossilization_1..s+1): names go to the values in order, the last one left without."""
    text = _file(commands, newick, ngen, data)
    out = {}
    for who in ("mb", "ours"):
        folder = tmp_path / who
        folder.mkdir()
        shutil.copy(matrix, folder / "primates.nex")
        if who == "mb":
            (folder / "cmd.nex").write_text(text)
            done = subprocess.run([str(mb_double), "cmd.nex"], cwd=folder, capture_output=True, text=True, timeout=600)
            assert done.returncode == 0, done.stdout[-2000:]
        else:
            monkeypatch.chdir(folder)
            interp_for(text, folder, "cmd.nex")
        lines = (folder / "x.p").read_text().splitlines()[1:]
        rows = np.array([[float(x) for x in ln.split("\t")] for ln in lines[1:]])
        rows = rows[len(rows) // 10:]
        out[who] = ({h: rows[:, i] for i, h in zip(range(rows.shape[1]), lines[0].split("\t"))}, folder / "x.t")
    return out


def _batch_se(x: np.ndarray) -> float:
    n = len(x) // BATCHES
    means = x[:n * BATCHES].reshape(BATCHES, n).mean(axis=1)
    return float(means.std(ddof=1) / math.sqrt(BATCHES))


def _check_means(out, columns) -> None:
    for col in columns:
        a, b = out["mb"][0][col], out["ours"][0][col]
        se = math.hypot(_batch_se(a), _batch_se(b))
        z = (a.mean() - b.mean()) / se
        assert abs(z) < Z_MAX, "%s: MrBayes %.5g, mbgpu %.5g (se %.3g, z %.1f)" % (col, a.mean(), b.mean(), se, z)


def _clades(path, burn: float = 0.1) -> dict:
    """Frequencies of the clades (frozensets of tip names) of a rooted .t file's trees after burn-in."""
    tfile = read_tfile(str(path))
    samples = tfile.trees[int(len(tfile.trees) * burn):]
    counts: dict = {}
    for sample in samples:
        for clade in _tree_clades(sample.topology):
            counts[clade] = counts.get(clade, 0) + 1
    return {c: k / len(samples) for c, k in counts.items()}, len(samples)


def _tree_clades(node) -> list:
    out = []

    def walk(x):
        if isinstance(x, tuple):
            tips = frozenset().union(*(walk(c) for c in x))
            out.append(tips)
            return tips
        return frozenset([x])

    walk(node)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(PRIOR))
def test_prior_sampling_equals_mrbayes(case, mb_double, tmp_path, monkeypatch):
    commands, newick, ngen, columns = PRIOR[case]
    out = _runs(tmp_path, monkeypatch, mb_double, commands, newick, ngen, data=False)
    _check_means(out, columns)


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(POSTERIOR))
def test_posterior_equals_mrbayes(case, mb_double, tmp_path, monkeypatch):
    commands, newick, ngen, columns = POSTERIOR[case]
    out = _runs(tmp_path, monkeypatch, mb_double, commands, newick, ngen, data=True)
    _check_means(out, columns)
    (mb, n), (ours, _) = (_clades(out[who][1]) for who in ("mb", "ours"))
    for clade in set(mb) | set(ours):
        p, q = mb.get(clade, 0.0), ours.get(clade, 0.0)
        assert abs(p - q) < 0.08 + 4 * math.sqrt(max(p * (1 - p), 0.01) / n), (sorted(clade), p, q)
