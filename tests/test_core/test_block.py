"""Compiled blocks of generations (mbgpu.core.block) write exactly the files of the one-generation-at-a-time
loop: samples, screen, swaps, continuation from a checkpoint, and a model the core leaves to the host."""
import io
import re
import signal

import numba
import numpy as np
import pytest

import mbgpu.core.block as block
from mbgpu.core import atomics
import mbgpu.core.chain_generation as generation
import mbgpu.core.handoff as handoff
import mbgpu.core.stepper as stepper
from mbgpu.checkpoint.signals import RunStopped
from mbgpu.console import Console
from mbgpu.interpreter import Interpreter
from mbgpu.sampler.mc3 import MC3
from mbgpu.sampler.swaps import SwapTable, swap_with
from tests.test_checkpoint.common import run_text
from tests.conftest import TEST_DATA
from tests.test_core.test_stepper import BLOCK

FILES = ("r.run1.p", "r.run2.p", "r.run1.t", "r.run2.t", "r.mcmc")


class Chain:
    def __init__(self, lnl, lnpr):
        self.lnl, self.lnpr = lnl, lnpr


def _run(folder, monkeypatch, blocks: bool, text=BLOCK, threads=1, runner=block.BlockRunner):
    """Run `text` in `folder` on `threads` numba threads, in compiled blocks or not; the screen (times
    blanked) and the generations that `runner` (the class, subclasses included) ran in blocks. (Blocks
    are sized by time; a first block that compiles is slow, the next ones are not.)"""
    folder.mkdir(exist_ok=True)
    monkeypatch.chdir(folder)
    (folder / "run.nex").write_text(text)
    monkeypatch.setattr(MC3, "compiled_blocks", blocks)
    in_blocks, run = [], runner.run

    def counted(self, mc3, first, last):
        done = run(self, mc3, first, last)
        in_blocks.append(done - first + 1)
        return done

    monkeypatch.setattr(runner, "run", counted)
    before = numba.get_num_threads()
    numba.set_num_threads(threads)
    out = io.StringIO()
    try:
        Interpreter(Console(out)).run_file(str(folder / "run.nex"))
    finally:
        numba.set_num_threads(before)
        monkeypatch.undo()
    return re.sub(r"\d+:\d\d:\d\d|Analysis (completed in|used) .*", "T", out.getvalue()), sum(in_blocks)


def _same_files(a, b):
    for name in FILES:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


def test_blocks_write_the_files_and_screen_of_single_generations(tmp_path, monkeypatch):
    screen, n = _run(tmp_path / "blocks", monkeypatch, True)
    assert n > 250                        # the first generation builds the core, the others go in blocks
    single, n = _run(tmp_path / "single", monkeypatch, False)
    assert n == 0
    _same_files(tmp_path / "blocks", tmp_path / "single")
    assert screen == single


def test_runs_without_checkpoints_go_in_blocks(tmp_path, monkeypatch):
    """`mcmc checkpoint=no` leaves only the stop-signal check after each generation, which a block's end
    serves as well: the run still goes in blocks (it went one generation at a time, ~15% slower on
    primates), with the files of a checkpointed run."""
    _, n = _run(tmp_path / "with", monkeypatch, True)
    _, n_off = _run(tmp_path / "without", monkeypatch, True, BLOCK.replace("filename=r", "checkpoint=no filename=r"))
    assert n > 250 and n_off > 250
    _same_files(tmp_path / "with", tmp_path / "without")
    assert not (tmp_path / "without" / "r.ckp.h5").exists()


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs two numba threads")
def test_single_precision_runs_in_blocks_with_the_same_files_on_any_thread_count(tmp_path, monkeypatch):
    """`set beagleprecision=single` on the CPU: float32 partials in the core, blocks on one and on two
    threads write the same files; the sampled lnL stay within float32 accuracy of the double run's
    where the two runs are still in the same state (the first samples)."""
    text = BLOCK.replace("begin mrbayes;", "begin mrbayes; set beagleprecision=single;")
    screen, n = _run(tmp_path / "one", monkeypatch, True, text)
    assert "compiled CPU, single precision" in screen and n > 250
    _, n2 = _run(tmp_path / "two", monkeypatch, True, text, threads=2)
    assert n2 > 250
    _same_files(tmp_path / "one", tmp_path / "two")
    _run(tmp_path / "double", monkeypatch, True)
    single = np.loadtxt(tmp_path / "one" / "r.run1.p", skiprows=2)[:3, 1]
    double = np.loadtxt(tmp_path / "double" / "r.run1.p", skiprows=2)[:3, 1]
    assert single == pytest.approx(double, rel=1e-6)


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs two numba threads")
@pytest.mark.parametrize("nruns", [1, 2, 3])
def test_runs_on_threads_write_the_files_of_one_thread(tmp_path, monkeypatch, nruns):
    """Two threads on the runs (3 runs: one thread takes two; 1 run: the two on its chains in parallel):
    same files and screen as one thread, and as single generations."""
    text = BLOCK.replace("nruns=2", "nruns=%d" % nruns)
    names = {1: ("r.p", "r.t", "r.mcmc"), 2: FILES, 3: FILES + ("r.run3.p", "r.run3.t")}[nruns]
    one, n1 = _run(tmp_path / "one", monkeypatch, True, text)
    two, n2 = _run(tmp_path / "two", monkeypatch, True, text, threads=2)
    single, _ = _run(tmp_path / "single", monkeypatch, False, text, threads=2)
    assert n1 > 250 and n2 > 250
    for name in names:
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes(), name
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "single" / name).read_bytes(), name
    assert one == two == single


