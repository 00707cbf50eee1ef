"""A clock tree's `.t` file and `.p` row (mbgpu.output.clock_trees through TFileWriter / PFileWriter) against
mb-double's Gen-0 files, byte for byte, on the same start tree: the commands parsed by the Interpreter,
`clock_models`, `clock_start` (its written child order and branch lengths), the values MrBayes starts from
(its random draws read from its row) and `ln_prior` for LnPr; LnL is copied from MrBayes' row (JC)."""
from __future__ import annotations

import io
import re
import shutil

import numpy as np
import pytest

from mbgpu.clock.log_prior import ln_prior, parameter_values
from mbgpu.clock.model import clock_models
from mbgpu.clock.rooted import children
from mbgpu.clock.start_tree import clock_start
from mbgpu.output import clock_trees as ct
from mbgpu.output.paramnames import clock_pfile_header
from mbgpu.output.pfile import PFileWriter
from mbgpu.output.tfile import TFileWriter
from mbgpu.parameters import free_parameters, parameter_values as substitution_values
from mbgpu.tree_groups import tree_groups
from tests.helpers import interp_for
from tests.test_clock.gen0 import SETUP, gen0
from tests.test_clock.trees import DATA, T1, T2, T3, T4

UNIFORM = "prset brlenspr=clock:uniform"
APES = "taxset apes = Homo_sapiens Pan Gorilla Pongo Hylobates; constraint apes = apes;"
PARTS = "charset a = 1-400; charset b = 401-898; partition p = 2: a, b; set partition=p; "
FOSSILS = "prset brlenspr=clock:fossilization nodeagepr=calibrated; calibrate Tarsius_syrichta=fixed(0.1) "
SAMPLED_ANCESTOR = T4.replace("Lemur_catta:0.5", "Lemur_catta:0.0")          # Lemur on a zero-length branch
T1_REVERSED = ("(Tarsius_syrichta:0.65,(Lemur_catta:0.55,(Saimiri_sciureus:0.4,((M_sylvanus:0.1,(M_fascicularis:0.06,"
               "(M_mulatta:0.03,Macaca_fuscata:0.03):0.03):0.04):0.12,(Hylobates:0.18,(Pongo:0.12,(Gorilla:0.07,"
               "(Pan:0.05,Homo_sapiens:0.05):0.02):0.05):0.06):0.04):0.18):0.15):0.1);")
STARTVALS = re.compile(r"startvals relative_fossilization=\(([^)]*)\);")

CASES = {
    "strict": (UNIFORM + ";", T1),
    "written_order": (UNIFORM + ";", T1_REVERSED),
    "nearly_ultrametric": (UNIFORM + ";", T1.replace("Pan:0.05", "Pan:0.0509")),   # lengths as written
    "free_clockrate": (UNIFORM + " clockratepr=lognormal(-1,0.5);", T2),
    "birthdeath": ("prset brlenspr=clock:birthdeath;", T1),
    "coalescence": ("prset brlenspr=clock:coalescence popsizepr=gamma(2,4);", T3),
    "fossil_tips": (FOSSILS + "Lemur_catta=fixed(0.05);", T4),
    "sampled_ancestor": (FOSSILS + "Lemur_catta=fixed(0.55);", SAMPLED_ANCESTOR),
    "sampled_ancestor_first": (FOSSILS + "Lemur_catta=fixed(0.55);",
                               T1_REVERSED.replace("Lemur_catta:0.55", "Lemur_catta:0.0")
                               .replace("Tarsius_syrichta:0.65", "Tarsius_syrichta:0.55")),
    "fossil_shifts": (FOSSILS + "Lemur_catta=fixed(0.55); prset samplestrat=random 2: 0.55 0.2; "
                      "startvals relative_fossilization=(0.2,0.05,0.3);", SAMPLED_ANCESTOR),
    "calibrated_fixed_rate": (APES + " " + UNIFORM + " topologypr=constraints(apes) nodeagepr=calibrated; "
                              "calibrate apes=fixed(0.18);", T1),
    "calibrated_free_rate": (APES + " " + UNIFORM + " topologypr=constraints(apes) nodeagepr=calibrated "
                             "clockratepr=exponential(2); calibrate apes=uniform(0.1,0.4);", T1),
    "tip_dates": (UNIFORM + " nodeagepr=calibrated; calibrate Tarsius_syrichta=fixed(0.1) Lemur_catta=fixed(0.05);",
                  T4),
    "igr": (UNIFORM + " clockvarpr=igr;", T1),
    "igr_free_rate_drawn_variance": (UNIFORM + " clockvarpr=igr igrvarpr=uniform(0.1,2) clockratepr=exponential(2);",
                                     T2),
    "tk02": (UNIFORM + " clockvarpr=tk02;", T1),
    "cpp": (UNIFORM + " clockvarpr=cpp;", T1),
    "two_divisions_igr": (PARTS + "prset applyto=(all) brlenspr=clock:uniform clockvarpr=igr "
                          "clockratepr=exponential(2); prset applyto=(all) statefreqpr=fixed(equal);", T2),
    "two_divisions_fbd_cpp": (PARTS + "prset applyto=(all) brlenspr=clock:fossilization clockvarpr=cpp; "
                              "prset applyto=(all) statefreqpr=fixed(equal);", T2),
    "fixed_format_tk02": ("set scientific=no precision=10; " + UNIFORM + " clockratepr=lognormal(-1,0.5) "
                          "clockvarpr=tk02;", T2),
    "ordertaxa": ("mcmcp ordertaxa=yes; prset brlenspr=clock:birthdeath;", T1),
    "ordertaxa_outgroup_inside": ("mcmcp ordertaxa=yes; outgroup Pan; prset brlenspr=clock:birthdeath;", T1),
}


