"""`sumt` of clock (rooted) trees against MrBayes 3.2.7a: .parts with the root clade (ID 0), the clade
table, `height[i]`/`age[i]` (free clock rate) and relaxed-clock `IgrBrlens_length/rate[i]` rows of the
.vstat, FigTree node heights/ages and consensus lengths from median ages in the .con.tre, the
"median node depths" phylogram with its time axis, .brparams; every file byte for byte and the screen
line for line. The fixtures in tests/data/sumt_clock are MrBayes' (mb-double) own .t files and its
output of one sumt line each (no MrBayes needed); the live tests make fresh clock runs with mb-double."""
import shutil
import types

import pytest

from mbgpu.errors import NotImplementedYet
from mbgpu.summary.clockdepth import node_ages, node_depths
from mbgpu.summary.sumt import run_sumt
from tests.conftest import TEST_DATA
from tests.test_output.mbpeer import run_mb, run_ours, stage

_FIXTURES = TEST_DATA / "sumt_clock"
_KINDS = (".parts", ".tstat", ".vstat", ".trprobs", ".con.tre", ".brparams")
_CASES = {"strict": "sumt filename=strict;",
          "tipfree": "sumt filename=tipfree conformat=simple hpd=no burninfrac=0.5 savebrparams=yes "
                     "minbrparamfreq=0.9;",
          "igr": "sumt filename=igr contype=allcompat;"}


def _screen(text: str, theirs: bool) -> list[str]:
    """The sumt screen from 'Summarizing trees' to the last credible-set line, MrBayes' spacer cut."""
    lines = text.split("\n")
    i = next(k for k, ln in enumerate(lines) if "Summarizing trees" in ln)
    j = next(k for k, ln in enumerate(lines) if "99 % credible" in ln)
    return [ln[3:] if theirs and not (len(ln) == 83 and not ln.strip()) else ln for ln in lines[i:j + 1]]


def _outputs(folder) -> dict:
    return {p.name: p.read_text() for p in folder.iterdir() if p.name.endswith(_KINDS)}


@pytest.mark.parametrize("case", sorted(_CASES))
def test_clock_sumt_matches_stored_mrbayes_output(case, tmp_path, monkeypatch):
    """Strict clock; free clock rate with tip calibrations (ages, conformat=simple, hpd=no, brparams);
    igr relaxed clock (allcompat): as MrBayes wrote them."""
    want = _FIXTURES / case
    for path in want.glob("*.t"):
        shutil.copy(path, tmp_path / path.name)
    screen = run_ours(tmp_path, _CASES[case], monkeypatch)
    assert _screen(screen, False) == (want / "screen.txt").read_text().split("\n")[:-1]
    stored = {p.name: p.read_text() for p in want.iterdir() if p.name.endswith(_KINDS)}
    assert stored and _outputs(tmp_path) == stored


def test_node_heights_carry_mrbayes_float_noise():
    """GetPolyDepths: heights are the largest root distance minus each node's, so tips at the same height
    may differ by rounding (MrBayes reports extant tips at heights like 3e-08); ages divide by the rate."""
    heights = node_depths(((0, 1), 2), [(1, 0.1), (2, 0.1), (3, 0.2), (4, 0.3), (7, float("nan"))])
    assert heights == [0.0, 0.0, 0.10000000000000003, 5.551115123125783e-17, 0.30000000000000004]
    assert node_ages(heights, 0.5) == [0.0, 0.0, 0.20000000000000007, 1.1102230246251566e-16, 0.6000000000000001]


def test_relaxed_clock_trees_with_deleted_taxa_are_refused(tmp_path, monkeypatch):
    """Pruning would have to merge the `[&B ...]` values of joined branches: not done yet."""
    stage(tmp_path, TEST_DATA / "primates.nex", *(_FIXTURES / "igr").glob("*.t"))
    with pytest.raises(NotImplementedYet, match="relaxed-clock trees with deleted taxa is not supported yet"):
        run_ours(tmp_path, "execute primates.nex;\ndelete 3;\nsumt filename=igr;", monkeypatch)


def test_cpp_event_trees_are_refused(tmp_path):
    """Compound-Poisson relaxed clocks write `[&E ...]` event counts: summarizing them is not done yet."""
    for run in (1, 2):
        text = (_FIXTURES / "igr" / ("igr.run%d.t" % run)).read_text().replace("[&B IgrBrlens", "[&E CppEvents")
        (tmp_path / ("c.run%d.t" % run)).write_text(text)
    settings = types.SimpleNamespace(sumt={"Nruns": 2, "Filename": str(tmp_path / "c")}, options={}, mcmc={})
    with pytest.raises(NotImplementedYet, match="compound-Poisson"):
        run_sumt(settings, None)


_MODELS = {"strict": "prset brlenspr=clock:uniform;",
           "free": "prset brlenspr=clock:uniform clockratepr=lognormal(0,0.1);",
           "bd": "prset brlenspr=clock:birthdeath;",
           "tk02": "prset brlenspr=clock:uniform clockvarpr=tk02;"}
_BLOCKS = ("sumt filename={m}{n};",
           "sumt filename={m} contype=allcompat conformat=simple minpartfreq=0.3 outputname=o{m}{n};",
           "sumt filename={m} hpd=no relburnin=no burnin=10 savebrparams=yes minbrparamfreq=0.3{n};",
           "delete 3 12;\n sumt filename={m}{n};")


@pytest.fixture(scope="module")
def clock_runs(tmp_path_factory, mb_double):
    """Short MrBayes clock runs of primates (2 runs each; nruns=1 for 'one')."""
    folder = stage(tmp_path_factory.mktemp("clock"), TEST_DATA / "primates.nex")
    for name, prior in list(_MODELS.items()) + [("one", _MODELS["strict"])]:
        run_mb(mb_double, folder, " execute primates.nex;\n set seed=21 swapseed=22;\n lset nst=2;\n %s\n"
               " mcmc ngen=1000 samplefreq=20 printfreq=1000 diagnfreq=500 nchains=2 nruns=%d filename=%s;"
               % (prior, 1 if name == "one" else 2, name), name="make_%s.nex" % name)
    return folder


@pytest.mark.parametrize("model", sorted(_MODELS) + ["one"])
def test_clock_sumt_matches_live_mrbayes(model, clock_runs, tmp_path, monkeypatch, mb_double):
    """Each model's runs through MrBayes' sumt and ours under four option sets (the last after `delete`,
    which prunes the trees): the same files, the same screen."""
    blocks = [b.format(m=model, n=" nruns=1" if model == "one" else "") for b in _BLOCKS
              if model != "tk02" or "delete" not in b]       # relaxed clocks' pruning is refused (below)
    for block in blocks:
        sides = {}
        for side in ("mb", "us"):
            sides[side] = stage(tmp_path / side / str(blocks.index(block)), TEST_DATA / "primates.nex")
            for path in list(clock_runs.glob(model + ".run*.t")) + list(clock_runs.glob(model + ".t")):
                shutil.copy(path, sides[side] / path.name)
        theirs = run_mb(mb_double, sides["mb"], " execute primates.nex;\n " + block)
        ours = run_ours(sides["us"], "execute primates.nex;\n" + block, monkeypatch)
        assert _screen(ours, False) == _screen(theirs, True), block
        made = _outputs(sides["mb"])
        assert made and _outputs(sides["us"]) == made, block
