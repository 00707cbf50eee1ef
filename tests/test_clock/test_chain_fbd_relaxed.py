"""The fossilized birth-death prior under the igr and tk02 relaxed clocks (AddBranch gives a fossil leaving
its sampled-ancestor position its parent's rate, as proposal.c's Move_AddBranch) against mb-double: the
state after 300 generations scored by MrBayes, and the sampled prior (`data=no`). The Gen-0 rows are
tests/test_clock/test_chain_fbd.py's igr / tk02 cases.

MrBayes' startvals cannot carry branch rates, so the state is checked in two parts: the time tree (TH, TL,
and LnPr less the branch-rate terms, which are recomputed from the `.t` file's effective lengths) by a clock
run of mb-double at rates 1, and LnL by an unconstrained run of mb-double on the effective lengths."""
from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from mbgpu.clock.distributions import ln_gamma_pdf
from mbgpu.clock.relaxed import ln_tk02_lognormal
from tests.helpers import interp_for
from tests.test_clock import test_chain_sampling as cs
from tests.test_clock.gen0 import SETUP
from tests.test_clock.test_chain_relaxed import _with_effective_lengths
from tests.test_clock.test_chain_state import _file, _row
from tests.test_clock.test_chain_fbd import SAMPLED_ANCESTOR
from tests.test_clock.trees import DATA, T4, TAXA

FBD = ("lset nst=2 rates=gamma; prset tratiopr=fixed(6) shapepr=fixed(0.5) statefreqpr=fixed(equal) "
       "brlenspr=clock:fossilization nodeagepr=calibrated speciationpr=fixed(2) extinctionpr=fixed(0.5) "
       "fossilizationpr=fixed(0.3); calibrate Tarsius_syrichta=fixed(0.1) Lemur_catta=uniform(0.3,0.6); prset")
# name -> (model, variance); from T4 with Lemur a sampled ancestor (0.55 deep) whose free age lets AddBranch /
# DelBranch unmake and make it
STATE = {"igr": (FBD + " clockvarpr=igr igrvarpr=fixed(0.05);", 0.05),
         "tk02": (FBD + " clockvarpr=tk02 tk02varpr=fixed(0.5);", 0.5)}
LENGTH = r":[-+.0-9eE]+(?:\[&B \w+ [-+.0-9eE]+\])?"           # a length and its effective length
TOKEN = re.compile(r"\(|\)|,|[^(),:\[;]+" + LENGTH + "|" + LENGTH)
ANNOTATED = re.compile(r"([^(),:\[;]*):([-+.0-9eE]+)(?:\[&B \w+ ([-+.0-9eE]+)\])?")


def _branches(newick: str) -> list:
    """(parent index, length, effective length) of each node of a `.t` tree: a stand-in above the root
    first, then the root (length 0), then the others in newick order."""
    nodes, stack = [(-1, 0.0, 0.0)], [0]
    for tok in TOKEN.findall(newick):
        if tok == "(":
            nodes.append((stack[-1], 0.0, 0.0))
            stack.append(len(nodes) - 1)
        elif tok == ")":
            stack.pop()
        elif tok != ",":
            name, length, eff = ANNOTATED.fullmatch(tok).groups()
            if name:                                               # a tip
                nodes.append((stack[-1], float(length), float(eff)))
            else:                                                  # the length of the group just closed
                last = max(i for i, n in enumerate(nodes) if n[0] == stack[-1] and n[1] == 0.0 and n[2] == 0.0)
                nodes[last] = (stack[-1], float(length), float(eff))
    return nodes


def _rate_terms(nodes: list, kind: str, var: float, at_one: bool) -> float:
    """The IgrBrlens / TK02Brlens prior terms over the positive-length branches, at the rates the effective
    lengths imply (`at_one`: at rates 1, MrBayes' start)."""
    rate = [1.0] * len(nodes)
    total = 0.0
    for v, (p, length, eff) in enumerate(nodes):              # parents come before their children
        if p < 0 or length <= 0.0:
            continue
        if kind == "igr":
            rate[v] = 1.0 if at_one else eff / length
            total += ln_gamma_pdf(length / var, length / var, rate[v])
        else:
            rate[v] = 1.0 if at_one else 2.0 * eff / length - rate[p]
            total += ln_tk02_lognormal(rate[p], var * length, rate[v])
    return total


def _tree_line(path) -> str:
    return [ln for ln in path.read_text().splitlines() if ln.strip().startswith("tree gen.")][-1].split("=", 1)[1]


def _named(newick: str) -> str:
    return re.sub(r"(?<=[(,])(\d+)(?=:)", lambda m: TAXA[int(m.group(1)) - 1], newick.strip().rstrip(";"))


