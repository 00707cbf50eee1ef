"""Runs under `prset topologypr=constraints(...)`: every sampled tree keeps the constraints (compiled core
and interpreted sampler), sumt gives a hard constraint's clade probability 1; against the real MrBayes
the Gen-0 LnPr, the topology prior's description, the errors and the posterior clade probabilities."""
import subprocess

import pytest

from mbgpu.output.tfile import read_tfile
from tests.test_sampler.primates_runs import gen0, run_mbgpu, write_run

TREE = ("((((((Homo_sapiens:0.05,Gorilla:0.07):0.02,Pan:0.06):0.03,Pongo:0.1):0.02,Hylobates:0.1):0.05,"
        "(((Macaca_fuscata:0.02,M_mulatta:0.02):0.01,M_fascicularis:0.03):0.02,M_sylvanus:0.05):0.08):0.1,"
        "Saimiri_sciureus:0.2,(Lemur_catta:0.2,Tarsius_syrichta:0.25):0.05);")
DEFS = ("taxset apes = Homo_sapiens Pan Gorilla Pongo Hylobates;\n"
        "  constraint apes = apes;\n"
        "  constraint macaques hard = 8-11;\n"
        "  constraint notHP negative = Homo_sapiens Pan;\n"
        "  constraint part partial = Homo_sapiens Gorilla : Pongo Hylobates;\n")
ALL = "prset topologypr=constraints(apes,macaques,notHP,part);"
APES, MACAQUES, HP = "..*****.....", ".......****.", "..**........"


def _write(folder, commands: str, mcmc: str, after: str = "") -> None:
    write_run(folder, {"t1": TREE}, DEFS + "  " + commands, mcmc, after)


_mbgpu = run_mbgpu


def _clade_probs(folder) -> dict:
    """{partition pattern: probability} from sumt's .parts and .tstat files."""
    parts = dict(line.split("\t")[:2] for line in (folder / "out.parts").read_text().splitlines()[2:] if line)
    out = {}
    for line in (folder / "out.tstat").read_text().splitlines()[2:]:
        cells = [c for c in line.split("\t") if c]
        if cells:
            out[parts[cells[0]]] = float(cells[2])
    return out


def _check_trees(folder):
    for run in (1, 2):
        tf = read_tfile(str(folder / ("out.run%d.t" % run)))
        n, full = len(tf.taxa), (1 << len(tf.taxa)) - 1
        bit = {name: 1 << i for i, name in enumerate(tf.taxa)}
        for sample in tf.trees:
            sides = {b for b, _len in sample.lengths["edges"]} | {full ^ b for b, _len in sample.lengths["edges"]}
            apes = sum(bit[t] for t in ("Homo_sapiens", "Pan", "Gorilla", "Pongo", "Hylobates"))
            macaques = sum(bit[t] for t in ("Macaca_fuscata", "M_mulatta", "M_fascicularis", "M_sylvanus"))
            assert apes in sides and macaques in sides
            assert bit["Homo_sapiens"] | bit["Pan"] not in sides
            a, b = bit["Homo_sapiens"] | bit["Gorilla"], bit["Pongo"] | bit["Hylobates"]
            assert any(s & a == a and not s & b for s in sides)
        assert n == 12


@pytest.mark.parametrize("path", ["compiled", "interpreted"])
def test_every_sampled_tree_keeps_the_constraints(tmp_path, monkeypatch, path, request):
    if path == "interpreted":
        request.getfixturevalue("interpreted")
    _write(tmp_path, ALL, "ngen=1500 nchains=2 nruns=2 samplefreq=25 printfreq=1500 diagnfreq=500 checkpoint=no",
           "sumt;")
    monkeypatch.chdir(tmp_path)
    screen = _mbgpu(tmp_path)
    assert '-- Negative constraint "notHP"' in screen and '-- Partial constraint "part"' in screen
    _check_trees(tmp_path)
    probs = _clade_probs(tmp_path)
    assert probs[APES] == 1.0 and probs[MACAQUES] == 1.0 and HP not in probs


def _gen0_lnpr(path) -> float:
    return float(gen0(path)["LnPr"])


