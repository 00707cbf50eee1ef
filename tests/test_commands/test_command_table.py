"""Every option of the command table is either implemented, with a named test that checks it against
MrBayes, or refused with `file:line:col: error: ... is not supported yet`. Nothing is accepted and
ignored: a new option fails here until it is given evidence or `supported=` in the table.
"""
import ast
import shutil
import subprocess
from pathlib import Path

import pytest

from mbgpu.commands.params import Choice, Divisions, Float, Int, Numbers, Prior, Text
from mbgpu.commands.table import build_table
from mbgpu.errors import NotImplementedYet
from tests.conftest import TEST_DATA
from tests.helpers import DNA4, interp_for, output

TESTS = Path(__file__).resolve().parent.parent

# Implemented options -> the test that shows it does what MrBayes does ("file.py::test_name"). Where
# MrBayes' numbers cannot be compared one for one (random streams, file names, timing), the test checks
# the behaviour MrBayes documents; those are marked (B).
_ORACLE_LNL = "test_oracles.py::test_gen0_lnl_matches_mrbayes_double"
_ORACLE_PRIOR = "test_oracles.py::test_gen0_prior_and_header_match_mrbayes"
_SUMP = "test_summary/test_summary.py::test_sump_writes_mrbayes_pstat_and_lstat"
_SUMT = "test_summary/test_summary.py::test_sumt_writes_mrbayes_files"
_SCREEN = "test_sampler/test_runs.py::test_screen_output_like_mrbayes"
_TREEPROBS = "test_summary/test_sumt_treeprobs.py::test_showtreeprobs_and_brparams_match_mrbayes"
_DIAG = "test_diagnostics.py::test_asdsf_from_reference_trees_matches_mcmc_file"
_RESUME = "test_checkpoint/test_resume.py::test_append_is_byte_identical"
_PARTS = "test_commands/test_commands.py::test_charset_partition_and_set_partition"
_SWAPS = "test_commands/test_command_table.py::test_swapfreq_and_nswaps_make_as_many_swap_attempts_as_mrbayes"
EVIDENCE = {
    ("set", "Seed"): "test_sampler/test_runs.py::test_same_seed_gives_byte_identical_files",  # (B)
    ("set", "Swapseed"): "test_sampler/test_runs.py::test_same_seed_gives_byte_identical_files",  # (B)
    ("set", "Dir"): "test_commands/test_command_table.py::test_set_dir_puts_output_there",  # (B)
    ("set", "Partition"): _PARTS,
    ("set", "Quitonerror"): "test_cli.py::test_interactive_quitonerror_stops",
    ("set", "Nowarnings"): "test_output/test_overwrite.py::test_no_keeps_the_earlier_files",  # (B)
    ("set", "Scientific"): _ORACLE_LNL, ("set", "Precision"): _ORACLE_LNL,
    ("set", "Usebeagle"): "test_cuda/test_select.py::test_decision_table",
    ("set", "Beagledevice"): "test_cuda/test_select.py::test_decision_table",
    ("set", "Beagleprecision"): "test_cuda/test_select.py::test_decision_table",
    ("set", "Beaglescaling"): "test_cuda/test_select.py::test_decision_table",
    ("set", "Sitesplit"): "test_mpi/test_mpiexec.py::test_site_split_matches_unsplit",
    ("set", "Backend"): "test_cuda/test_select.py::test_decision_table",   # mbgpu only (MrBayes has none)
    ("lset", "Applyto"): _ORACLE_PRIOR, ("lset", "Nucmodel"): _ORACLE_LNL, ("lset", "Nst"): _ORACLE_LNL,
    ("lset", "Rates"): _ORACLE_LNL, ("lset", "Ngammacat"): _ORACLE_LNL, ("lset", "Coding"): _ORACLE_LNL,
    ("prset", "Applyto"): _ORACLE_PRIOR, ("prset", "Tratiopr"): _ORACLE_PRIOR, ("prset", "Revmatpr"): _ORACLE_LNL,
    ("prset", "Aamodelpr"): _ORACLE_LNL, ("prset", "Statefreqpr"): _ORACLE_LNL, ("prset", "Shapepr"): _ORACLE_LNL,
    ("prset", "Pinvarpr"): _ORACLE_LNL, ("prset", "Brlenspr"): _ORACLE_PRIOR,
    ("prset", "Topologypr"): "test_sampler/test_constraint_runs.py::test_gen0_log_prior_matches_mrbayes",
    ("prset", "Ratepr"): _ORACLE_PRIOR,
    ("mcmc", "Ngen"): _SCREEN, ("mcmc", "Nruns"): _SCREEN, ("mcmc", "Nchains"): _SCREEN,
    ("mcmc", "Temp"): "test_commands/test_command_table.py::test_temp_sets_the_heats_as_mrbayes_does",
    ("mcmc", "Swapfreq"): _SWAPS, ("mcmc", "Nswaps"): _SWAPS, ("mcmc", "Samplefreq"): _SCREEN,
    ("mcmc", "Printfreq"): _SCREEN, ("mcmc", "Mcmcdiagn"): _SCREEN, ("mcmc", "Diagnfreq"): _SCREEN,
    ("mcmc", "Diagnstat"): _DIAG, ("mcmc", "Minpartfreq"): _DIAG, ("mcmc", "Relburnin"): _DIAG,
    ("mcmc", "Burnin"): _DIAG, ("mcmc", "Burninfrac"): _DIAG,
    ("mcmc", "Stoprule"): "test_commands/test_command_table.py::test_stoprule_stops_at_the_first_diagnostic_below",
    ("mcmc", "Stopval"): "test_commands/test_command_table.py::test_stoprule_stops_at_the_first_diagnostic_below",
    ("mcmc", "Checkpoint"): _RESUME, ("mcmc", "Checkfreq"): _RESUME, ("mcmc", "Append"): _RESUME,
    ("mcmc", "Filename"): _SCREEN,
    ("mcmc", "Data"): "test_sampler/test_prior_sampling.py::test_prior_is_recovered",
    ("mcmc", "Autotune"): "test_moves/test_proposals.py::test_autotune_follows_mrbayes_rule",
    ("mcmc", "Printall"): "test_sampler/test_start_options.py::test_printall_and_printmax_screen_lines_like_mrbayes",
    ("mcmc", "Printmax"): "test_sampler/test_start_options.py::test_printall_and_printmax_screen_lines_like_mrbayes",
    ("mcmc", "Allchains"): "test_sampler/test_heat_stats.py::test_allchains_and_allcomps_like_mrbayes",
    ("mcmc", "Allcomps"): "test_sampler/test_heat_stats.py::test_allcomps_maxstddev_header_like_mrbayes",
    ("mcmc", "Starttree"): "test_sampler/test_start_options.py::test_starttree_parsimony_builds_short_trees_like_mrbayes",
    ("mcmc", "Nperts"): "test_sampler/test_start_options.py::test_nperts_perturbs_the_user_tree_by_nnis",
    ("mcmc", "Startparams"): "test_sampler/test_start_options.py::test_startparams_reset_ignores_startvals_of_parameters",
    ("mcmc", "Savetrees"): "test_sampler/test_start_options.py::test_savetrees_changes_no_output",  # (B)
    ("mcmc", "Tunefreq"): "test_moves/test_proposals.py::test_autotune_follows_mrbayes_rule",
    ("mcmc", "Ordertaxa"): "test_output/test_ordertaxa.py::test_gen0_tree_like_mrbayes",
    ("mcmc", "Reweight"): "test_sampler/test_reweight.py::test_cold_chain_posterior_and_swap_rates_match_mrbayes",
    ("sump", "Relburnin"): _SUMP, ("sump", "Burnin"): _SUMP, ("sump", "Burninfrac"): _SUMP, ("sump", "Nruns"): _SUMP,
    ("sump", "Filename"): _SUMP, ("sump", "Outputname"): _SUMP, ("sump", "Hpd"): _SUMP,
    ("sumt", "Relburnin"): _SUMT, ("sumt", "Burnin"): _SUMT, ("sumt", "Burninfrac"): _SUMT, ("sumt", "Nruns"): _SUMT,
    ("sumt", "Filename"): _SUMT, ("sumt", "Minpartfreq"): _SUMT, ("sumt", "Contype"): _SUMT,
    ("sumt", "Conformat"): "test_summary/test_sumt_formats.py::test_credible_sets_and_simple_consensus_match_mrbayes",
    ("sumt", "Outputname"): _SUMT, ("sumt", "Calctreeprobs"): _SUMT, ("sumt", "Hpd"): _SUMT,
    ("sumt", "Ntrees"): "test_summary/test_sumt_ntrees.py::test_ntrees_matches_mrbayes",
    ("sumt", "Showtreeprobs"): _TREEPROBS, ("sumt", "Savebrparams"): _TREEPROBS, ("sumt", "Minbrparamfreq"): _TREEPROBS,
    ("startvals", "Tau"): _ORACLE_LNL, ("startvals", "V"): _ORACLE_LNL, ("startvals", "Ratemultiplier"): _ORACLE_LNL,
    ("log", "Start"): "test_commands/test_command_table.py::test_log_start_stop_append_replace",
    ("log", "Stop"): "test_commands/test_command_table.py::test_log_start_stop_append_replace",
    ("log", "Filename"): "test_commands/test_command_table.py::test_log_start_stop_append_replace",
    ("log", "Append"): "test_commands/test_command_table.py::test_log_start_stop_append_replace",
    ("log", "Replace"): "test_commands/test_command_table.py::test_log_start_stop_append_replace",
    ("report", "Applyto"): "test_output/test_site_reports.py::test_standard_data_columns_like_mrbayes",
    ("report", "Ancstates"): "test_output/test_site_reports.py::test_ancestral_states_like_mrbayes",
    ("report", "Tratio"): "test_output/test_report_formats.py::test_formats_convert_mrbayes_samples_as_mrbayes_writes_them",
    ("report", "Revmat"): "test_output/test_report_formats.py::test_formats_convert_mrbayes_samples_as_mrbayes_writes_them",
    ("report", "Ratemult"): "test_output/test_report_formats.py::test_header_and_gen0_like_mrbayes",
    ("report", "Siterates"): "test_output/test_site_reports.py::test_site_rates_are_posterior_mean_rates",
}
# The clock settings: accepted, echoed and built into mbgpu.clock.model.ClockModel and the .p header as
# MrBayes builds them (mb-double's header, Gen-0 values and echo lines); `mcmc`/`ss` still refuse a clock
# tree (test_mcmc_and_ss_refuse_a_clock_tree_at_the_command), and without one they change nothing.
_CLOCK = "test_clock/test_model.py::test_header_start_values_and_echo_like_mrbayes"
for _p in ("Treeagepr", "Speciationpr", "Extinctionpr", "Fossilizationpr", "Samplestrat", "Sampleprob",
           "Popsizepr", "Nodeagepr", "Clockratepr", "Clockvarpr", "Cppratepr", "TK02varpr", "Igrvarpr"):
    EVIDENCE[("prset", _p)] = _CLOCK