def _settings(tmp_path, commands: str, newick: str):
    """The Settings after the commands and `startvals tau=t1 v=t1` of gen0's file, run by mbgpu."""
    shutil.copy(DATA, tmp_path / "primates.nex")
    it = interp_for("#NEXUS\nbegin mrbayes; execute primates.nex; end;\nbegin trees; tree t1 = [&R] %s\nend;\n"
                    "begin mrbayes; %s %s startvals tau=t1 v=t1;\nend;\n" % (newick, SETUP, commands), tmp_path)
    return it.settings


def _gen0_files(s, model, state, values: dict, run_id: int, lnl: float, lnpr: float) -> tuple[str, str]:
    """mbgpu's .t (header and the gen.0 line) and .p (header and the Gen-0 row) of this start state."""
    sci, prec = s.options["Scientific"] == "Yes", int(s.options["Precision"])
    kids = state.written_kids
    if s.mcmc.get("Ordertaxa", "No") == "Yes":
        kids = ct.order_taxa_root(kids, state.parent, state.n_tips, s.outgroup)
    n = state.parent.shape[0]
    eff = state.brlen.copy()                          # Gen 0: every branch rate 1
    events = np.zeros(n, dtype=np.int64) if model.clock_var == "cpp" else None
    text = ct.clock_tree_text(state.parent, kids, state.depth, state.n_tips, lengths=state.brlen,
                              clock_rate=state.clock_rate if ct.prints_clock_rate(model) else None,
                              branch_set=ct.branch_set_name(model, len(s.divisions)), eff=eff, n_events=events,
                              scientific=sci, precision=prec)
    t = io.StringIO()
    TFileWriter(t, run_id, s.matrix.taxa, param=tree_groups(s).param_name(0)).clock_tree(0, text)
    params = free_parameters(s)
    labels = clock_pfile_header(s, params, [model])
    head, tail = ct.clock_pfile_values(model, state.parent, kids, state.depth, state.n_tips, values,
                                       lengths=state.brlen, n_events=events)
    p = io.StringIO()
    writer = PFileWriter(p, run_id, [c for c in labels if c], scientific=sci, precision=prec, labels=labels)
    writer.row(0, lnl, lnpr, head + substitution_values(params) + tail)
    return t.getvalue(), p.getvalue()


def _mrbayes_gen0(text: str, first: str) -> str:
    """A MrBayes file up to its Gen-0 line (the line starting with `first`)."""
    lines = text.splitlines(keepends=True)
    end = next(i for i, ln in enumerate(lines) if ln.startswith(first))
    return "".join(lines[:end + 1])


