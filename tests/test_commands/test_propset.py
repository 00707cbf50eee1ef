"""`propset`: move weights and start tuning as MrBayes 3.2.7a sets them, keeps them and forgets them."""
import io
import shutil
import subprocess

import pytest

import mbgpu.run_driver as run_driver
from mbgpu.console import Console
from mbgpu.errors import CommandError, NotImplementedYet
from mbgpu.interpreter import Interpreter
from tests.conftest import TEST_DATA

ONE = "mcmcp nruns=1 nchains=1;"
OFF = "propset ExtTBR(Tau,V)$prob=0 Multiplier(V)$lambda=1.0 Dirichlet(Revmat)$prob=5;"
PARTS = ("charset a=1-400; partition p=2: a, 401-898; set partition=p; lset applyto=(all) nst=6 rates=gamma; "
         "prset ratepr=variable;")
CASES = {
    "prob-and-tuning": (ONE + OFF, ""),
    "per-chain-tuning": ("mcmcp nruns=2 nchains=2; propset Multiplier(V)$lambda(2,1)=1.5 ParsSPR(Tau,V)$prob=0 "
                         "Slider(Revmat)$delta(1,1)=0.5 ExtSPR(Tau,V)$p_ext=0.3;", ""),
    "partitions": (PARTS + ONE + "propset Dirichlet(Ratemultiplier{all})$alpha=2 Slider(Revmat{all})$prob=0 "
                   "multiplier(alpha{ALL})$LAMBDA=0.5 Nodeslider(V{all})$prob=3.5;", ""),
    # MrBayes forgets them all at a new number of runs, those of the chains that go at a new nchains ...
    # values read as MrBayes reads them: its NUMBER token, then C's sscanf ("2.5.1" is 2.5, "1e-1.5" 0.1)
    "mrbayes-numbers": (ONE + "propset Multiplier(V)$lambda=2.5.1 Slider(Revmat)$delta=1e-1.5 Dirichlet(Pi)$alpha=.5e "
                        "Multiplier(Alpha)$lambda=5. TLMultiplier(V)$lambda=1E+0;", ""),
    "forgotten-by-nruns": (OFF + ONE, ""),
    "forgotten-by-mcmc-nruns": ("mcmcp nruns=1 nchains=2;" + OFF, "nruns=2"),
    "kept-by-fewer-chains": ("mcmcp nruns=1 nchains=3;" + OFF + "mcmcp nchains=1;", ""),
    "tuning-kept-for-first-chains": ("mcmcp nruns=2 nchains=1; propset Multiplier(V)$lambda=1.0;", "nchains=2"),
    "kept-by-same-counts": (ONE + OFF + ONE + " outgroup 3; set seed=2; charset b=1-10; mcmc ngen=5; mcmcp ngen=50;",
                            "nruns=1 nchains=1"),
    # ... and after the commands that rebuild its moves
    "forgotten-by-lset": (ONE + OFF + " lset rates=invgamma;", ""),
    "forgotten-by-prset": (ONE + OFF + " prset shapepr=exponential(2);", ""),
    "forgotten-by-set-beagle": (ONE + OFF + " set usebeagle=yes;", ""),
    "forgotten-by-exclude": (ONE + OFF + " exclude 1;", ""),
    "forgotten-by-delete": (ONE + OFF + " delete 12;", ""),
}


def _both(tmp_path, monkeypatch, mb_double, commands: str, mcmc: str):
    """(mbgpu's screen, .mcmc lines) and MrBayes' of the same file."""
    (tmp_path / "data.nex").write_text((TEST_DATA / "primates.nex").read_text())
    out = {}
    for who in ("mb", "mbgpu"):
        (tmp_path / who).mkdir()
        shutil.copy(tmp_path / "data.nex", tmp_path / who / "data.nex")
        (tmp_path / who / "cmd.nex").write_text(
            "#NEXUS\nbegin mrbayes;\n set seed=1 swapseed=1 quitonerror=yes;\n execute data.nex;\n lset nst=6 "
            "rates=gamma;\n mcmcp ngen=50 samplefreq=10 printfreq=50 diagnfreq=50 filename=r;\n %s\n mcmc %s;\nend;\n"
            % (commands, mcmc))
        if who == "mb":
            done = subprocess.run([str(mb_double), "cmd.nex"], cwd=tmp_path / who, capture_output=True, text=True,
                                  timeout=300)
            screen = done.stdout
        else:
            monkeypatch.chdir(tmp_path / who)
            stream = io.StringIO()
            Interpreter(Console(stream)).run_file(str(tmp_path / who / "cmd.nex"))
            screen = stream.getvalue()
        mcmc_lines = [ln.split("\t") for ln in (tmp_path / who / "r.mcmc").read_text().splitlines() if ln[:1] != "["]
        out[who] = (screen, mcmc_lines)
    return out["mbgpu"], out["mb"]


