"""Move statistics that go with the heat (MrBayes indexes them by chainId), `mcmc allchains=yes` and
`allcomps=yes`, and the end-of-run report, against MrBayes 3.2.7a (mb-double)."""
import io
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from mbgpu.console import Console
from mbgpu.interpreter import Interpreter
from mbgpu.output.tfile import read_tfile
from mbgpu.sampler.mc3 import MC3
from mbgpu.sampler.swaps import SwapTable

DATA = Path(__file__).resolve().parents[1] / "data" / "primates.nex"
SCRIPT = """#NEXUS
begin mrbayes;
set autoclose=yes nowarn=yes seed=%d swapseed=7;
execute primates.nex;
%s
mcmcp %s filename=r;
mcmc;
end;
"""


def _write(folder: Path, mcmc: str, seed: int = 5, model: str = "") -> None:
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(DATA, folder / "primates.nex")
    (folder / "run.nex").write_text(SCRIPT % (seed, model, mcmc))


def _both(tmp_path, monkeypatch, mb_double, mcmc: str, seed: int = 5, model: str = "") -> tuple[str, str]:
    """(MrBayes' screen, ours) for the same script, each in its own folder (tmp/mb, tmp/ours)."""
    for side in ("mb", "ours"):
        _write(tmp_path / side, mcmc, seed, model)
    done = subprocess.run([str(mb_double), "run.nex"], cwd=tmp_path / "mb", capture_output=True, text=True,
                          timeout=1200)
    monkeypatch.chdir(tmp_path / "ours")
    out = io.StringIO()
    Interpreter(Console(out)).run_file(str(tmp_path / "ours" / "run.nex"))
    return done.stdout, out.getvalue()


def _masked(text: str) -> list[str]:
    """The screen from "Chain results" to the end of the mcmc report, numbers and times masked."""
    text = text[text.index("Chain results"):]
    text = text[:text.index("   Exiting mrbayes block")] if "Exiting mrbayes block" in text else text
    text = re.sub(r"\d+:\d\d:\d\d|Analysis (completed in|used) .*", "T", text)
    text = re.sub(r"-?\d+\.\d+", "X", text)
    text = re.sub(r"\(\s*\d+ %\)", "(R)", text)
    text = re.sub(r"(?<=[ |])( *)\d+(?= )", lambda m: " " * len(m.group(0)), text)   # counts: same width
    text = re.sub(r"\[X\]|\(X\)", "C", text)                                      # which chain is cold varies
    text = re.sub(r"(?m)^ +(NA +NA|X % +\(R\)) +(?=\S+$)", "RATE ", text)   # NA until tunefreq tries: by chance
    return [line.rstrip("\n") for line in text.splitlines()]


def _mcmc_header(path: Path) -> list[str]:
    lines = path.read_text().splitlines()
    return lines[1:next(i for i, line in enumerate(lines) if line.startswith("Gen")) + 1]


def _report_rows(text: str) -> list[str]:
    """The acceptance-table lines, one per move and table: NA or a rate."""
    return [("NA" if "NA" in line else "rate") + line.split()[-1] for line in text.splitlines()
            if re.match(r"^\s+(NA|\d+\.\d %)\s", line)]


@pytest.mark.parametrize("runs", ["nruns=1 nchains=1", "nruns=1 nchains=2", "nruns=2 nchains=1", "nruns=2 nchains=2",
                                  "nruns=2 nchains=3 nswaps=30", "nruns=1 nchains=3 nswaps=300 mcmcdiagn=no"])
def test_end_of_run_report_like_mrbayes(runs, tmp_path, monkeypatch, mb_double):
    """Wording for one run and/or one chain, the swap table's spacing (cells widen with 5- and 6-digit
    counts), times, NA for moves not yet through one tuning batch (tunefreq tries), blank lines: the
    same screen but for the numbers."""
    mcmc = "ngen=1000 %s samplefreq=100 printfreq=500 diagnfreq=500" % runs
    theirs, ours = _both(tmp_path, monkeypatch, mb_double, mcmc)
    assert _masked(ours) == _masked(theirs)
    assert "Analysis completed in" in ours and "seconds of CPU time" in ours