EVIDENCE[("prset", "Cppmultdevpr")] = "test_clock/test_model.py::test_every_clock_option_echoes_as_in_mrbayes"
EVIDENCE[("lset", "Ploidy")] = "test_clock/test_model.py::test_clock_settings_leave_an_unconstrained_analysis_alone"
for _p in ("Tratio", "Revmat", "Statefreq", "Shape", "Pinvar", "Ratemultiplier"):
    EVIDENCE[("link", _p)] = EVIDENCE[("unlink", _p)] = _ORACLE_PRIOR
EVIDENCE[("link", "Topology")] = EVIDENCE[("unlink", "Topology")] = \
    "test_sampler/test_unlinked_trees.py::test_three_trees_score_as_mrbayes_scores_them"
EVIDENCE[("link", "Brlens")] = EVIDENCE[("unlink", "Brlens")] = \
    "test_sampler/test_unlinked_trees.py::test_trees_sharing_a_topology_score_as_mrbayes_scores_them"
for _key in [k for k in EVIDENCE if k[0] == "mcmc"]:
    EVIDENCE[("mcmcp", _key[1])] = EVIDENCE[_key]
    EVIDENCE[("ss", _key[1])] = EVIDENCE[("ssp", _key[1])] = EVIDENCE[_key]    # ss runs mcmc's sampler