@pytest.mark.parametrize("extra, chosen", [("", "apes,macaques"), ("", "apes"), ("", "notHP"), ("", "part"),
                                           ("", "apes,notHP,part"),
                                           ("outgroup Lemur_catta; constraint og = 1 2 12;", "og,macaques")])
def test_gen0_log_prior_matches_mrbayes(tmp_path, monkeypatch, mb_double, extra, chosen):
    """MrBayes charges -log(#topologies the hard constraints allow); negative and partial ones leave the
    uniform-over-all term; a constraint holding the outgroup is the same split."""
    for side in ("mb", "mbgpu"):
        _write(tmp_path / side, "%s prset topologypr=constraints(%s); startvals tau=t1 v=t1;" % (extra, chosen),
               "ngen=1 nchains=1 nruns=1 samplefreq=1 printfreq=1 mcmcdiagn=no checkpoint=no")
    done = subprocess.run([str(mb_double), "run.nex"], cwd=tmp_path / "mb", capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout[-2000:]
    monkeypatch.chdir(tmp_path / "mbgpu")
    screen = _mbgpu(tmp_path / "mbgpu")
    assert _gen0_lnpr(tmp_path / "mbgpu" / "out.p") == pytest.approx(_gen0_lnpr(tmp_path / "mb" / "out.p"), abs=1e-6)

    def described(text):
        return [ln.strip() for ln in text.splitlines() if ln.strip().startswith("-- ") and "constraint" in ln]
    assert described(screen) == described(done.stdout)


@pytest.mark.parametrize("commands, ours, theirs", [
    ("constraint hp = Homo_sapiens Pan; prset topologypr=constraints(hp); startvals tau=t1;",
     "startvals tau=t1: the tree breaks constraint 'hp'", "Tree breaks constraint 'hp'"),
    ("prset topologypr=constraints(nosuch);", "no constraint called 'nosuch'", "Error when setting parameter"),
    ("constraint c1 = 1 2; constraint c2 = 2 3; prset topologypr=constraints(c1,c2);",
     "hard constraints c1 and c2 cannot hold in one tree", "Error in command \"Prset\""),
    ("constraint c1 = 3-7 nosuch;", "'nosuch' is neither a taxon, a taxon number nor a taxset",
     "Could not find a taxset called 'nosuch'"),
])
def test_mistakes_stop_like_mrbayes(tmp_path, monkeypatch, mb_double, commands, ours, theirs):
    for side in ("mb", "mbgpu"):
        _write(tmp_path / side, commands, "ngen=1 nchains=1 nruns=1 samplefreq=1 printfreq=1 checkpoint=no")
    done = subprocess.run([str(mb_double), "run.nex"], cwd=tmp_path / "mb", capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 1 and theirs in done.stdout
    monkeypatch.chdir(tmp_path / "mbgpu")
    with pytest.raises(Exception) as err:
        _mbgpu(tmp_path / "mbgpu")
    assert ours in str(err.value) and "\n" not in str(err.value)


def test_posterior_clades_match_mrbayes(tmp_path, monkeypatch, mb):
    """A negative constraint on the best-supported clade (Homo, Pan) with the apes held together: the
    clade probabilities MrBayes finds, within 0.1 (two runs of four chains each side)."""
    mcmc = "ngen=40000 nchains=4 nruns=2 samplefreq=50 printfreq=20000 diagnfreq=20000 checkpoint=no"
    for side in ("mb", "mbgpu"):
        _write(tmp_path / side, "prset topologypr=constraints(apes,notHP);", mcmc, "sumt;")
    done = subprocess.run([str(mb), "run.nex"], cwd=tmp_path / "mb", capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-2000:]
    monkeypatch.chdir(tmp_path / "mbgpu")
    _mbgpu(tmp_path / "mbgpu")
    ours, theirs = _clade_probs(tmp_path / "mbgpu"), _clade_probs(tmp_path / "mb")
    assert theirs[APES] == 1.0 and ours[APES] == 1.0 and HP not in ours and HP not in theirs
    for clade in set(ours) | set(theirs):
        if clade.count("*") > 1 and max(ours.get(clade, 0), theirs.get(clade, 0)) > 0.05:
            assert abs(ours.get(clade, 0.0) - theirs.get(clade, 0.0)) < 0.1, (clade, ours.get(clade), theirs.get(clade))
