"""`ss` with unlinked topologies (`unlink topology=(all)`: one tree per division), against MrBayes 3.2.7a.

MrBayes writes one split column per topology in the `.ss` file (aSplit0, aSplit1, ...), prints one
diagnostics line per topology and one plot per topology at the end. The per-step values are checked
against what the run's own files give (the cold chains' LnL in .p, the trees in each topology's .t),
the estimate against mb-double's and against the exact marginal likelihood: with unlinked topologies
and nothing else shared, it is the sum of the divisions' own, computed by quadrature.
"""
import math
import re
import signal
import statistics
import subprocess

import pytest

from mbgpu.checkpoint.signals import RunStopped
from mbgpu.output.tfile import read_tfile
from mbgpu.splits import SplitCounter, nested_splits
from tests.helpers import interp_for, output
from tests.test_checkpoint.common import run_in, run_text, same_outputs
from tests.test_checkpoint.test_signals import send_at
from tests.test_sampler.test_stepping_stone import MODEL, SEQS, exact_log_marginal

SIX = {"A": "ACGTACGTAAGTACGTACGTAAGT", "B": "ACGTACGTAAGAACGAACGTTAGT", "C": "ACCTACGAAGGAACCTACGTAAGA",
       "D": "ACCTTCGAAGCAACCTACGAAAGA", "E": "ACCTTCGTAGCAGCCTACGAAAGC", "F": "TCCTTCGTAGCAGCCAACGAAAGC"}


def _data(seqs: dict) -> str:
    n = len(next(iter(seqs.values())))
    return ("#NEXUS\nbegin data;\n  dimensions ntax=%d nchar=%d;\n  format datatype=dna;\n  matrix\n" % (len(seqs), n)
            + "".join("  %s %s\n" % kv for kv in seqs.items()) + "  ;\nend;\n")


def _block(seqs: dict, body: str) -> str:
    """Two halves of the characters as divisions, each with its own topology (and so its own brlens)."""
    half = len(next(iter(seqs.values()))) // 2
    return (_data(seqs) + "begin mrbayes;\n set autoclose=yes nowarn=yes;\n charset a = 1-%d; charset b = %d-%d;"
            " partition p = 2: a, b; set partition=p; unlink topology=(all);\n %s %s\nend;\n"
            % (half, half + 1, 2 * half, MODEL, body))


def _run_mb(mb_double, folder, text: str) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "d.nex").write_text(text)
    done = subprocess.run([str(mb_double), "d.nex"], cwd=folder, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:]
    return done.stdout


def _run_mbgpu(folder, text: str, monkeypatch) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    monkeypatch.chdir(folder)
    return output(interp_for(text, folder, "d.nex"))


def _ss_rows(path) -> list[list[str]]:
    return [line.split("\t") for line in path.read_text().splitlines() if line and line[0] != "["]


def _estimates(screen: str) -> list[float]:
    block = screen.split("Run   Marginal likelihood (ln)")[1].split("More statistics")[0].split("Mean:")[0]
    return [float(m.group(1)) for m in re.finditer(r"^\s+\d+\s+(-?\d+\.\d+)\s*$", block, re.M)]


def _schedule(screen: str) -> tuple[int, int, int, int, int]:
    """(steps, generations in a step, initial burn-in generations, a step's burn-in generations, samplefreq)
    as the screen states them."""
    steps, step = map(int, re.search(r"(\d+) steps will be used with (\d+) generations \((\d+)", screen).group(1, 2))
    freq = step // int(re.search(r"with \d+ generations \((\d+) samples", screen).group(1))
    burnin = int(re.search(r"while first\s+(\d+) generations", screen).group(1))
    step_burnin = int(re.search(r"each step (\d+) generations", screen).group(1))
    return steps, step, burnin, step_burnin, freq


def _summary_frame(screen: str) -> list[str]:
    """The end of an ss run from the estimates' heading to the move table, plot bodies and numbers left out."""
    tail = screen.split("Marginal likelihood (in natural log units)")[1].split("Acceptance rates")[0]
    return [re.sub(r"-?\d+\.\d+", "#", line) for line in tail.splitlines() if not line.startswith(("   |", "   +"))]