def test_a_run_in_blocks_continued_from_its_checkpoint_is_byte_identical(tmp_path, monkeypatch):
    _run(tmp_path / "straight", monkeypatch, True)
    _run(tmp_path / "resumed", monkeypatch, True, BLOCK.replace("ngen=300", "ngen=150 checkfreq=50"))
    _, n = _run(tmp_path / "resumed", monkeypatch, True, BLOCK.replace("ngen=300", "ngen=300 append=yes"))
    assert n > 120                        # in blocks but for the first generation and short tails
    _same_files(tmp_path / "straight", tmp_path / "resumed")


def test_models_left_to_the_host_give_the_files_of_single_generations(tmp_path, monkeypatch):
    """Every parameter proposal's model built on the host (as when the core cannot compute one): on one
    thread the block stops at that generation and the host finishes those chains, as the per-generation
    step does; on two the chain parks, the others go on without it, and the host decides it once the
    swaps it owes are made."""
    real_plan, real_proposal = generation.plan_chain, stepper.model_proposal
    to_host = []

    def plan_on_host(c, theta_p, moved, off, pri, sm, rows, touch, new_q, pterm_new, todo, need):
        real_plan(c, theta_p, moved, off, pri, sm, rows, touch, new_q, pterm_new, todo, need)
        hit = touch[moved[c]]
        to_host.append(bool(hit.any()))
        need[hit, c] = True
        return not hit.any()

    def run(folder, blocks, threads=1):
        monkeypatch.setattr(stepper, "model_proposal", lambda *a: real_proposal(*a) and False)
        monkeypatch.setattr(generation, "plan_chain", plan_on_host)
        for module, name in ((block, "run_block"), (handoff, "run_handoff"), (handoff, "_worker"),
                             (handoff, "_look")):
            monkeypatch.setattr(module, name, getattr(module, name).py_func)
        py = {name: getattr(generation, name).py_func for name in ("chain_generation", "chain_propose",
                                                                    "propose_and_plan")}
        for module, name in ((block, "chain_generation"), (generation, "chain_propose"),
                             (handoff, "chain_propose"), (generation, "propose_and_plan")):
            monkeypatch.setattr(module, name, py[name])
        return _run(folder, monkeypatch, blocks, BLOCK.replace("ngen=300", "ngen=120"), threads)

    _, n = run(tmp_path / "blocks", True)
    assert n > 100 and sum(to_host) > 20      # most in blocks, many stopped for the host
    run(tmp_path / "single", False)
    _same_files(tmp_path / "blocks", tmp_path / "single")
    if numba.config.NUMBA_NUM_THREADS > 1:
        run(tmp_path / "threads", True, 2)
        _same_files(tmp_path / "threads", tmp_path / "single")