_SS = "test_sampler/test_stepping_stone.py::test_ss_file_and_screen_lines_match_mrbayes"
for _p in ("Alpha", "Burninss", "Nsteps", "Fromprior"):
    EVIDENCE[("ss", _p)] = EVIDENCE[("ssp", _p)] = _SS
EVIDENCE[("ss", "Append")] = EVIDENCE[("ssp", "Append")] = \
    "test_checkpoint/test_ss_resume.py::test_a_stopped_run_continues_exactly"
for _p in ("Allruns", "Relburnin", "Burnin", "Burninfrac", "Discardfrac", "Filename", "Nruns", "Steptoplot",
           "Smoothing"):
    EVIDENCE[("sumss", _p)] = "test_summary/test_sumss.py::test_sumss_matches_mrbayes_on_its_files"

# Options that also apply to one tree of several (`prset applyto=(k) ...` with `unlink topology`/`brlens`)
# -> the test that checks them per tree against MrBayes (beside their one-tree evidence above).
PER_TREE = {
    ("prset", "Topologypr"):
        "test_sampler/test_per_tree_priors.py::test_per_tree_priors_score_as_mrbayes_scores_them",
    ("prset", "Brlenspr"):
        "test_sampler/test_per_tree_priors.py::test_per_tree_priors_score_as_mrbayes_scores_them",
}

