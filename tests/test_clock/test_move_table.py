"""mbgpu.clock.move_table against mb-double: the moves `showmoves` lists (names, relative probabilities,
tuning values, target rates), those `showmoves allavailable=yes` adds (weight 0), the list printed at mcmc
start (percentages), the order propset gives the weight-0 moves, and propset's tuning names and ranges."""
from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from mbgpu.clock.move_table import NO_KERNEL, ClockMoveSpec, clock_analysis_moves
from mbgpu.errors import CommandError, NotImplementedYet
from tests.helpers import interp_for, output
from tests.test_clock.trees import DATA, T1

JC = "lset nst=1 rates=equal; prset statefreqpr=fixed(equal);"
PART = "charset a = 1-449; charset b = 450-898; partition p = 2:a,b; set partition=p;"
TIPS = "calibrate Tarsius_syrichta=fixed(0.1) Lemur_catta=fixed(0.05); prset nodeagepr=calibrated;"
APES = ("taxset apes = Homo_sapiens Pan Gorilla Pongo Hylobates; constraint apes = apes; prset topologypr="
        "constraints(apes) nodeagepr=calibrated; calibrate apes=uniform(0.15,0.25);")

# the brief's cases (docs/plans/clocks-integration.md, "Clock move table"), then combinations
CASES = {
    "strict": JC + "prset brlenspr=clock:uniform;",
    "clockrate": JC + "prset brlenspr=clock:uniform clockratepr=exponential(1);",
    "birthdeath": JC + "prset brlenspr=clock:birthdeath;",
    "birthdeath_fixed": JC + "prset brlenspr=clock:birthdeath speciationpr=fixed(2) extinctionpr=fixed(0.5);",
    "birthdeath_uniform": JC + "prset brlenspr=clock:birthdeath speciationpr=uniform(0,10) extinctionpr=fixed(0.5);",
    "coalescence": JC + "prset brlenspr=clock:coalescence;",
    "coalescence_fixed": JC + "prset brlenspr=clock:coalescence popsizepr=fixed(0.5);",
    "fossilization": JC + "prset brlenspr=clock:fossilization; " + TIPS,
    "fossiltip": JC + "prset brlenspr=clock:fossilization samplestrat=fossiltip; " + TIPS,
    "fossilization_fixed_topology": JC + "prset brlenspr=clock:fossilization topologypr=fixed(t1);",
    "igr": JC + "prset brlenspr=clock:uniform clockvarpr=igr;",
    "tk02": JC + "prset brlenspr=clock:uniform clockvarpr=tk02;",
    "cpp": JC + "prset brlenspr=clock:uniform clockvarpr=cpp;",
    "cpp_fixed": JC + "prset brlenspr=clock:uniform clockvarpr=cpp cppratepr=fixed(2);",
    "fixed_topology": JC + "prset brlenspr=clock:uniform topologypr=fixed(t1);",
    "calibrated": JC + "prset brlenspr=clock:uniform; " + APES,
    "gtr_gamma": "lset nst=6 rates=gamma; prset brlenspr=clock:uniform;",
    "two_divisions": PART + " lset nst=6 rates=gamma; prset brlenspr=clock:uniform;",
    "two_divisions_unlinked": PART + " lset nst=6 rates=gamma; prset brlenspr=clock:birthdeath ratepr=variable "
                              "clockratepr=exponential(1) clockvarpr=igr; unlink statefreq=(all) revmat=(all) "
                              "shape=(all);",
    "two_trees": PART + " prset brlenspr=clock:birthdeath clockratepr=exponential(1) clockvarpr=igr; "
                 "unlink topology=(all) brlens=(all);",
    "two_trees_cpp": PART + " unlink topology=(all) brlens=(all); prset brlenspr=clock:birthdeath clockvarpr=cpp "
                     "clockratepr=exponential(1); prset applyto=(2) speciationpr=exponential(5);",
    "two_trees_one_fixed": PART + " prset brlenspr=clock:birthdeath; prset applyto=(1) topologypr=fixed(t1); "
                           "unlink topology=(all) brlens=(all);",
    "bd_igr_clockrate": "lset nst=6 rates=gamma; prset brlenspr=clock:birthdeath clockvarpr=igr "
                        "clockratepr=exponential(1);",
    "coal_cpp_clockrate": JC + "prset brlenspr=clock:coalescence clockvarpr=cpp clockratepr=exponential(1);",
    "fbd_tk02_clockrate": JC + "prset brlenspr=clock:fossilization clockvarpr=tk02 clockratepr=exponential(1); "
                          + TIPS,
}
#: models whose weight-0 moves are all switched on with propset $prob=1, to see where MrBayes puts them
SWITCHED_ON = {
    "birthdeath": JC + "prset brlenspr=clock:birthdeath clockratepr=exponential(1);",
    "fossilization_cpp": JC + "prset brlenspr=clock:fossilization clockvarpr=cpp; " + TIPS,
}