@pytest.mark.parametrize("case", list(CASES))
def test_gen0_tree_and_row_equal_mrbayes(case, mb_double, tmp_path):
    """The .t file through its gen.0 line and the .p file through its Gen-0 row are mb-double's, byte for byte."""
    commands, newick = CASES[case]
    mb = gen0(mb_double, tmp_path / "mb", commands, newick)
    values = {}
    given = STARTVALS.search(commands)                 # mbgpu's startvals takes tau/V/ratemultiplier only
    if given:
        values["relative_fossilization"] = tuple(float(x) for x in given.group(1).split(","))
        commands = STARTVALS.sub("", commands)
    s = _settings(tmp_path, commands, newick)
    (model,) = clock_models(s)
    state = clock_start(s, model, s.startvals["V"])
    row = {k.split("{")[0]: v for k, v in mb.items()}
    draws = {k: row[k] for k, v in model.starts().items() if v is None}   # MrBayes' random draws, as printed
    values = parameter_values(model, state, {**values, **draws})
    run_id = re.search(r"\[ID: (\d+)\]", mb["tfile"]).group(1)   # a string: MrBayes keeps leading zeros
    lnpr = ln_prior(model, state, values)
    assert lnpr == pytest.approx(row["LnPr"], rel=1e-6)
    if draws:                      # a draw printed to 7 digits need not give LnPr's last digit: take MrBayes'
        lnpr = row["LnPr"]
    tfile, pfile = _gen0_files(s, model, state, values, run_id, row["LnL"], lnpr)
    assert tfile == _mrbayes_gen0(mb["tfile"], "   tree gen.0")
    assert pfile == _mrbayes_gen0(mb["pfile"], "0\t")


def test_written_children_follow_the_newick():
    """written_children puts first the child whose subtree holds the earliest written tip; sorted ids
    (rooted.children) do not keep a reversed tree's order."""
    from mbgpu.clock.rooted import written_children
    from mbgpu.tree import Tree, tips_in_written_order
    from tests.test_clock.trees import TAXA

    index = {name: i for i, name in enumerate(TAXA)}
    for newick in (T1, T1_REVERSED):
        tree = Tree.from_newick(newick, index)
        rank = np.empty(12, dtype=np.int64)
        rank[tips_in_written_order(newick, index)] = np.arange(12)
        kids = written_children(tree.parent, 12, rank)
        text = ct.clock_tree_text(tree.parent, kids, np.zeros(tree.n_nodes), 12, lengths=tree.brlen)
        names = [TAXA[int(k) - 1] for k in re.findall(r"[(,](\d+):", text)]
        assert names == [TAXA[t] for t in tips_in_written_order(newick, index)]
    assert not np.array_equal(kids, children(tree.parent))


def test_cpp_events_and_sampled_ancestor_values():
    """n_CPP is the events' sum printed as an int; prop_ancfossil counts zero-length fossil tips among the
    tips older than 0 (MrBayes' PropAncFossil); `[&E CppEvents k]` carries each branch's count."""
    parent = np.array([3, 3, 4, 4, -1])
    depth = np.array([0.0, 0.2, 0.2, 0.2, 0.5])          # tip 1 a sampled ancestor, tip 2 a fossil tip
    lengths = np.array([0.2, 0.0, 0.3, 0.3, 0.0])
    kids = children(parent)
    assert ct.prop_anc_fossil(depth, lengths, 3) == 0.5
    events = np.array([0, 2, 1, 0, 0])
    text = ct.clock_tree_text(parent, kids, depth, 3, lengths=lengths, branch_set="CppEvents", eff=lengths,
                              n_events=events)
    assert text.startswith("[&E CppEvents] [&E CppEvents] = [&R] (3:3.000000e-01[&E CppEvents 1][&B CppEvents "
                           "3.000000e-01],(1:2.000000e-01[&E CppEvents 0]")
    assert text.endswith(",2:0.000000e+00[&E CppEvents 2][&B CppEvents 0.000000e+00]):3.000000e-01[&E CppEvents "
                         "0][&B CppEvents 3.000000e-01])")
    out = io.StringIO()
    PFileWriter(out, 1, ["n_CPP"]).row(0, -1.0, -2.0, [int(events.sum())])
    assert out.getvalue().splitlines()[-1] == "0\t-1.000000e+00\t-2.000000e+00\t3"