# Commands without options that print one of MrBayes' screens -> the test that compares it with MrBayes.
SCREENS = {
    "charstat": "test_commands/test_ctype.py::test_charstat_like_mrbayes",
    "taxastat": "test_commands/test_delete.py::test_taxastat_like_mrbayes",
    "showmatrix": "test_commands/test_showmatrix.py::test_matches_mrbayes",
}

# Commands whose words the table does not list (propset's NAME$PARAM=VALUE) -> the test against MrBayes.
FREE_FORM = {
    "propset": "test_commands/test_propset.py::test_move_list_and_mcmc_header_like_mrbayes",
    "calibrate": "test_clock/test_model.py::test_calibrate_errors_like_mrbayes",
}

# Options that do not change an analysis in MrBayes either: BEAGLE's resource and threading choices, and
# the questions MrBayes asks at an interactive prompt that mbgpu does not ask (it behaves as `mb FILE` does).
INERT = {
    ("set", "Beagleresource"): "BEAGLE resource number: which device, not what is computed",
    ("set", "Beaglesse"): "BEAGLE's SSE switch: speed only", ("set", "Beaglethreads"): "BEAGLE threading: speed only",
    ("set", "Beaglethreadcount"): "BEAGLE threading: speed only",
    ("set", "Beaglefloattips"): "BEAGLE's tip storage: speed only",
    ("set", "Autoclose"): "interactive question after mcmc; `mb FILE` never asks, nor does mbgpu",
    ("set", "Autoreplace"): "interactive question before overwriting; `mb FILE` never asks, nor does mbgpu",
    ("sumss", "Askmore"): "MrBayes' interactive menu after sumss (more tables and plots); mbgpu never asks",
}