def _mb_row(mb_double, folder, model: str, newick: str) -> dict:
    folder.mkdir()
    shutil.copy(DATA, folder / "primates.nex")
    (folder / "cmd.nex").write_text(_file(model + " startvals tau=t1 v=t1;", "mcmc ngen=1 samplefreq=1 nruns=1 "
                                          "nchains=1 mcmcdiagn=no checkpoint=no filename=u;",
                                          "begin trees; tree t1 = %s;\nend;\n" % newick))
    done = subprocess.run([str(mb_double), "cmd.nex"], cwd=folder, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-2000:]
    return _row(folder / "u.p", 0)


@pytest.mark.parametrize("path", ["core", "interpreted"])
@pytest.mark.parametrize("clock", sorted(STATE))
def test_state_after_moves_scores_as_mrbayes(clock, path, mb_double, tmp_path, monkeypatch):
    """`path`: the compiled core's clock moves (mbgpu.core.clock_moves) or the interpreted ones
    (mbgpu.clock.chain_fbd_moves), the core refused as where it cannot run a chain."""
    model, var = STATE[clock]
    if path == "interpreted":
        monkeypatch.setattr("mbgpu.sampler.batch_step.unsupported", lambda chains: "the test's choice")
    ours = tmp_path / "ours"
    ours.mkdir()
    shutil.copy(DATA, ours / "primates.nex")
    monkeypatch.chdir(ours)
    start = "begin trees; tree t1 = [&R] %s\nend;\n" % SAMPLED_ANCESTOR
    interp_for(_file(model + " startvals tau=t1 v=t1;", "mcmc ngen=300 samplefreq=100 printfreq=100 nruns=1 "
                     "nchains=1 checkpoint=no filename=u;", start), ours, "cmd.nex")
    got = _row(ours / "u.p", 300)
    assert got["TH"] != _row(ours / "u.p", 0)["TH"], "the chain did not move"
    line = _named(re.sub(r"\[&[RU]\]", "", _tree_line(ours / "u.t")))
    nodes = _branches(line)
    # the time tree at rates 1: TH, TL and the prior less the branch-rate terms
    want = _mb_row(mb_double, tmp_path / "clock", model, "[&R] " + re.sub(r"\[&B[^]]*\]", "", line))
    for col in ("TH", "TL"):
        assert float(got[col]) == pytest.approx(float(want[col]), abs=1e-6), col
    ln_pr = float(got["LnPr"]) - _rate_terms(nodes, clock, var, False) + _rate_terms(nodes, clock, var, True)
    assert ln_pr == pytest.approx(float(want["LnPr"]), abs=1e-6)
    # the likelihood of the effective lengths (the unrooted view), scored without a clock
    eff_tree = ANNOTATED.sub(lambda m: "%s:%s" % (m.group(1), m.group(3)), line)
    free = re.sub(r"brlenspr=clock:fossilization.*", "brlenspr=unconstrained:exp(10);", model)
    want = _mb_row(mb_double, tmp_path / "free", free, "[&U] " + eff_tree)
    assert float(got["LnL"]) == pytest.approx(float(want["LnL"]), abs=1e-6)


# the prior (data=no) of the FBD tree with two fossil tips whose ages are free (test_chain_fbd's fbd_free_rate)
# under a relaxed clock: AddBranch / DelBranch make and unmake sampled ancestors and carry the rates along;
# uniform variance priors away from MrBayes' RATE_MIN / RELBRLENS_MIN truncation (test_chain_relaxed's)
FBD_PRIOR = (SETUP + "prset brlenspr=clock:fossilization nodeagepr=calibrated "
             "speciationpr=exponential(5) extinctionpr=beta(8,2) fossilizationpr=beta(1,9) treeagepr=uniform(0.5,1.5); "
             "calibrate Tarsius_syrichta=uniform(0.05,0.3) Lemur_catta=uniform(0.02,0.2); prset")
PRIOR = {
    "igr": (FBD_PRIOR + " clockvarpr=igr igrvarpr=uniform(0.02,0.1);", ("TH", "TL", "prop_ancfossil", "igrvar",
                                                                        "effTL")),
    "tk02": (FBD_PRIOR + " clockvarpr=tk02 tk02varpr=uniform(0.5,2);", ("TH", "TL", "prop_ancfossil", "tk02var",
                                                                        "effTL")),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(PRIOR))
def test_prior_sampling_equals_mrbayes(case, mb_double, tmp_path, monkeypatch):
    commands, columns = PRIOR[case]
    out = cs._runs(tmp_path, monkeypatch, mb_double, commands, T4, 200000, data=False)
    cs._check_means(_with_effective_lengths(out), columns)