def test_a_move_has_a_rate_once_it_has_had_tunefreq_tries(tmp_path, monkeypatch):
    """MrBayes prints NA NA while a move's nBatches is 0: a rate appears with the first tuning batch."""
    _write(tmp_path, "ngen=300 nruns=1 nchains=1 samplefreq=100 printfreq=300 tunefreq=50")
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    Interpreter(Console(out)).run_file(str(tmp_path / "run.nex"))
    rows = _report_rows(out.getvalue())
    assert "(last 50)" in out.getvalue() and len(rows) == 9
    assert any(r.startswith("NA") for r in rows) and any(r.startswith("rate") for r in rows)
    for line in out.getvalue().splitlines():
        if "NA" in line and "(" in line:        # MrBayes' "%s          NA           NA       %s"
            assert re.match(r"^ {13}NA {11}NA {7}\S+$", line), line


@pytest.mark.parametrize("nruns, nchains", [(3, 3), (1, 2), (2, 1)])
def test_allchains_and_allcomps_like_mrbayes(nruns, nchains, tmp_path, monkeypatch, mb_double):
    """allchains=yes: a .mcmc column per move and chain (`_run1_chn2`, also with one run) and a table per
    heated chain; allcomps=yes: `AvgStdDev(s)(run1_run2)` columns, the pairwise table after each
    diagnostics line; the header and the screen's layout as MrBayes'."""
    mcmc = ("ngen=600 nruns=%d nchains=%d samplefreq=20 printfreq=100 diagnfreq=200 allchains=yes allcomps=yes"
            % (nruns, nchains))
    theirs, ours = _both(tmp_path, monkeypatch, mb_double, mcmc)
    assert _masked(ours) == _masked(theirs)
    assert _mcmc_header(tmp_path / "ours" / "r.mcmc") == _mcmc_header(tmp_path / "mb" / "r.mcmc")
    rows = [line.split("\t") for line in (tmp_path / "ours" / "r.mcmc").read_text().splitlines()[-3:]]
    assert len({len(r) for r in rows}) == 1 and len(rows[0]) == len(_mcmc_header(tmp_path / "ours" / "r.mcmc")[-1]
                                                                     .split("\t"))


def test_allcomps_maxstddev_header_like_mrbayes(tmp_path, monkeypatch, mb_double):
    mcmc = "ngen=400 nruns=3 nchains=1 samplefreq=20 printfreq=200 diagnfreq=200 allcomps=yes diagnstat=maxstddev"
    theirs, ours = _both(tmp_path, monkeypatch, mb_double, mcmc)
    assert _masked(ours) == _masked(theirs)
    assert _mcmc_header(tmp_path / "ours" / "r.mcmc") == _mcmc_header(tmp_path / "mb" / "r.mcmc")


def _pairwise_from_trees(folder: Path, nruns: int, n_samples: int, minpartfreq: float):
    """What our SplitCounter.pairwise gives on MrBayes' own tree samples (its first n_samples)."""
    from mbgpu.splits import SplitCounter

    counter = SplitCounter(nruns, 12, minpartfreq=minpartfreq)
    full = (1 << 12) - 1
    for r in range(nruns):
        for t in read_tfile(str(folder / ("r.run%d.t" % (r + 1)))).trees[:n_samples]:
            splits = []
            for bits, _ in t.lengths["edges"]:
                bits = bits ^ full if bits & 1 else bits
                if 2 <= bin(bits).count("1") <= 10:
                    splits.append(bits)
            counter.add(r, splits)
    return counter.pairwise()


