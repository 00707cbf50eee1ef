"""`prset topologypr=fixed(NAME)`: the chains keep a user tree's topology and sample its branch lengths
and the model, as MrBayes 3.2.7a does (same Gen-0 LnL/LnPr, same move list, same posterior within Monte
Carlo error), and the user's mistakes stop with one line."""
import re
import subprocess

import numpy as np
import pytest

from mbgpu.output.tfile import read_tfile
from tests.test_core.test_posterior import read_pstat
from tests.test_sampler.primates_runs import gen0, run_mbgpu, write_run

TREE = ("((((((Homo_sapiens:0.05,Pan:0.06):0.02,Gorilla:0.07):0.03,Pongo:0.1):0.02,Hylobates:0.1):0.05,"
        "(((Macaca_fuscata:0.02,M_mulatta:0.02):0.01,M_fascicularis:0.03):0.02,M_sylvanus:0.05):0.08):0.1,"
        "Saimiri_sciureus:0.2,(Lemur_catta:0.2,Tarsius_syrichta:0.25):0.05);")
OTHER = TREE.replace("(Homo_sapiens:0.05,Pan:0.06):0.02,Gorilla:0.07", "(Homo_sapiens:0.05,Gorilla:0.07):0.02,Pan:0.06")


def _write(folder, commands: str, mcmc: str, after: str = "") -> None:
    write_run(folder, {"t1": TREE, "t2": OTHER}, commands, mcmc, after)


def _splits(sample, n: int) -> set:
    """Non-trivial splits of a .t tree as bit masks, normalised to the side without taxon 0."""
    full = (1 << n) - 1
    out = set()
    for bits, _length in sample.lengths["edges"]:
        side = full ^ bits if bits & 1 else bits
        if 1 < bin(side).count("1") < n - 1:
            out.add(side)
    return out


_run_mbgpu = run_mbgpu


def test_every_sampled_tree_has_the_fixed_topology(tmp_path, monkeypatch):
    _write(tmp_path, "prset topologypr=fixed(t1);",
           "ngen=400 nchains=2 nruns=2 samplefreq=20 printfreq=400 diagnfreq=200 checkpoint=no")
    monkeypatch.chdir(tmp_path)
    screen = _run_mbgpu(tmp_path)
    assert "Prior is fixed to the topology of user tree 't1'" in screen
    moves = screen[screen.index("Chain will use move"):].split("\n\n")[0]
    assert "Multiplier(V)" in moves and not re.search(r"NNI|SPR|TBR", moves)
    lengths = []
    for run in (1, 2):
        tf = read_tfile(str(tmp_path / ("out.run%d.t" % run)))
        want = None
        for sample in tf.trees:
            got = _splits(sample, len(tf.taxa))
            want = got if want is None else want
            assert got == want and len(got) == len(tf.taxa) - 3
            lengths.append(sorted(length for _bits, length in sample.lengths["edges"] if length == length))
    assert len({tuple(x) for x in lengths}) > 10                 # the branch lengths do move


def test_fixed_topology_errors(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cases = [("prset topologypr=fixed(nosuch);", "topologypr=fixed(nosuch): no tree of that name (trees: t1, t2)"),
             ("prset topologypr=fixed(t1); startvals tau=t1;",
              "startvals tau=t1: the topology is fixed (prset topologypr=fixed(t1)), so its starting value "
              "cannot be set"),
             ("prset topologypr=fixed(t1); startvals v=t2;",
              "Topology of user tree 't2' wrong in setting parameter 'V'")]
    for k, (commands, message) in enumerate(cases):
        folder = tmp_path / str(k)
        _write(folder, commands, "ngen=10 nchains=1 nruns=1 samplefreq=5 printfreq=5")
        with pytest.raises(Exception) as err:
            _run_mbgpu(folder)
        assert message in str(err.value)
        assert "\n" not in str(err.value)


_gen0 = gen0


def test_gen0_and_moves_match_mrbayes(tmp_path, monkeypatch, mb_double):
    """Same Gen-0 LnL and LnPr (to 1e-6) and the same move list as mb-double, with the user tree's
    branch lengths (startvals v) and with MrBayes' default ones (0.02)."""
    for k, start in enumerate(("startvals v=t1;", "")):
        for side in ("mb", "mbgpu"):
            _write(tmp_path / ("%s%d" % (side, k)), "prset topologypr=fixed(t1); " + start,
                   "ngen=1 nchains=1 nruns=1 samplefreq=1 printfreq=1 mcmcdiagn=no checkpoint=no")
        done = subprocess.run([str(mb_double), "run.nex"], cwd=tmp_path / ("mb%d" % k), capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, done.stdout[-2000:]
        monkeypatch.chdir(tmp_path / ("mbgpu%d" % k))
        screen = _run_mbgpu(tmp_path / ("mbgpu%d" % k))
        theirs, ours = _gen0(tmp_path / ("mb%d" % k) / "out.p"), _gen0(tmp_path / ("mbgpu%d" % k) / "out.p")
        for col in ("LnL", "LnPr", "TL"):
            assert float(ours[col]) == pytest.approx(float(theirs[col]), abs=1e-6), col

        def move_table(text):
            block = text[text.index("Chain will use move"):].splitlines()[1:]
            return [ln.split() for ln in block[:next(i for i, ln in enumerate(block) if "%" not in ln)]]
        assert move_table(screen) == move_table(done.stdout)


def test_posterior_matches_mrbayes(tmp_path, monkeypatch, mb):
    """Branch lengths and model parameters on the fixed tree: means within Monte Carlo error of MrBayes'."""
    mcmc = "ngen=150000 nchains=1 nruns=2 samplefreq=50 printfreq=50000 diagnfreq=50000 checkpoint=no"
    for side in ("mb", "mbgpu"):
        _write(tmp_path / side, "prset topologypr=fixed(t1); startvals v=t1;", mcmc, "sump;")
    done = subprocess.run([str(mb), "run.nex"], cwd=tmp_path / "mb", capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:]
    monkeypatch.chdir(tmp_path / "mbgpu")
    _run_mbgpu(tmp_path / "mbgpu")
    ours, theirs = read_pstat(tmp_path / "mbgpu" / "out.pstat"), read_pstat(tmp_path / "mb" / "out.pstat")
    for name in ("TL", "r(A<->G)", "r(C<->T)", "pi(A)", "alpha", "pinvar"):
        (m1, v1, e1), (m2, v2, e2) = ours[name], theirs[name]
        se = np.sqrt(v1 / (2 * e1) + v2 / (2 * e2))
        assert abs(m1 - m2) < 4.5 * se, (name, m1, m2, se)
        assert 0.4 < v1 / v2 < 2.5, (name, v1, v2)