SCREEN = "ss ngen=1200 samplefreq=10 printfreq=400 nruns=2 nchains=2 nsteps=3 alpha=0.3 burninss=5 diagnfreq=200;"


@pytest.fixture(scope="module")
def six_runs(mb_double, tmp_path_factory):
    """mb-double's and mbgpu's run of SCREEN on the six taxa (two topologies): (folder, screen) each."""
    text = _block(SIX, " set seed=3 swapseed=4;\n " + SCREEN)
    mb_dir, our_dir = tmp_path_factory.mktemp("mb"), tmp_path_factory.mktemp("ours")
    mb_out = _run_mb(mb_double, mb_dir, text)
    mp = pytest.MonkeyPatch()
    try:
        ours = _run_mbgpu(our_dir, text, mp)
    finally:
        mp.undo()
    return (mb_dir, mb_out), (our_dir, ours)


def test_ss_file_and_screen_of_two_topologies_match_mrbayes(six_runs):
    """The .ss legend, columns (aSplit0, aSplit1) and Step/Power values; the schedule, step and diagnostics
    lines and the summary's frame with its two plots, as mb-double prints them."""
    (mb_dir, mb_out), (our_dir, ours) = six_runs
    head = lambda p: [x for x in p.read_text().splitlines() if x.startswith("[") and not x.startswith("[ID")]  # noqa
    assert head(our_dir / "d.nex.ss") == head(mb_dir / "d.nex.ss")
    ours_rows, mb_rows = _ss_rows(our_dir / "d.nex.ss"), _ss_rows(mb_dir / "d.nex.ss")
    assert ours_rows[0] == mb_rows[0] == ["Step", "Power", "run1", "run2", "aSplit0", "aSplit1"]
    assert [r[:2] for r in ours_rows] == [r[:2] for r in mb_rows]
    assert [len(r) for r in ours_rows] == [len(r) for r in mb_rows]
    intro = lambda s: s.split("Starting stepping-stone")[1].split("Chain results")[0]  # noqa
    assert intro(ours) == intro(mb_out)
    lines = lambda s: re.findall(r"Sampling step \d+ out of \d+ steps|split frequencies for topology \d", s)  # noqa
    assert lines(ours) == lines(mb_out)
    assert _summary_frame(ours) == _summary_frame(mb_out)
    assert "Plots of average standard deviation of split frequencies across steps for different topology" in ours
    gens = lambda p: [x.split("\t")[0] for x in p.read_text().splitlines() if x[:1].isdigit()]  # noqa
    assert gens(our_dir / "d.nex.mcmc") == gens(mb_dir / "d.nex.mcmc")


def test_ss_values_are_what_the_samples_give(six_runs):
    """Each step's runX is log mean exp(LnL * (b' - b)) over the step's kept samples of run X's .p file,
    each aSplitK the average standard deviation of split frequencies of topology K's .t files over the same
    samples (the step's own, past its burn-in), and the runs' estimates their sums."""
    _, (our_dir, ours) = six_runs
    steps, step, burnin, step_burnin, freq = _schedule(ours)
    rows = _ss_rows(our_dir / "d.nex.ss")[1:]
    lnl = []
    for r in (1, 2):
        lines = (our_dir / ("d.nex.run%d.p" % r)).read_text().splitlines()[2:]
        lnl.append({int(x.split("\t")[0]): float(x.split("\t")[1]) for x in lines})
    trees = [[read_tfile(str(our_dir / ("d.nex.tree%d.run%d.t" % (k, r)))) for r in (1, 2)] for k in (1, 2)]
    for k, row in enumerate(rows, 1):
        power = ((steps - k) / steps) ** (1 / 0.3)
        length = ((steps - k + 1) / steps) ** (1 / 0.3) - power
        start = burnin + (k - 1) * step
        kept = range(start + step_burnin + freq, start + step + 1, freq)
        assert float(row[1]) == pytest.approx(power, abs=5e-5)
        for r in (0, 1):
            values = [lnl[r][g] * length for g in kept]
            top = max(values)
            want = top + math.log(sum(math.exp(v - top) for v in values) / len(values))
            assert float(row[2 + r]) == pytest.approx(want, abs=1e-3 * length + 1e-6)
        for t in (0, 1):
            counter = SplitCounter(2, 6)
            for r in (0, 1):
                for tree in trees[t][r].trees:
                    if int(tree.name.split(".")[1]) in kept:
                        counter.add(r, nested_splits(tree.topology, 6))
            counter.first_kept = 0
            assert row[4 + t] == "%.6f" % counter.asdsf()[0]
    sums = [sum(float(row[2 + r]) for row in rows) for r in (0, 1)]
    assert _estimates(ours) == [float("%.2f" % v) for v in sums]