@pytest.mark.parametrize("stat", ["avgstddev", "maxstddev"])
def test_pairwise_statistics_are_mrbayes_on_its_own_trees(stat, tmp_path, mb_double):
    """The pairwise table of MrBayes' last diagnostics, recomputed from its .t files: the statistic of the
    two runs alone, over the splits that reach minpartfreq in one of them (their count below)."""
    _write(tmp_path, "ngen=2000 nruns=3 nchains=1 samplefreq=20 printfreq=1000 diagnfreq=1000 allcomps=yes "
                     "minpartfreq=0.2 diagnstat=%s" % stat, seed=11)
    done = subprocess.run([str(mb_double), "run.nex"], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    table = done.stdout[done.stdout.rindex("Pairwise"):].splitlines()[5:8]
    cells = [re.findall(r"\d+\.\d+|\d+", line.split("|")[1]) for line in table]
    got = _pairwise_from_trees(tmp_path, 3, 101, 0.2)
    for i, j, avg, mx, n in got:
        assert cells[i][j - 1] == "%.3f" % (mx if stat == "maxstddev" else avg)
        assert cells[j][i] == str(n)


class _Moves:
    def __init__(self, tag):
        self.tag = tag


class _Chain:
    """What MC3.trade_heat_stats moves between chains, marked."""

    def __init__(self, index, lnl):
        self.index, self.lnl, self.lnpr, self._core = index, lnl, 0.0, None
        self._moves, self.best_lnl = _Moves(index), float(index)

    from mbgpu.sampler.chain import Chain
    trade_heat_stats = Chain.trade_heat_stats


def test_an_accepted_swap_hands_the_statistics_on_with_the_heat():
    """After any swaps, the chain holding heat h holds the move objects and best lnL it started with at
    heat h (position p started at heat p): MrBayes' nAccepted[chainId] ... tuningParam[chainId]."""
    rng = np.random.default_rng(1)
    runs = [[_Chain(p, -1000.0 + rng.normal()) for p in range(4)]]
    opts = type("O", (), {"nchains": 4, "nswaps": 3, "temp": 0.5, "power": 1.0})()
    mc3 = MC3.__new__(MC3)
    mc3.runs, mc3.opts, mc3.swap_rng = runs, opts, rng
    mc3.ranks, mc3.swaps = [[0, 1, 2, 3]], [SwapTable(4)]
    for _ in range(50):
        mc3.swap_all()
    assert sum(sum(row) for row in mc3.swaps[0].accepted) > 0
    for p, ch in enumerate(runs[0]):
        assert ch._moves.tag == mc3.ranks[0][p] and ch.best_lnl == mc3.ranks[0][p]


def _acceptance(text: str, heading: str) -> dict[str, float]:
    """{move: total acceptance %} of the table under `heading` (MrBayes' end-of-run report)."""
    block = text[text.index(heading):].split("\n\n")[1 if "(heated)" in heading else 0].splitlines()
    return {line.split()[-1]: float(line.split()[0]) for line in block if re.match(r"^\s+\d+\.\d %", line)}


@pytest.mark.slow
def test_cold_and_heated_acceptance_rates_agree_with_mrbayes(tmp_path, monkeypatch, mb_double):
    """The heat's statistics, over 4 seeds of 30,000 generations (nst=1, 2 chains, temp=0.5): the mean
    acceptance rate of each parameter move in the cold and in the heated chain agrees with MrBayes' within
    3 standard errors of the difference (+1 point); the heated chain accepts Dirichlet(Pi) more often in
    both (MrBayes ~15 % / ~23 %; before, our "cold" table mixed the heats: ~20 %)."""
    mcmc = "ngen=30000 nruns=1 nchains=2 temp=0.5 samplefreq=500 printfreq=10000 mcmcdiagn=no allchains=yes"
    cold = 'Acceptance rates for the moves in the "cold" chain:'
    hot = "Acceptance rates for the moves in chain 2 (heated):"
    moves = ("Dirichlet(Pi)", "Slider(Pi)", "Multiplier(V)", "Nodeslider(V)")
    rates = {"mb": [], "ours": []}
    for seed in range(1, 5):
        theirs, ours = _both(tmp_path / str(seed), monkeypatch, mb_double, mcmc, seed=seed, model="lset nst=1;")
        for side, text in (("mb", theirs), ("ours", ours)):
            rates[side].append([_acceptance(text, h)[m] for h in (cold, hot) for m in moves])
    a, b = np.array(rates["mb"]), np.array(rates["ours"])
    se = np.sqrt(a.var(axis=0, ddof=1) / len(a) + b.var(axis=0, ddof=1) / len(b))
    assert (np.abs(a.mean(axis=0) - b.mean(axis=0)) < 3 * se + 1.0).all(), (a.mean(axis=0), b.mean(axis=0), se)
    for side in (a, b):
        assert side[:, 4].mean() > side[:, 0].mean() + 4       # Dirichlet(Pi): heated above cold


def test_each_runs_best_state_is_its_cold_heats_best(tmp_path, monkeypatch):
    """The best lnL printed for run r is at least every cold-chain lnL sampled in run r. (MrBayes 3.2.7a
    prints maxLnL0[r], heat r of run 1, for several runs of several chains: with seed=3 swapseed=7,
    temp=5, ngen=3000 it says -6311.16 for run 2, whose .p file has a sample at -6292.67.)"""
    _write(tmp_path, "ngen=600 nruns=2 nchains=2 temp=5 samplefreq=10 printfreq=600 diagnfreq=600", seed=3)
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    Interpreter(Console(out)).run_file(str(tmp_path / "run.nex"))
    best = [float(x) for x in re.findall(r'best state for "cold" chain of run \d was (\S+)', out.getvalue())]
    for r, b in enumerate(best, 1):
        sampled = np.loadtxt(tmp_path / ("r.run%d.p" % r), skiprows=2)[:, 1]
        assert b >= round(sampled.max(), 2)
