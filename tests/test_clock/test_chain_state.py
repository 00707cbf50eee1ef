"""A clock chain's state after moves scores as MrBayes scores it: mbgpu runs 300 generations of a clock
analysis (the CPU and, where present, the GPU likelihood), then mb-double starts from mbgpu's last tree
(`startvals`, the .t written with 15 decimals; substitution parameters fixed, so that the tree is the
whole state) and its Gen-0 LnL, LnPr, TH and TL must equal mbgpu's row
of that generation: the node depths, branch lengths (kept or recomputed after each move), the prior and
the likelihood of the unrooted view all stay MrBayes'."""
from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from tests.helpers import interp_for
from tests.test_clock.trees import DATA, T1, T4, TAXA

APES = "taxset apes = Homo_sapiens Pan Gorilla Pongo Hylobates; constraint apes = apes;"
MODELS = {
    "uniform_jc": "lset nst=1 rates=equal; prset statefreqpr=fixed(equal) brlenspr=clock:uniform treeagepr=gamma(1,0.5);",
    "birthdeath_hky_gamma": "lset nst=2 rates=gamma; prset tratiopr=fixed(8) shapepr=fixed(0.4) "
                            "statefreqpr=fixed(0.3,0.3,0.1,0.3) brlenspr=clock:birthdeath speciationpr=fixed(1.5) "
                            "extinctionpr=fixed(0.4);",
    "calibrated_gtr": "%s lset nst=6 rates=invgamma; prset revmatpr=fixed(1,8,1,1,8,1) pinvarpr=fixed(0.3) "
                      "shapepr=fixed(0.6) statefreqpr=fixed(equal) brlenspr=clock:uniform topologypr=constraints(apes) "
                      "nodeagepr=calibrated; calibrate apes=uniform(0.1,0.4);" % APES,
    "tip_dates": "lset nst=1; prset statefreqpr=fixed(equal) brlenspr=clock:uniform nodeagepr=calibrated "
                 "clockratepr=fixed(1); calibrate Tarsius_syrichta=fixed(0.1) Lemur_catta=uniform(0.02,0.08);",
    "coalescence": "lset nst=2; prset tratiopr=fixed(8) statefreqpr=fixed(equal) brlenspr=clock:coalescence "
                   "popsizepr=fixed(0.3);",
}
SETTING = "set seed=5 swapseed=5 precision=15 scientific=no;"


def _file(model: str, run: str, trees: str = "") -> str:
    return "#NEXUS\nbegin mrbayes; execute primates.nex; end;\n%sbegin mrbayes; %s %s %s\nend;\n" % (
        trees, SETTING, model, run)


def _row(path, gen: int) -> dict:
    lines = path.read_text().splitlines()
    head = lines[1].split("\t")
    return dict(zip(head, next(ln.split("\t") for ln in lines[2:] if ln.split("\t")[0] == str(gen))))


def _last_tree(path) -> str:
    line = [ln for ln in path.read_text().splitlines() if ln.strip().startswith("tree gen.")][-1]
    newick = re.sub(r"\[&[^]]*\]", "", line.split("=", 1)[1]).strip().rstrip(";")
    return re.sub(r"(?<=[(,])(\d+)(?=:)", lambda m: TAXA[int(m.group(1)) - 1], newick)


@pytest.mark.parametrize("backend", ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("model", sorted(MODELS))
def test_state_after_moves_scores_as_mrbayes(model, backend, mb_double, tmp_path, monkeypatch):
    ours = tmp_path / "ours"
    ours.mkdir()
    shutil.copy(DATA, ours / "primates.nex")
    start = "begin trees; tree t1 = [&R] %s\nend;\n" % (T4 if "Tarsius" in MODELS[model] else T1)
    monkeypatch.chdir(ours)
    interp_for(_file("set backend=%s; %s startvals tau=t1 v=t1;" % (backend, MODELS[model]),
                     "mcmc ngen=300 samplefreq=100 printfreq=100 nruns=1 nchains=1 checkpoint=no filename=u;",
                     start), ours, "cmd.nex")
    got = _row(ours / "u.p", 300)
    theirs = tmp_path / "mb"
    theirs.mkdir()
    shutil.copy(DATA, theirs / "primates.nex")
    (theirs / "cmd.nex").write_text(_file(MODELS[model] + " startvals tau=t1 v=t1;",
                                          "mcmc ngen=1 samplefreq=1 nruns=1 nchains=1 mcmcdiagn=no checkpoint=no "
                                          "filename=u;",
                                          "begin trees; tree t1 = [&R] %s;\nend;\n" % _last_tree(ours / "u.t")))
    done = subprocess.run([str(mb_double), "cmd.nex"], cwd=theirs, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-2000:]
    want = _row(theirs / "u.p", 0)
    assert list(want) == list(got)
    assert got["TH"] != _row(ours / "u.p", 0)["TH"], "the chain did not move"
    for col in ("LnL", "LnPr", "TH", "TL"):
        assert float(got[col]) == pytest.approx(float(want[col]), abs=1e-6), col