# 1200 generations: burn-in 240, 4 steps of 240, each with 60 of burn-in; checkpoints every 100
RESUME = "ss ngen=1200 samplefreq=10 printfreq=200 diagnfreq=100 nruns=2 nchains=2 nsteps=4 filename=r %s;"
FILES = ("r.ss", "r.run1.p", "r.run2.p", "r.tree1.run1.t", "r.tree2.run1.t", "r.tree1.run2.t", "r.tree2.run2.t",
         "r.mcmc")


@pytest.mark.parametrize("gen", [333])
def test_ss_of_two_topologies_continues_exactly(tmp_path, monkeypatch, gen):
    """A run stopped inside a step and continued (append=yes) writes the files of the uninterrupted run."""
    text = lambda extra: _block(SEQS, " set seed=11 swapseed=12;\n " + RESUME % extra)  # noqa
    ref_text = run_text(tmp_path / "ref", text("checkfreq=100"), monkeypatch)
    (tmp_path / "cont").mkdir()
    with monkeypatch.context() as m:
        send_at(m, gen, signal.SIGUSR1)
        with pytest.raises(RunStopped):
            run_in(tmp_path / "cont", text("checkfreq=100"), m)
    cont = run_in(tmp_path / "cont", text("checkfreq=100 append=yes"), monkeypatch)
    assert same_outputs(tmp_path / "ref", tmp_path / "cont", FILES) == []
    assert _estimates(cont) == _estimates(ref_text)


@pytest.mark.slow
def test_ss_estimate_of_two_topologies_agrees_with_mrbayes_and_the_exact_value(mb_double, tmp_path, monkeypatch):
    """4 runs of mbgpu and 8 of mb-double on the 4-taxon JC69 data split into two divisions with their own
    topologies: the means agree within Monte Carlo error, and with the exact value (the sum of the halves')."""
    settings = "ss ngen=44000 samplefreq=10 printfreq=44000 nchains=2 nsteps=10 diagnfreq=44000"
    mb_out = _run_mb(mb_double, tmp_path / "mb", _block(SEQS, " set seed=11 swapseed=12;\n " + settings + " nruns=8;"))
    ours = _run_mbgpu(tmp_path / "ours", _block(SEQS, " set seed=11 swapseed=12;\n " + settings + " nruns=4;"),
                      monkeypatch)
    exact = sum(exact_log_marginal([s[i:i + 6] for s in SEQS.values()], 10.0) for i in (0, 6))
    theirs, mine = _estimates(mb_out), _estimates(ours)
    assert len(theirs) == 8 and len(mine) == 4
    se = lambda xs: max(statistics.stdev(xs) / math.sqrt(len(xs)), 0.01)  # noqa
    m1, m2 = statistics.mean(mine), statistics.mean(theirs)
    print("mbgpu %.4f +- %.4f   MrBayes %.4f +- %.4f   exact %.4f" % (m1, se(mine), m2, se(theirs), exact))
    assert abs(m1 - m2) < 4 * math.hypot(se(mine), se(theirs))
    assert abs(m1 - exact) < 4 * se(mine) + 0.03
    assert abs(m2 - exact) < 4 * se(theirs) + 0.03