# A value for each refused option that the table accepts syntactically (priors need arguments).
PRIOR_EXAMPLES = {
    "Aamodelpr": "mixed", "Topologypr": "speciestree", "Brlenspr": "clock:speciestree",
    "Symdirihyperpr": "exponential(2)", "Cppmultdevpr": "fixed(0.5)", "Clockratepr": "exponential(2)",
    "Generatepr": "variable", "Omegapr": "fixed(2)", "M3omegapr": "fixed(2)", "Codoncatfreqs": "fixed(0.2,0.3,0.5)",
    "Aarevmatpr": "fixed(2)", "Ny98omega1pr": "fixed(0.5)", "Ny98omega3pr": "fixed(2)",
    "Ratecorrpr": "fixed(0.5)", "Covswitchpr": "fixed(2)", "Treeagepr": "fixed(2)", "Speciationpr": "fixed(2)",
    "Extinctionpr": "fixed(0.5)", "Fossilizationpr": "fixed(0.5)", "Popsizepr": "fixed(2)",
    "Cppratepr": "fixed(2)", "TK02varpr": "fixed(2)", "Igrvarpr": "fixed(2)",
}


def _table_keys():
    for name, spec in build_table().items():
        for p in spec.params:
            yield name, p


def _refused_value(name, p) -> str | None:
    """A value of `p` the table parses but mbgpu refuses, or None when every value is supported."""
    if p.supported is None:
        return None
    if isinstance(p, Prior):
        return PRIOR_EXAMPLES[p.name]
    if isinstance(p, Choice):
        bad = [c for c in p.choices if p.unsupported(c) is not None]
        return bad[0] if bad else None
    if isinstance(p, Divisions):
        return "(all)"
    if isinstance(p, Int):
        return str(p.default + 1)
    if isinstance(p, Float):
        return str(p.default / 2 if p.default else 0.5)
    if isinstance(p, Numbers):
        return "(10,5)"
    assert isinstance(p, Text), p
    return "x"


def _test_exists(ref: str) -> bool:
    path, _, func = ref.partition("::")
    tree = ast.parse((TESTS / path).read_text())
    return any(isinstance(n, ast.FunctionDef) and n.name == func for n in tree.body)


REFUSED = [(n, p) for n, p in _table_keys() if _refused_value(n, p) is not None]


def test_every_option_is_implemented_or_refused():
    missing, stale = [], []
    for name, p in _table_keys():
        key = (name, p.name)
        fully = p.supported is None
        if key in INERT:
            assert fully, "%s is refused and listed as inert" % (key,)
            continue
        if key in EVIDENCE:
            if p.supported == ():
                stale.append(key)
            elif not _test_exists(EVIDENCE[key]):
                missing.append("%s -> %s (no such test)" % (key, EVIDENCE[key]))
        elif fully or callable(p.supported) or p.supported != ():
            missing.append("%s: neither evidence against MrBayes nor supported= in the table" % (key,))
    assert not missing, "\n".join(missing)
    assert not stale, "refused options with evidence listed (remove it): %s" % stale


def test_per_tree_options_are_implemented_and_checked():
    keys = {(name, p.name) for name, p in _table_keys()}
    for key, ref in PER_TREE.items():
        assert key in keys and key in EVIDENCE, key
        assert _test_exists(ref), "%s -> %s (no such test)" % (key, ref)


def test_screens_are_implemented_and_checked():
    table = build_table()
    for name, ref in SCREENS.items():
        assert table[name].implemented and not table[name].params, name
        assert _test_exists(ref), "%s -> %s (no such test)" % (name, ref)


def test_free_form_commands_are_implemented_and_checked():
    table = build_table()
    for name, ref in FREE_FORM.items():
        assert table[name].implemented and not table[name].params, name
        assert _test_exists(ref), "%s -> %s (no such test)" % (name, ref)


@pytest.mark.parametrize("name, p", REFUSED, ids=["%s-%s" % (n, p.name) for n, p in REFUSED])
def test_refused_options_say_not_supported_yet_at_the_value(tmp_path, name, p):
    name = "mcmcp" if name == "mcmc" else name   # the same parameters; mcmcp would not run anything
    command = "%s %s=%s;" % (name, p.name.lower(), _refused_value(name, p))
    with pytest.raises(NotImplementedYet) as e:
        interp_for(DNA4 + "begin mrbayes;\n  " + command + "\nend;\n", tmp_path)
    line = e.value.one_line()
    assert line.startswith(str(tmp_path / "in.nex") + ":13:"), line
    assert line.endswith("is not supported yet"), line
    assert "%s %s=" % (name, p.name.lower()) in line


