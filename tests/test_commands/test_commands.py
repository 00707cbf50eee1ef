import pytest
from hypothesis import given, settings, strategies as st

from mbgpu.commands.params import resolve
from mbgpu.errors import CommandError, MbgpuError, NotImplementedYet
from tests.helpers import DNA4, interp_for, output


def run(tmp_path, block: str, data: str = DNA4):
    return interp_for(data + "begin mrbayes;\n" + block + "\nend;\n", tmp_path)


def test_resolution_exact_wins_then_unique_prefix():
    assert resolve("invg", ("Gamma", "Invgamma"), "value") == "Invgamma"
    assert resolve("Gamma", ("Gamma", "Gammadir"), "value") == "Gamma"
    with pytest.raises(CommandError, match="ambiguous value 'p' \\(could be: Propinv, Poisson\\)"):
        resolve("p", ("Propinv", "Poisson"), "value")
    with pytest.raises(CommandError, match="unknown value 'zz' \\(expected one of: A, B\\)"):
        resolve("zz", ("A", "B"), "value")


def test_lset_prset_abbreviations_and_case(tmp_path):
    it = run(tmp_path, "LSET NST=6 rates=invg ngam=8;\n prset statefreqpr=fixed(0.3,0.3,0.2,0.2) "
                       "shapepr=fixed(0.5) brlens=uncons:exp(10);")
    d = it.settings.divisions[0]
    assert d.lset["Nst"] == "6" and d.lset["Rates"] == "Invgamma" and d.lset["Ngammacat"] == 8
    assert str(d.prset["Statefreqpr"]) == "Fixed(0.3,0.3,0.2,0.2)"
    assert d.prset["Brlenspr"].kind == "Unconstrained" and d.prset["Brlenspr"].sub.args == (10.0,)


def test_mcmcp_stores_defaults_and_values(tmp_path):
    it = run(tmp_path, "mcmcp ngen=20000 nch=2 file=out;")
    assert it.settings.mcmc["Ngen"] == 20000 and it.settings.mcmc["Nchains"] == 2
    assert it.settings.mcmc["Samplefreq"] == 500 and it.settings.mcmc["Filename"] == "out"


@pytest.mark.parametrize("block, message", [
    ("lsett nst=6;", "unknown command 'lsett'"),
    ("s seed=1;", "ambiguous command 's'"),
    ("lset nsx=6;", "unknown parameter of lset 'nsx'"),
    ("lset n=6;", "ambiguous parameter of lset 'n'"),
    ("lset nst=5;", "unknown value for Nst '5'"),
    ("lset rates=invgamma ngammacat=x;", "ngammacat=x: it must be an integer"),
    ("prset shapepr=fixed(a);", "Shapepr: 'a' is not a number"),
    ("mcmc ngen=0;", "ngen=0 is out of range: it must be in \\[1, 2147483647\\]"),
    ("lset applyto=(3) nst=6;", "applyto=\\(3\\): there are only 1 divisions"),
    ("charset x = 1-9;", "outside 1-8"),
    ("charset x = 5-2;", "runs backwards"),
    ("startvals tau=nosuch;", "no tree of that name"),
    ("outgroup Zed;", "no taxon 'Zed'"),
    ("execute missing_file.nex;", "cannot open"),
    ("showmoves;", "the command showmoves is not supported yet"),
])
def test_bad_commands_give_located_errors(tmp_path, block, message):
    with pytest.raises(MbgpuError, match=message) as e:
        run(tmp_path, block)
    assert e.value.one_line().startswith(str(tmp_path / "in.nex") + ":13:")


def test_not_implemented_is_typed(tmp_path):
    with pytest.raises(NotImplementedYet):
        run(tmp_path, "showmoves;")


def test_sumt_without_files_names_the_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(MbgpuError, match="file not found") as e:
        run(tmp_path, "sumt filename=nosuchrun;")
    assert "nosuchrun.run1.t" in e.value.one_line()


def test_charset_partition_and_set_partition(tmp_path):
    it = run(tmp_path, "charset first = 1-.\\3; charset rest = 2-8\\3 3-8\\3;\n"
                       "partition bycodon = 2: first, rest; set partition=byc;\n"
                       "lset applyto=(2) nst=2; unlink shape=(all);")
    s = it.settings
    assert s.charsets["first"] == [0, 3, 6]
    assert [list(d.columns) for d in s.divisions] == [[0, 3, 6], [1, 2, 4, 5, 7]]
    assert s.divisions[0].lset["Nst"] == "1" and s.divisions[1].lset["Nst"] == "2"
    assert s.unlinked["Shape"] == (0, 1)
    with pytest.raises(CommandError, match="leaves character 2 out"):
        run(tmp_path, "partition p = 1: 1 3-8;")
    with pytest.raises(CommandError, match="character 1 is in parts 1 and 2"):
        run(tmp_path, "partition p = 2: 1-4, 1 5-8;")


def test_execute_is_relative_to_the_executing_file(tmp_path):
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "data.nex").write_text(DNA4)
    (sub / "run.nex").write_text("#NEXUS\nbegin mrbayes; execute data.nex;\n lset nst=2; end;\n")
    it = interp_for("#NEXUS\nbegin mrbayes; execute sub/run.nex; end;\n", tmp_path, "top.nex")
    assert it.settings.matrix.ntax == 4 and it.settings.divisions[0].lset["Nst"] == "2"


def test_help_is_generated_from_the_table(tmp_path):
    it = run(tmp_path, "help lset; help;")
    text = output(it)
    assert "Ngammacat" in text and "Equal/Gamma/LNorm/Propinv/Invgamma/" in text and "Adgamma/Kmixture" in text
    assert "Mcmcp" in text and "not supported yet" in text


def test_showmodel_and_log(tmp_path):
    it = run(tmp_path, "log start filename=run.log replace; lset nst=6; showmodel; log stop;")
    log = (tmp_path / "run.log").read_text()
    assert "      Data not partitioned --" in log and "         Nst       = 6" in log


def test_exclude_changes_patterns(tmp_path):
    from mbgpu.analysis import division_pattern_sets

    it = run(tmp_path, "exclude 5-8;")
    sets = division_pattern_sets(it.settings)
    assert sum(p.weights.sum() for p in sets[0]) == 4


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["lset", "prset", "mcmcp", "set", "charset", "partition", "nst", "=", "6", "(",
                                 ")", ",", ":", "fixed", "all", "applyto", "rates", "g", "x", "1-3", "\\", "2",
                                 "'q'", "outgroup", "startvals", "tau", "help", "exclude", "unlink"]),
                max_size=12))
def test_fuzz_command_parser_raises_only_our_errors(tmp_path_factory, words):
    from mbgpu.errors import Quit
    from mbgpu.console import Console
    import io

    tmp = tmp_path_factory.mktemp("fz")
    it = interp_for(DNA4, tmp)
    it.console = Console(io.StringIO())
    try:
        it.run_text(" ".join(words) + ";")
    except (MbgpuError, Quit):
        pass


@pytest.mark.parametrize("command", ["mcmcp ngen=10;", "ssp nsteps=4;"])
def test_mcmcp_and_ssp_settings_need_a_matrix(command, tmp_path):
    """MrBayes 3.2.7a: 'A character matrix must be defined first' at mcmcp's or ssp's first parameter."""
    with pytest.raises(CommandError, match="needs a data matrix"):
        interp_for("#NEXUS\nbegin mrbayes;\n%s\nend;\n" % command, tmp_path)