def _run(mb_double, folder, commands: str, after: str = "") -> str:
    """mb-double's screen after `commands`, `mcmcp nruns=1 nchains=1`, `after` (propset), two showmoves and
    one generation (the start tree t1 is there for topologypr=fixed)."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(DATA, folder / "primates.nex")
    (folder / "cmd.nex").write_text(
        "#NEXUS\nbegin mrbayes; set seed=1 swapseed=1; execute primates.nex; end;\n"
        "begin trees; tree t1 = [&R] %s\nend;\nbegin mrbayes; %s\nmcmcp nruns=1 nchains=1; %s showmoves; "
        "showmoves allavailable=yes;\nmcmc ngen=1 samplefreq=1 printfreq=1 mcmcdiagn=no checkpoint=no "
        "filename=x;\nend;\n" % (T1, commands, after))
    done = subprocess.run([str(mb_double), "cmd.nex"], cwd=folder, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:]
    return done.stdout


def _blocks(screen: str) -> list[list[dict]]:
    """The moves of each block showmoves prints (used; used and weight 0 with allavailable): name, prob,
    tuning {name: '%.3f' text}, target."""
    out, mv = [], None
    for ln in screen.splitlines():
        s = ln.strip()
        if s.startswith("Moves that will be used") or s.startswith("Other available moves"):
            out.append([])
            mv = None
        elif s.startswith("Use 'Showmoves") or s.startswith("Setting number of generations"):
            mv = None
        elif re.match(r"\d+ -- Move\s+= ", s) and out:
            mv = {"name": s.split("= ", 1)[1], "tuning": {}, "target": None}
            out[-1].append(mv)
        elif mv is not None and s.startswith("Rel. prob."):
            mv["prob"] = s.split("= ")[1]
        elif mv is not None and s.startswith("Targetrate"):
            mv["target"] = float(s.split("=")[1])
        elif mv is not None and re.match(r"\w+ = [-\d.]+$", s):
            mv["tuning"][s.split(" = ")[0]] = s.split(" = ")[1]
    return out


def _listing(screen: str) -> list[tuple[str, str]]:
    """The list printed at mcmc start: (name, percentage text)."""
    out = []
    for row in screen.split("The MCMC sampler will use the following moves:")[1].splitlines()[2:]:
        m = re.match(r"\s+([\d.]+) %\s+(\S+)$", row)
        if m is None:
            return out
        out.append((m.group(2), m.group(1)))
    return out


def _ours(tmp_path, commands: str, available: bool = False) -> list:
    shutil.copy(DATA, tmp_path / "primates.nex")
    it = interp_for("#NEXUS\nbegin mrbayes;\nexecute primates.nex;\nend;\nbegin trees; tree t1 = [&R] %s\nend;\n"
                    "begin mrbayes; %s\nend;\n" % (T1, commands), tmp_path)
    assert "rror" not in output(it), output(it)[-2000:]
    return clock_analysis_moves(it.settings, available)


def _shown(mv) -> dict:
    """One of our moves as showmoves prints it (Rel. prob. %.1f; clock moves with their tuning and target)."""
    if not isinstance(mv, ClockMoveSpec):
        return {"name": mv.name, "prob": "%.1f" % mv.weight}
    return {"name": mv.name, "prob": "%.1f" % mv.weight, "tuning": {k: "%.3f" % v for k, v in mv.tuning.items()},
            "target": mv.target}


def _theirs(mv: dict, clock: bool) -> dict:
    return mv if clock else {"name": mv["name"], "prob": mv["prob"]}


@pytest.mark.parametrize("case", list(CASES))
def test_moves_like_mrbayes(case, mb_double, tmp_path):
    """Our list = showmoves' (names, weights, tuning, target), its weight-0 moves = allavailable's, and
    our percentages = the list MrBayes prints at mcmc start (itself the same moves as showmoves)."""
    screen = _run(mb_double, tmp_path / "mb", CASES[case])
    used, again, extra = _blocks(screen)[:3]
    assert again == used
    moves = _ours(tmp_path, CASES[case], available=True)
    on = [mv for mv in moves if mv.weight > 0]
    off = [mv for mv in moves if mv.weight == 0]
    assert [_shown(mv) for mv in on] == [_theirs(mv, isinstance(o, ClockMoveSpec)) for mv, o in zip(used, on)]
    assert len(on) == len(used)
    assert [_shown(mv) for mv in off] == extra
    total = sum(mv.weight for mv in on)
    assert [(mv.name, "%.2f" % (100 * mv.weight / total)) for mv in on] == _listing(screen)


@pytest.mark.parametrize("model", list(SWITCHED_ON))
def test_weight0_moves_switched_on_take_mrbayes_places(model, mb_double, tmp_path):
    """propset NAME$prob=1 of the weight-0 moves: MrBayes lists them at their places in its move table."""
    commands = SWITCHED_ON[model]
    ours = [mv.name for mv in _ours(tmp_path, commands, available=True)]
    off = [mv.name for mv in _ours(tmp_path, commands, available=True) if mv.weight == 0]
    screen = _run(mb_double, tmp_path / "mb", commands, " ".join("propset %s$prob=1;" % n for n in off))
    assert [n for n, _ in _listing(screen)] == ours and len(off) >= 5


# models whose moves together are every clock move kind mbgpu lists
PROPSET_MODELS = (
    JC + "prset brlenspr=clock:fossilization clockvarpr=cpp clockratepr=exponential(1);",
    JC + "prset brlenspr=clock:coalescence clockvarpr=igr;",
    JC + "prset brlenspr=clock:birthdeath clockvarpr=tk02;",
)
_NAMES = ("p_ext", "warp", "delta", "lambda", "alpha", "r")


def _mrbayes_propset(mb_double, folder, commands: str, lines: list[str]) -> list[str]:
    """MrBayes' answer to each `propset` line (interactive, errors do not stop it): the range message, the
    unknown-parameter message, or 'ok'."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(DATA, folder / "primates.nex")
    script = "set quitonerror=no;\nexecute primates.nex;\n%s\n%s\nquit;\n" % (commands, "\n".join(
        "%s\nshowmodel;" % ln for ln in lines))
    screen = subprocess.run([str(mb_double), "-i"], cwd=folder, input=script, capture_output=True, text=True,
                            timeout=120).stdout
    out = []
    for chunk in screen.split("Model settings:")[:len(lines)]:
        m = re.search(r"(The value is out of range \(min = [\d.]+; max = [\d.]+\)|Could not find move "
                      r"parameter to change '\w+')", chunk)
        out.append(m.group(1) if m else "ok")
    return out


