"""Sampling the prior (mcmc data=no) through the command language recovers the prior: the 15 unrooted
topologies of 5 taxa are uniform, and tree length and one branch follow the brlens prior."""
import io
from collections import Counter

import numpy as np
import pytest
from scipy import stats

from mbgpu.console import Console
from mbgpu.interpreter import Interpreter
from mbgpu.output.tfile import read_tfile

DATA5 = """#NEXUS
begin data; dimensions ntax=5 nchar=4; format datatype=dna;
matrix
a ACGT
b ACGA
c ACTT
d AGGT
e TCGT
;
end;
"""


def sample_prior(tmp_path, monkeypatch, brlenspr: str, ngen: int, samplefreq: int):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "d.nex").write_text(DATA5 + "begin mrbayes; set seed=11 swapseed=12; prset brlenspr=%s;\n"
                                    "mcmc data=no ngen=%d nruns=1 nchains=1 samplefreq=%d printfreq=%d "
                                    "mcmcdiagn=no filename=prior; end;\n" % (brlenspr, ngen, samplefreq, ngen))
    Interpreter(Console(io.StringIO())).run_file(str(tmp_path / "d.nex"))
    return read_tfile(str(tmp_path / "prior.t"))


def _summaries(tfile, n_taxa=5):
    """(topology as the set of non-trivial splits without taxon a, tree length, branch of taxon a)."""
    full = (1 << n_taxa) - 1
    out = []
    for sample in tfile.trees:
        edges = [(b, x) for b, x in sample.lengths["edges"] if b != full]
        splits = frozenset(b if not b & 1 else full ^ b for b, _ in edges if 1 < bin(b).count("1") < n_taxa - 1)
        out.append((splits, sum(x for _, x in edges), dict(edges)[1]))
    return out


@pytest.mark.parametrize("brlenspr, tl_dist", [
    ("unconstrained:exponential(10)", stats.gamma(a=7, scale=0.1)),
    ("unconstrained:gammadir(1,0.1,1,1)", stats.gamma(a=1, scale=10.0)),
])
def test_prior_is_recovered(tmp_path, monkeypatch, brlenspr, tl_dist):
    # thinned to every 50th generation so that the 20k samples are close to independent (the tests
    # assume independence; every 10th was measurably autocorrelated for tree length)
    tf = sample_prior(tmp_path, monkeypatch, brlenspr, ngen=1_050_000, samplefreq=50)
    rows = _summaries(tf)[1001:]  # the chain starts at TL = 0.14: drop the first 1000 samples as burn-in
    assert len(rows) == 20_000
    topo = Counter(r[0] for r in rows)
    assert len(topo) == 15
    chi2 = stats.chisquare(list(topo.values()))
    assert chi2.pvalue > 0.001, chi2
    tl = np.array([r[1] for r in rows])
    assert stats.kstest(tl, tl_dist.cdf).pvalue > 0.001
    one = np.array([r[2] for r in rows])  # the branch of taxon a
    ref = tl_dist.rvs(size=200_000, random_state=np.random.default_rng(1)) * \
        stats.beta(1, 6).rvs(size=200_000, random_state=np.random.default_rng(2))
    if "exponential" in brlenspr:
        ref = stats.expon(scale=0.1).rvs(size=200_000, random_state=np.random.default_rng(3))
    assert stats.ks_2samp(one, ref).pvalue > 0.001


DATA_PARTS = """#NEXUS
begin data; dimensions ntax=4 nchar=24; format datatype=dna;
matrix
a ACGTACGTACGTACGTACGTACGT
b ACGAACGAACGAACGAACGAACGA
c ACTTACTTACTTACTTACTTACTT
d AGGTAGGTAGGTAGGTAGGTAGGT
;
end;
"""


def test_rate_multipliers_move_under_their_constraint(tmp_path, monkeypatch):
    """ratepr=dirichlet(1,1,1) over divisions of 4, 8 and 12 characters, through the command language: the
    multipliers move (a move that treats m as the proportions would reject every proposal), the weighted
    proportions w_i = n_i m_i / N always sum to 1, and their means are near 1/3 (the chain mixes slowly
    among the tree moves, so the law itself is checked in tests/test_moves/test_param_invariance.py)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "d.nex").write_text(
        DATA_PARTS + "begin mrbayes; set seed=5 swapseed=6; charset a=1-4; charset b=5-12; charset c=13-24;\n"
        "partition p=3:a,b,c; set partition=p; prset ratepr=dirichlet(1,1,1);\n"
        "mcmc data=no ngen=150000 nruns=1 nchains=1 samplefreq=50 printfreq=150000 mcmcdiagn=no "
        "checkpoint=no filename=prior; end;\n")
    Interpreter(Console(io.StringIO())).run_file(str(tmp_path / "d.nex"))
    lines = (tmp_path / "prior.p").read_text().splitlines()
    header = lines[1].split("\t")
    cols = [header.index("m{%d}" % i) for i in (1, 2, 3)]
    m = np.array([[float(r.split("\t")[c]) for c in cols] for r in lines[2:]])[200:]   # burn-in
    w = m * np.array([4.0, 8.0, 12.0]) / 24.0
    assert np.allclose(w.sum(axis=1), 1.0, atol=1e-9)
    assert len(np.unique(m[:, 0])) > len(m) // 4, "the multipliers hardly move"
    assert np.all(np.abs(w.mean(axis=0) - 1.0 / 3.0) < 0.1), w.mean(axis=0)
