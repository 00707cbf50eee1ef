"""`mcmc` on a clock tree from a `startvals` start tree: mbgpu's Gen-0 `.p` header and row (LnL, LnPr, TH,
TL, substitution and clock parameters) and `.t` file up to its Gen-0 tree against mb-double's from the same
commands, for each tree prior the
sampler runs (uniform, birth-death, coalescent), calibrations, tip dates, a free clock rate and a model
with free substitution parameters (the issue's first "done when", through the whole run path)."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.helpers import interp_for
from tests.test_clock.gen0 import SETUP
from tests.test_clock.trees import DATA, T1, T2, T3, T4

APES = "taxset apes = Homo_sapiens Pan Gorilla Pongo Hylobates; constraint apes = apes;"
UNIFORM = "prset brlenspr=clock:uniform"
# name -> (model commands, clock commands, start tree)
CASES = {
    "uniform": (SETUP, UNIFORM + ";", T1),
    "uniform_gamma_age": (SETUP, UNIFORM + " treeagepr=gamma(2,3);", T3),
    "uniform_free_rate": (SETUP, UNIFORM + " clockratepr=lognormal(-1,0.5);", T1),
    "birthdeath": (SETUP, "prset brlenspr=clock:birthdeath;", T2),
    "birthdeath_fixed": (SETUP, "prset brlenspr=clock:birthdeath speciationpr=fixed(2) extinctionpr=fixed(0.5);", T1),
    "coalescence": (SETUP, "prset brlenspr=clock:coalescence popsizepr=lognormal(0.5,0.4);", T2),
    "calibrated": (SETUP, "%s %s topologypr=constraints(apes) nodeagepr=calibrated clockratepr=lognormal(0,1); "
                   "calibrate apes=uniform(0.15,0.3);" % (APES, UNIFORM), T1),
    "tip_dates": (SETUP, UNIFORM + " nodeagepr=calibrated clockratepr=exponential(2); calibrate "
                  "Tarsius_syrichta=fixed(0.1) Lemur_catta=uniform(0.02,0.08);", T4),
    "hky_gamma": ("lset nst=2 rates=gamma;", "prset brlenspr=clock:birthdeath clockratepr=gamma(2,4);", T1),
    # MrBayes' Gen-0 lengths are the start tree's as written (LnL and TL), not depth differences
    "nearly_ultrametric": ("lset nst=2;", UNIFORM + ";", T1.replace("Pan:0.05", "Pan:0.0509")),
    "written_order": (SETUP, UNIFORM + ";", T2.replace("(Saimiri_sciureus:0.3,Lemur_catta:0.3)",
                                                        "(Lemur_catta:0.3,Saimiri_sciureus:0.3)")),
}
RUN = "mcmc ngen=1 samplefreq=1 printfreq=1 nchains=1 nruns=1 mcmcdiagn=no checkpoint=no filename=x;"


def _file(model: str, clock: str, newick: str) -> str:
    return ("#NEXUS\nbegin mrbayes; set seed=1 swapseed=1; execute primates.nex; end;\n"
            "begin trees; tree t1 = [&R] %s\nend;\nbegin mrbayes; %s %s startvals tau=t1 v=t1;\n%s\nend;\n"
            % (newick, model, clock, RUN))


def _run_both(text: str, mb_double, tmp_path, monkeypatch) -> None:
    """`text` run by mb-double in tmp_path/mb and by mbgpu in tmp_path/ours (each beside primates.nex)."""
    for who in ("mb", "ours"):
        (tmp_path / who).mkdir()
        shutil.copy(DATA, tmp_path / who / "primates.nex")
    (tmp_path / "mb" / "cmd.nex").write_text(text)
    done = subprocess.run([str(mb_double), "cmd.nex"], cwd=tmp_path / "mb", capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout[-2000:]
    monkeypatch.chdir(tmp_path / "ours")
    interp_for(text, tmp_path / "ours", "cmd.nex")


def _gen0(path) -> tuple[list[str], list[float]]:
    lines = path.read_text().splitlines()
    return lines[1].split("\t"), [float(x) for x in lines[2].split("\t")]


@pytest.mark.parametrize("case", sorted(CASES))
def test_gen0_row_equals_mrbayes(case, mb_double, tmp_path, monkeypatch):
    _run_both(_file(*CASES[case]), mb_double, tmp_path, monkeypatch)
    head, row = _gen0(tmp_path / "mb" / "x.p")
    our_head, our_row = _gen0(tmp_path / "ours" / "x.p")
    assert our_head == head
    assert our_row[:3] == pytest.approx(row[:3], rel=1e-6, abs=1e-6)      # Gen, LnL, LnPr
    assert our_row == pytest.approx(row, rel=1e-6)
    assert _trees_to_gen0(tmp_path / "ours" / "x.t") == _trees_to_gen0(tmp_path / "mb" / "x.t")


def _trees_to_gen0(path) -> list[str]:
    """The .t file up to its Gen-0 tree, less the [ID: ...] line (the run's stamp)."""
    lines = path.read_text().splitlines()
    end = next(i for i, ln in enumerate(lines) if ln.startswith("   tree gen.0 "))
    return [ln for ln in lines[:end + 1] if not ln.startswith("[ID:")]


@pytest.mark.parametrize("clock", [UNIFORM + ";", UNIFORM + " treeagepr=uniform(2,5) clockratepr=exponential(2);"])
def test_random_start_tree_has_mrbayes_ages(clock, mb_double, tmp_path, monkeypatch):
    """Without startvals both start from MrBayes' random clock tree: its topology is random, its ages are
    MrBayes' fixed rule (mbgpu.clock.random_start), so TH, the clock rate and the uniform prior's LnPr (a
    function of the tree age alone) agree at Gen 0."""
    _run_both(_file(SETUP, clock, T1).replace(" startvals tau=t1 v=t1;", ""), mb_double, tmp_path, monkeypatch)
    head, row = _gen0(tmp_path / "mb" / "x.p")
    our_head, our_row = _gen0(tmp_path / "ours" / "x.p")
    assert our_head == head
    keep = [i for i, h in enumerate(head) if h in ("LnPr", "TH", "clockrate")]
    assert [our_row[i] for i in keep] == pytest.approx([row[i] for i in keep], rel=1e-6)