def move_list(screen: str) -> list[str]:
    lines = screen.splitlines()
    first = next(i for i, ln in enumerate(lines) if "Chain will use move" in ln)
    rows = []
    for ln in lines[first + 1:]:
        if "%" not in ln:
            return rows
        rows.append(" ".join(ln.split()))
    return rows


def tunings(mcmc_lines) -> dict:
    """The .mcmc columns of tuning values (acceptance rates and swaps are random) at the first sample."""
    head, row = mcmc_lines[0], mcmc_lines[1]
    return {h: v for h, v in zip(head, row) if "$" in h and "$acc" not in h and not h.startswith("Swap")}


@pytest.mark.parametrize("case", list(CASES))
def test_move_list_and_mcmc_header_like_mrbayes(case, mb_double, tmp_path, monkeypatch):
    commands, mcmc = CASES[case]
    (ours, our_mcmc), (theirs, their_mcmc) = _both(tmp_path, monkeypatch, mb_double, commands, mcmc)
    assert move_list(ours) == move_list(theirs)
    assert our_mcmc[0] == their_mcmc[0]
    assert tunings(our_mcmc) == tunings(their_mcmc)
    if case.startswith("forgotten"):
        assert "ExtTBR(Tau,V)" in " ".join(move_list(theirs))
    elif case == "prob-and-tuning":
        assert "ExtTBR(Tau,V)" not in " ".join(move_list(theirs))


ERRORS = [
    ("propset Foo(V)$prob=1;", "Could not find move 'foo(v)'", CommandError, 9),
    ("propset Multiplier(V)$foo=1;", "Could not find move parameter to change 'foo'", CommandError, 22),
    ("propset Multiplier(V)$lambda(3,1)=1;", "Run index is out of range (min=1; max=2)", CommandError, 30),
    ("propset Multiplier(V)$lambda(1,5)=1;", "Chain index is out of range (min=1; max=4)", CommandError, 32),
    ("propset Multiplier(V)$lambda=100;", "The value is out of range (min = 0.000100; max = 20.000000)",
     CommandError, 30),
    ("propset Slider(Pinvar)$delta=0.9991;", "The value is out of range (min = 0.001000; max = 0.999000)",
     CommandError, 30),
    ("propset ParsSPR(Tau,V)$r=0.31;", "The value is out of range (min = 0.000000; max = 0.300000)",
     CommandError, 26),
    ("propset NNI(Tau,V)$prob=1001;", "The value is out of range (min = 0.000000; max = 1000.000000)",
     CommandError, 25),
    # MrBayes reads no sign: '-' (or '+') is a token of its own, even where the range is negative (ParsSPR)
    ("propset Multiplier(V)$prob=-1;", "Expecting '<number>', found '-'", CommandError, 28),
    ("propset ParsSPR(Tau,V)$lambda=-1;", "Expecting '<number>', found '-'", CommandError, 31),
    ("propset Multiplier(V)$lambda=+1;", "Expecting '<number>', found '+'", CommandError, 30),
    ("propset Multiplier(V)$lambda=nan;", "Expecting '<number>', found 'nan'", CommandError, 30),
    ("propset Multiplier(V)$lambda=1_0;", "Expecting '<number>', found '1_0'", CommandError, 30),
    ("propset Multiplier(V)$targetrate=0.3;", "propset $targetrate is not supported yet", NotImplementedYet, 22),
    ("propset Multiplier(V)$prob(1,1)=0;", "propset $prob for one run and chain is not supported yet",
     NotImplementedYet, 22),
]