def test_swap_events_list_each_chains_swaps_in_the_loops_order():
    """The block's swaps as the handoff sees them: per generation that is a multiple of swapfreq, per run,
    nswaps pairs from the draws' rows as swap_heats picks them; each chain's own list in order."""
    rng = np.random.default_rng(3)
    nruns, n, nswaps, swapfreq, first, last = 2, 4, 2, 3, 5, 16
    row0 = (first - 1) // swapfreq + 1
    draws = rng.random((last // swapfreq - row0 + 1, 3 * nswaps * nruns))
    ev, u, own, count = handoff.swap_events(first, last, swapfreq, row0, draws, nruns, n, nswaps)
    want = []
    for g in range(first, last + 1):
        if g % swapfreq == 0:
            for r in range(nruns):
                for s in range(nswaps):
                    d = draws[g // swapfreq - row0, 3 * (r * nswaps + s):]
                    a = min(int(d[0] * n), n - 1)
                    b = min(int(d[1] * (n - 1)), n - 2)
                    want.append((g, r, a, b + (b >= a), d[2]))
    assert [tuple(e) + (x,) for e, x in zip(ev.tolist(), u.tolist())] == want
    for c in range(nruns * n):
        mine = [e for e, (g, r, a, b, _) in enumerate(want) if c in (r * n + a, r * n + b)]
        assert own[c, :count[c]].tolist() == mine
    assert handoff.swap_events(first, last, swapfreq, row0, draws, nruns, 1, nswaps)[0].shape == (0, 4)


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs two numba threads")
def test_atomics_count_and_hand_over_between_threads():
    """Compare-and-swap increments from two threads lose none; a flag passed back and forth by atomic
    loads and stores (a spin loop the compiler must not hoist) completes every round."""
    before = numba.get_num_threads()
    numba.set_num_threads(2)
    try:
        cnt, flag = np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64)
        _count(cnt, 200000)
        _ping_pong(flag, 20000)
    finally:
        numba.set_num_threads(before)
    assert cnt[0] == 400000 and flag[0] == 40000
    assert not atomics.cas(cnt, 0, 1, 5) and atomics.cas(cnt, 0, 400000, 5) and atomics.load(cnt, 0) == 5


@numba.njit(parallel=True)
def _count(cnt, n):
    for _ in numba.prange(2):
        for _i in range(n):
            while True:
                v = atomics.load(cnt, 0)
                if atomics.cas(cnt, 0, v, v + 1):
                    break


@numba.njit(parallel=True)
def _ping_pong(flag, n):
    for w in numba.prange(2):
        for _i in range(n):
            while atomics.load(flag, 0) % 2 != w:
                pass
            atomics.store(flag, 0, atomics.load(flag, 0) + 1)


@pytest.mark.parametrize("seed", range(5))
def test_compiled_swaps_are_the_loops_swaps(seed):
    rng = np.random.default_rng(seed)
    nruns, n, nswaps, temp = 2, 4, 3, 0.2
    lnl, lnpr = rng.normal(-1000, 5, nruns * n), rng.normal(-10, 2, nruns * n)
    ranks = [list(rng.permutation(n)) for _ in range(nruns)]
    tables = [SwapTable(n) for _ in range(nruns)]
    a, b = np.random.default_rng(seed + 10), np.random.default_rng(seed + 10)
    arr = np.array(ranks, dtype=np.int64)
    tried, acc = np.zeros((nruns, n, n), dtype=np.int64), np.zeros((nruns, n, n), dtype=np.int64)
    heat_of = arr.reshape(-1).astype(np.float64)          # each chain's statistics, marked with its heat
    stats = (np.repeat(heat_of, 6).astype(np.int64).reshape(-1, 2, 3), np.repeat(heat_of, 2).reshape(-1, 2),
             np.repeat(heat_of, 4).reshape(-1, 2, 2), np.repeat(heat_of, 2).astype(np.int64).reshape(-1, 2),
             heat_of.copy())
    for _ in range(4):
        d = a.random(3 * nswaps * nruns)                    # one generation's draws; each run on its own
        block.swap_heats(d, arr, temp, nswaps, tried, acc, lnl, lnpr, 1.0, *stats, 1, 2)
        block.swap_heats(d, arr, temp, nswaps, tried, acc, lnl, lnpr, 1.0, *stats, 0, 1)
        draws = b.random(3 * nswaps * nruns).tolist()
        for r in range(nruns):
            chains = [Chain(lnl[r * n + p], lnpr[r * n + p]) for p in range(n)]
            for s in range(nswaps):
                swap_with(chains, ranks[r], temp, draws[3 * (r * nswaps + s):3 * (r * nswaps + s) + 3], tables[r])
    assert arr.tolist() == ranks
    assert tried.tolist() == [t.tried for t in tables] and acc.tolist() == [t.accepted for t in tables]
    assert acc.sum() > 0 and a.random() == b.random()
    now = arr.reshape(-1)                                 # the statistics went with the heats
    assert (stats[4] == now).all() and (stats[1] == now[:, None]).all() and (stats[3] == now[:, None]).all()
    assert (stats[0] == now[:, None, None]).all() and (stats[2] == now[:, None, None]).all()


def _one_thread(monkeypatch):
    before = numba.get_num_threads()
    numba.set_num_threads(1)
    monkeypatch.setattr(MC3, "compiled_blocks", True)
    return before


def test_a_signal_during_a_block_stops_at_its_end_and_the_resume_is_exact(tmp_path, monkeypatch):
    """SIGTERM while a block runs: the run stops at the block's end with a checkpoint (within
    BLOCK_SECONDS of work), and append=yes continues byte-identically."""
    _run(tmp_path / "straight", monkeypatch, True)
    run, seen = block.BlockRunner.run, []

    def signalled(self, mc3, first, last):
        if first <= 77 <= last:
            signal.raise_signal(signal.SIGTERM)
        seen.append(last)
        return run(self, mc3, first, last)

    before = _one_thread(monkeypatch)
    monkeypatch.setattr(block.BlockRunner, "run", signalled)
    try:
        with pytest.raises(RunStopped) as stopped:
            run_text(tmp_path / "resumed", BLOCK, monkeypatch)
    finally:
        numba.set_num_threads(before)
        monkeypatch.undo()
    assert stopped.value.code == 128 + signal.SIGTERM
    _, n = _run(tmp_path / "resumed", monkeypatch, True, BLOCK.replace("ngen=300", "ngen=300 append=yes"))
    assert 77 <= seen[-1] <= 80 and n > 120     # stopped at the block's end (a sample at 80), then on
    _same_files(tmp_path / "straight", tmp_path / "resumed")


def test_blocks_shrink_to_block_seconds(tmp_path, monkeypatch):
    """Where a generation takes longer than BLOCK_SECONDS, blocks shrink to two generations (a stop signal
    is then seen within two), and the files stay the same."""
    _run(tmp_path / "blocks", monkeypatch, True)
    lengths, run = [], block.BlockRunner.run

    def sized(self, mc3, first, last):
        lengths.append(last - first + 1)
        return run(self, mc3, first, last)

    monkeypatch.setattr(block.BlockRunner, "run", sized)
    monkeypatch.setattr(MC3, "BLOCK_SECONDS", 1e-9)
    _run(tmp_path / "slow", monkeypatch, True)
    assert lengths[0] == 8 and max(lengths[1:]) == 2     # the first block, of block_len=8, then pairs
    _same_files(tmp_path / "blocks", tmp_path / "slow")


def _blocks_match_single_generations(tmp_path, monkeypatch, text: str, min_in_blocks: int) -> None:
    """`text` run in blocks (more than `min_in_blocks` generations in them) writes the files and screen of
    single generations; on two threads too where numba has them."""
    screen, n = _run(tmp_path / "blocks", monkeypatch, True, text)
    assert n > min_in_blocks
    single, _ = _run(tmp_path / "single", monkeypatch, False, text)
    _same_files(tmp_path / "blocks", tmp_path / "single")
    assert screen == single
    if numba.config.NUMBA_NUM_THREADS > 1:
        _run(tmp_path / "threads", monkeypatch, True, text, threads=2)
        _same_files(tmp_path / "threads", tmp_path / "single")


def _mkv_text() -> str:
    """Twelve taxa of random standard characters, every one variable (coding=variable's data), Mkv + gamma."""
    rng = np.random.default_rng(11)
    rows, n_char = [], 40
    for t in range(12):
        rows.append("t%d %s" % (t, "".join(str(x) for x in rng.integers(0, 3, n_char))))
    rows[0] = "t0 " + "0" * n_char                 # with t1 all 1: no character is constant
    rows[1] = "t1 " + "1" * n_char
    return ("#NEXUS\nbegin data; dimensions ntax=12 nchar=%d; format datatype=standard symbols=\"012\";\n"
            "matrix\n%s\n;\nend;\nbegin mrbayes; set seed=4 swapseed=5; lset coding=variable rates=gamma;\n"
            "mcmc ngen=300 nruns=2 nchains=3 samplefreq=20 printfreq=100 diagnfreq=100 filename=r; end;\n"
            % (n_char, "\n".join(rows)))


def test_mkv_runs_in_blocks_with_the_files_of_single_generations(tmp_path, monkeypatch):
    """coding=variable: the Mkv correction is added inside the compiled generation (it kept such runs on
    the per-generation path, 0.45x MrBayes on one chain of 16 taxa); same files and screen as single
    generations, on one thread and on two."""
    _blocks_match_single_generations(tmp_path, monkeypatch, _mkv_text(), 250)


CLOCK = ("#NEXUS\nbegin mrbayes; set seed=4 swapseed=5;\nexecute %s;\nlset nst=2 rates=gamma;\n"
         "taxset apes = Homo_sapiens Pan Gorilla Pongo Hylobates; constraint apes = apes;\n"
         "prset brlenspr=clock:birthdeath clockratepr=lognormal(-3,1) topologypr=constraints(apes) "
         "nodeagepr=calibrated %s;\ncalibrate apes = uniform(1.5, 2.5);\n"
         "mcmc ngen=%d nruns=2 nchains=3 samplefreq=20 printfreq=100 diagnfreq=100 filename=r; end;\n")
CLOCK_CASES = {"strict": ("", 300), "igr": ("clockvarpr=igr", 300), "tk02": ("clockvarpr=tk02", 300),
               "cpp": ("clockvarpr=cpp cppratepr=fixed(400);\npropset Add_delete(CppEvents)$prob=200", 600)}
#                 cpp: many events, so its event rows widen during the run
# the fossilized birth-death prior, two fossil tips with free ages: AddBranch / DelBranch make and unmake
# sampled ancestors
FBD = ("#NEXUS\nbegin mrbayes; set seed=4 swapseed=5;\nexecute %s;\nlset nst=2 rates=gamma;\n"
       "prset brlenspr=clock:fossilization nodeagepr=calibrated speciationpr=exponential(5) extinctionpr=beta(2,2) "
       "fossilizationpr=beta(2,5) treeagepr=uniform(0.5,1.5);\ncalibrate Tarsius_syrichta=uniform(0.01,0.3) "
       "Lemur_catta=uniform(0.02,0.4);\n"
       "mcmc ngen=400 nruns=2 nchains=3 samplefreq=20 printfreq=100 diagnfreq=100 filename=r; end;\n")


@pytest.mark.parametrize("case", list(CLOCK_CASES) + ["fbd"])
def test_clock_runs_in_blocks_with_the_files_of_single_generations(tmp_path, monkeypatch, case):
    """Clock trees (their rows, moves and prior in compiled code) go in blocks: same files and screen as
    single generations; on two threads too (cpp: one thread, its event rows widen between generations)."""
    extra, ngen = CLOCK_CASES[case] if case != "fbd" else ("", 400)
    text = CLOCK % (TEST_DATA / "primates.nex", extra, ngen) if case != "fbd" else FBD % (TEST_DATA / "primates.nex")
    _blocks_match_single_generations(tmp_path, monkeypatch, text, ngen - 50)


def test_partitioned_runs_in_blocks_with_the_files_of_single_generations(tmp_path, monkeypatch):
    """Several pattern sets (cynmix: standard Mkv + four DNA partitions, unlinked models, rate multipliers)
    go in blocks, each parameter move's models planned for the sets it reaches: same files and screen as
    single generations, on one thread and on two."""
    text = ("#NEXUS\nbegin mrbayes; set seed=4 swapseed=5;\nexecute %s;\nset partition=favored;\n"
            "lset applyto=(2,3,4,5) nst=6 rates=gamma; lset applyto=(1) coding=variable rates=gamma;\n"
            "unlink shape=(all) revmat=(all) statefreq=(all); prset ratepr=variable;\n"
            "mcmc ngen=200 nruns=2 nchains=2 samplefreq=20 printfreq=100 diagnfreq=100 filename=r; end;\n"
            % (TEST_DATA / "cynmix.nex"))
    _blocks_match_single_generations(tmp_path, monkeypatch, text, 150)