@pytest.mark.parametrize("commands", PROPSET_MODELS)
def test_propset_names_and_ranges_like_mrbayes(commands, mb_double, tmp_path):
    """For every move (weight-0 ones too): its tuning names are those MrBayes' propset knows, and each range
    is MrBayes' (`The value is out of range (min = ...; max = ...)` for 1e30); mbgpu's propset says the same."""
    moves = [mv for mv in _ours(tmp_path, commands, available=True) if isinstance(mv, ClockMoveSpec)]
    queries, expect = [], []
    for mv in moves:
        for name in _NAMES:
            queries.append("propset %s$%s=1e30;" % (mv.name, name))
            lo_hi = mv.ranges.get(name)
            expect.append("Could not find move parameter to change '%s'" % name if lo_hi is None else
                          "The value is out of range (min = %f; max = %f)" % lo_hi)
    assert _mrbayes_propset(mb_double, tmp_path / "mb", commands, queries) == expect
    for q, e in zip(queries[::7], expect[::7]):          # mbgpu's propset command, a sample
        assert _our_propset(tmp_path, commands, q) == e, q


def _our_propset(tmp_path, commands: str, line: str) -> str:
    """mbgpu's answer to a propset line: its error message, or 'ok'."""
    shutil.copy(DATA, tmp_path / "primates.nex")
    try:
        interp_for("#NEXUS\nbegin mrbayes;\nexecute primates.nex;\n%s\n%s\nend;\n" % (commands, line), tmp_path)
    except (CommandError, NotImplementedYet) as err:
        return err.one_line().split("error: ", 1)[1]
    return "ok"


def test_propset_refuses_switching_on_a_move_without_kernel(tmp_path):
    """MrBayes would run ExtSsClock; mbgpu has no kernel for it, so propset $prob>0 is refused (tuning it
    and $prob=0 are accepted)."""
    base = JC + "prset brlenspr=clock:uniform;"
    moves = _ours(tmp_path, base, available=True)
    assert {mv.kind for mv in moves if isinstance(mv, ClockMoveSpec) and not mv.has_kernel} == \
        {"extss", "localclock", "parsfossilspr"}
    assert NO_KERNEL >= {"speciation_slider", "cpp_events_multiplier"}
    assert _our_propset(tmp_path, base, "propset ExtSsClock(Tau,V)$p_ext=0.3 ExtSsClock(Tau,V)$prob=0;") == "ok"
    assert _our_propset(tmp_path, base, "propset ExtSsClock(Tau,V)$prob=1;") == \
        "move ExtSsClock(Tau,V) is not implemented yet"
    assert _our_propset(tmp_path, base, "propset NNI(Tau,V)$prob=1;") == "Could not find move 'nni(tau,v)'"