@pytest.mark.parametrize("command", [
    "ctype irreversible: 1-3;", "ctype dollo: all;",
])
def test_refused_commands(tmp_path, command):
    with pytest.raises(NotImplementedYet, match="is not supported yet"):
        interp_for(DNA4 + "begin mrbayes;\n  " + command + "\nend;\n", tmp_path)


@pytest.mark.parametrize("kind", ["unordered", "ordered"])
def test_ctype_is_accepted(tmp_path, kind):
    """On DNA it changes nothing (MrBayes: DNA characters must be unordered); tests/test_commands/test_ctype.py
    checks standard data against MrBayes."""
    it = interp_for(DNA4 + "begin mrbayes;\n  ctype %s: 1-3;\nend;\n" % kind, tmp_path)
    assert not it.settings.ordered


def test_set_dir_puts_output_there(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "out").mkdir()
    interp_for(DNA4 + "begin mrbayes; set seed=1 swapseed=1 dir=out;\n"
               " mcmc ngen=20 nruns=1 nchains=1 samplefreq=10 printfreq=10 checkpoint=no; end;\n", tmp_path)
    assert (tmp_path / "out" / "in.nex.p").is_file() and not (tmp_path / "in.nex.p").exists()


def test_stoprule_stops_at_the_first_diagnostic_below(tmp_path, monkeypatch):
    """MrBayes' rule: with stoprule=yes the run ends at the first diagnostics line whose average standard
    deviation of split frequencies (the .mcmc file's last column) is below stopval."""
    monkeypatch.chdir(tmp_path)
    interp_for(DNA4 + "begin mrbayes; set seed=3 swapseed=3;\n mcmc ngen=100000 nruns=2 nchains=1 samplefreq=10 "
               "printfreq=100 diagnfreq=100 stoprule=yes stopval=0.03 checkpoint=no; end;\n", tmp_path)
    rows = [l.split("\t") for l in (tmp_path / "in.nex.mcmc").read_text().splitlines() if l[:1].isdigit()]
    stats = [float(r[-1]) for r in rows]
    assert len(stats) >= 3, stats          # a seed whose first diagnostics are above stopval
    assert stats[-1] < 0.03 and min(stats[:-1]) >= 0.03 and int(rows[-1][0]) < 100000
    last = (tmp_path / "in.nex.run1.p").read_text().splitlines()[-1]
    assert last.split("\t")[0] == rows[-1][0]


def test_log_start_stop_append_replace(tmp_path):
    interp_for(DNA4 + "begin mrbayes; log start filename=a.log; showmodel; log stop; showmodel;\n"
               " log start filename=a.log append; outgroup B; log stop; end;\n", tmp_path)
    text = (tmp_path / "a.log").read_text()
    assert "Setting outgroup to taxon \"B\"" in text and text.count("Model settings") == 1
    interp_for(DNA4 + "begin mrbayes; log start filename=a.log replace; outgroup C; log stop; end;\n", tmp_path)
    assert "outgroup to taxon \"C\"" in (tmp_path / "a.log").read_text()
    assert "Model settings" not in (tmp_path / "a.log").read_text()


def _heat_table(text: str) -> list[str]:
    lines = [l.strip() for l in text.splitlines()]
    start = lines.index("ID -- Heat")
    return [l for l in lines[start:lines.index("Heat = 1 / (1 + T * (ID - 1))", start) + 2] if l]


def _swap_attempts(text: str) -> int:
    """The sum of the lower diagonal of the 'Chain swap information' table: swap attempts made."""
    lines = text.splitlines()
    start = next(i for i, l in enumerate(lines) if "Chain swap information" in l)
    total = 0
    for line in lines[start + 4:]:
        if "|" not in line:
            break
        total += sum(int(w) for w in line.split("|")[1].split() if w.isdigit())
    return total