@pytest.mark.parametrize("command, message, kind, column", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_are_mrbayes_messages_at_their_token(command, message, kind, column, mb_double, tmp_path):
    """One located line with MrBayes' message (MrBayes says the same where it refuses the value)."""
    (tmp_path / "data.nex").write_text((TEST_DATA / "primates.nex").read_text())
    (tmp_path / "cmd.nex").write_text("#NEXUS\nbegin mrbayes;\nexecute data.nex;\nlset rates=invgamma;\n%s\nend;\n"
                                      % command)
    with pytest.raises(kind) as err:
        Interpreter(Console(io.StringIO())).run_file(str(tmp_path / "cmd.nex"))
    assert err.value.one_line() == "%s:5:%d: error: %s" % (tmp_path / "cmd.nex", column, message)
    if kind is CommandError:
        done = subprocess.run([str(mb_double), "cmd.nex"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
        expecting, _, found = message.partition(", found ")
        assert expecting in done.stdout and "Error in command" in done.stdout
        assert not found or "Instead found %s in command" % found in done.stdout


def test_prob_then_more_chains_is_refused(tmp_path, mb_double):
    """MrBayes runs chains with different move lists then (one list per chain); mbgpu refuses it."""
    (tmp_path / "data.nex").write_text((TEST_DATA / "primates.nex").read_text())
    (tmp_path / "cmd.nex").write_text("#NEXUS\nbegin mrbayes;\nexecute data.nex;\nlset nst=6 rates=gamma;\nmcmcp nruns=1 nchains=1;\n%s\n"
                                      "mcmc nchains=2 ngen=10 filename=q;\nend;\n" % OFF)
    with pytest.raises(NotImplementedYet) as err:
        Interpreter(Console(io.StringIO())).run_file(str(tmp_path / "cmd.nex"))
    assert err.value.one_line().startswith("%s:7:1: error: propset $prob" % (tmp_path / "cmd.nex"))
    done = subprocess.run([str(mb_double), "cmd.nex"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert "following moves for chain 2:" in done.stdout


def test_every_move_off_stops_the_run_as_mrbayes_does(tmp_path, monkeypatch):
    """MrBayes accepts the propset and stops at mcmc ('Problem allocating usedMoves')."""
    monkeypatch.chdir(tmp_path)
    off = " ".join("%s$prob=0" % m for m in ("Multiplier(V)", "NNI(Tau,V)", "ExtSPR(Tau,V)", "ExtTBR(Tau,V)",
                                              "ParsSPR(Tau,V)", "Nodeslider(V)", "TLMultiplier(V)"))
    (tmp_path / "cmd.nex").write_text("#NEXUS\nbegin mrbayes;\nexecute %s;\nlset nst=1;prset statefreqpr=fixed(equal);"
                                      "\nmcmcp nruns=1 nchains=1 ngen=10;\npropset %s;\nmcmc;\nend;\n"
                                      % (TEST_DATA / "primates.nex", off))
    with pytest.raises(CommandError, match="every move has prob 0"):
        Interpreter(Console(io.StringIO())).run_file(str(tmp_path / "cmd.nex"))


def test_compiled_core_never_runs_a_move_turned_off(tmp_path, monkeypatch):
    """On the compiled core: the move turned off is in no chain's list, every generation ran one of the others,
    and a per-chain start value (a tuning the run does not change) reached one chain only."""
    monkeypatch.chdir(tmp_path)
    built = []
    real = run_driver.build_runs
    monkeypatch.setattr(run_driver, "build_runs", lambda *a, **k: built.append(real(*a, **k)) or built[-1])
    (tmp_path / "cmd.nex").write_text(
        "#NEXUS\nbegin mrbayes;\nset seed=3 swapseed=4;\nexecute %s;\nlset nst=6 rates=gamma;\n"
        "mcmcp nruns=1 nchains=2 ngen=200 samplefreq=20 printfreq=100 diagnfreq=100 filename=r;\n"
        "propset ExtTBR(Tau,V)$prob=0 ExtSPR(Tau,V)$p_ext(1,2)=0.3;\nmcmc;\nend;\n" % (TEST_DATA / "primates.nex"))
    Interpreter(Console(io.StringIO())).run_file(str(tmp_path / "cmd.nex"))
    (runs, _), = built
    for chain in runs[0]:
        names = [m.name for m in chain.moves]
        assert "ExtTBR(Tau,V)" not in names and "ExtSPR(Tau,V)" in names
        assert sum(m.counts["tried"] for m in chain.moves) == 200
    p_ext = [next(m.move.tuning["p_ext"] for m in c.moves if m.name == "ExtSPR(Tau,V)") for c in runs[0]]
    assert sorted(p_ext) == [0.3, 0.5]      # chain 2's value, which travels with its heat at swaps
    assert "ExtTBR" not in (tmp_path / "r.mcmc").read_text()


def test_resumed_run_with_propset_is_byte_identical(tmp_path, monkeypatch):
    """`mcmc append=yes` after a stop continues exactly: the checkpoint's tuning and the propset weights."""
    head = ("#NEXUS\nbegin mrbayes;\nset seed=5 swapseed=6;\nexecute %s;\nlset nst=6 rates=gamma;\n"
            "mcmcp nruns=1 nchains=2 samplefreq=20 printfreq=100 diagnfreq=100 checkfreq=100 filename=r;\n"
            "propset ExtTBR(Tau,V)$prob=0 Multiplier(V)$lambda(1,2)=0.4 Dirichlet(Pi)$prob=3;\n"
            % (TEST_DATA / "primates.nex"))
    for folder, body in (("whole", "mcmc ngen=200;"), ("parts", "mcmc ngen=100;\nmcmc ngen=200 append=yes;")):
        (tmp_path / folder).mkdir()
        monkeypatch.chdir(tmp_path / folder)
        (tmp_path / folder / "cmd.nex").write_text(head + body + "\nend;\n")
        Interpreter(Console(io.StringIO())).run_file(str(tmp_path / folder / "cmd.nex"))
    for name in ("r.p", "r.t"):
        assert (tmp_path / "whole" / name).read_bytes() == (tmp_path / "parts" / name).read_bytes(), name
