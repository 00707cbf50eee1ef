"""Dirichlet moves use MrBayes' concentration alpha_pi = tuning x K (K: the components of Revmat, Pi and
the rate multipliers; 1 for Tratio), in both the interpreted and the compiled move, and so accept as
often as MrBayes' own do on the same analysis."""
import io
import re
import subprocess

import numpy as np

from mbgpu.console import Console
from mbgpu.core.param_moves import dirichlet_move
from mbgpu.core.rng import seed_states
from mbgpu.interpreter import Interpreter
from mbgpu.param_kinds import MULTIPLIERS, RATIO, SIMPLEX
from mbgpu.sampler.move_table import dirichlet_alpha_factor
from mbgpu.sampler.param_moves import ParamMove
from tests.conftest import TEST_DATA


def test_alpha_factor_by_parameter_form():
    assert dirichlet_alpha_factor(SIMPLEX, "dirichlet", 6) == 6.0        # Revmat
    assert dirichlet_alpha_factor(SIMPLEX, "dirichlet", 20) == 20.0      # Pi of protein
    assert dirichlet_alpha_factor(MULTIPLIERS, "dirichlet", 3) == 3.0    # rate multipliers of 3 divisions
    assert dirichlet_alpha_factor(RATIO, "dirichlet", 2) == 1.0          # Tratio
    assert dirichlet_alpha_factor(SIMPLEX, "slider", 6) == 1.0


def _spread(draw, x, n=4000) -> np.ndarray:
    return np.array([draw(x) for _ in range(n)]).var(axis=0)


def test_proposals_have_the_concentration_tuning_times_k():
    """Both implementations draw w' with Var(w'_i) = w_i (1 - w_i) / (alpha_pi + 1), alpha_pi = 100 x 6."""
    x = np.array([0.3, 0.25, 0.05, 0.1, 0.2, 0.1])
    want = x * (1 - x) / (100.0 * 6 + 1)
    rng = np.random.default_rng(1)
    move = ParamMove("Dirichlet(Revmat)", 0, "dirichlet", 1.0, 100.0, "alpha", alpha_factor=6.0)
    interpreted = _spread(lambda v: move.propose(v.copy(), rng)[0], x)
    state = seed_states(7, [(0,)])[0]

    def compiled(v):
        v = v.copy()
        dirichlet_move(state, v, 100.0 * 6.0, np.ones(6))
        return v
    for got in (interpreted, _spread(compiled, x)):
        np.testing.assert_allclose(got, want, rtol=0.1)


def test_acceptance_rates_match_mrbayes(tmp_path, monkeypatch, mb):
    """Primates in three codon-position divisions, HKY+G each, variable rate multipliers: the Dirichlet
    moves on Tratio, Pi and the rate multipliers accept within 0.6-1.6x of MrBayes' rates (before
    alpha_pi was right, Dirichlet(Ratemultiplier) accepted 21% against MrBayes' 40%)."""
    data = re.search(r"(?is)begin\s+data\s*;.*?end\s*;", (TEST_DATA / "primates.nex").read_text()).group(0)
    block = ("begin mrbayes;\n  set autoclose=yes nowarn=yes seed=5 swapseed=5;\n"
             "  charset first = 1-898\\3; charset second = 2-898\\3; charset third = 3-898\\3;\n"
             "  partition by = 3: first, second, third;\n  set partition=by;\n  lset nst=2 rates=gamma;\n"
             "  prset ratepr=variable;\n  unlink shape=(all) tratio=(all);\n"
             "  mcmc ngen=60000 nchains=1 nruns=1 samplefreq=100 printfreq=20000 diagnfreq=20000 "
             "checkpoint=no filename=out;\nend;\n")
    for side in ("mb", "mbgpu"):
        (tmp_path / side).mkdir()
        (tmp_path / side / "run.nex").write_text("#NEXUS\n%s\n%s" % (data, block))
    done = subprocess.run([str(mb), "run.nex"], cwd=tmp_path / "mb", capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:]
    monkeypatch.chdir(tmp_path / "mbgpu")
    screen = io.StringIO()
    Interpreter(Console(screen)).run_file("run.nex")

    def rates(text):
        block = text[text.index("Acceptance rates"):]
        return {m.group(2): float(m.group(1)) for m in re.finditer(r"^\s+([\d.]+) %\s+\(\s*\d+ %\)\s+(\S+)$",
                                                                   block, re.M)}
    ours, theirs = rates(screen.getvalue()), rates(done.stdout)
    names = [n for n in theirs if n.startswith("Dirichlet(")]
    assert len(names) == 5, theirs
    for name in names:
        assert 0.6 < ours[name] / theirs[name] < 1.6, (name, ours[name], theirs[name])