def _screens(mb, tmp_path, monkeypatch, mcmc: str) -> tuple[str, str]:
    """(MrBayes' screen, mbgpu's) for the same primates run; `mcmc` holds the options under test."""
    block = ("begin mrbayes; set autoclose=yes nowarn=yes seed=1 swapseed=1; execute primates.nex;\n"
             " mcmc ngen=%s samplefreq=10 printfreq=10 filename=%%s; end;\n" % mcmc)
    shutil.copy(TEST_DATA / "primates.nex", tmp_path)
    (tmp_path / "mb.nex").write_text("#NEXUS\n" + block % "theirs")
    done = subprocess.run([str(mb), "mb.nex"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-1500:]
    monkeypatch.chdir(tmp_path)
    return done.stdout, interp_for("#NEXUS\n" + block % "ours", tmp_path, "ours.nex").console.stream.getvalue()


def test_temp_sets_the_heats_as_mrbayes_does(mb, tmp_path, monkeypatch):
    """mcmc temp=0.25 nchains=4: the end-of-run heat table equals MrBayes' (heat = 1 / (1 + T (ID - 1)))."""
    theirs, ours = _screens(mb, tmp_path, monkeypatch, "20 nruns=1 nchains=4 temp=0.25")
    assert _heat_table(ours) == _heat_table(theirs)
    assert "0.67" in " ".join(_heat_table(ours))       # chain 3: 1 / (1 + 0.25 * 2)


def test_swapfreq_and_nswaps_make_as_many_swap_attempts_as_mrbayes(mb, tmp_path, monkeypatch):
    """swapfreq=2 nswaps=3 over 40 generations: 60 attempts in MrBayes' swap table and in ours."""
    theirs, ours = _screens(mb, tmp_path, monkeypatch, "40 nruns=1 nchains=3 swapfreq=2 nswaps=3")
    assert _swap_attempts(ours) == _swap_attempts(theirs) == 60


_NO_SPLITS = ("begin mrbayes; set seed=3 swapseed=4;\n mcmc data=no nruns=2 nchains=1 ngen=2000 samplefreq=10 "
              "diagnfreq=1000 printfreq=1000 minpartfreq=0.5 stoprule=yes stopval=0.05 diagnstat=%s; end;\n")


def _no_split_rows(folder: Path, stem: str) -> list[str]:
    return [l.split("\t")[-1] for l in (folder / (stem + ".mcmc")).read_text().splitlines() if l[:1].isdigit()]


@pytest.mark.parametrize("stat, written", [("avgstddev", "-nan"), ("maxstddev", "0.000000")])
def test_no_split_above_minpartfreq_is_na_and_does_not_stop(tmp_path, monkeypatch, stat, written):
    """Where no split reaches minpartfreq (the prior on 12 taxa, minpartfreq 0.5) MrBayes prints NA,
    writes the average as -nan and the maximum as 0, and its stop rule does not fire (checked with
    mb-double below); mbgpu used to write 0 and stop at once."""
    monkeypatch.chdir(tmp_path)
    shutil.copy(TEST_DATA / "primates.nex", tmp_path / "primates.nex")
    it = interp_for("#NEXUS\nbegin mrbayes; execute primates.nex; end;\n" + _NO_SPLITS % stat, tmp_path)
    assert output(it).count("split frequencies: NA (no splits above min. frequency)") == 2
    assert _no_split_rows(tmp_path, "primates.nex") == [written, written]


def test_no_split_above_minpartfreq_in_mrbayes(tmp_path, mb_double):
    """The behaviour above, seen in MrBayes 3.2.7a itself."""
    shutil.copy(TEST_DATA / "primates.nex", tmp_path / "primates.nex")
    for stat, written in (("avgstddev", "-nan"), ("maxstddev", "0.000000")):
        (tmp_path / "f.nex").write_text("#NEXUS\nbegin mrbayes; execute primates.nex; end;\n" + _NO_SPLITS % stat)
        out = subprocess.run([str(mb_double), "f.nex"], cwd=tmp_path, capture_output=True, text=True).stdout
        assert out.count("split frequencies: NA (no splits above min. frequency)") == 2
        assert _no_split_rows(tmp_path, "primates.nex") == [written, written]
