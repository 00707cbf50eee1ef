"""The core's device path (mbgpu.core.device_division): the packed flush it writes, replayed on the numpy
reference (tests.test_core.packed_host), gives every chain the reference log likelihood, level by
level in a valid order, for branch, topology and model proposals and after accepts and rejects."""
import numpy as np
import pytest

from mbgpu.core import trees as T
from mbgpu.core.device_division import DeviceDivision, flush_capacity
from mbgpu.core.division import PROP
from mbgpu.cuda.batch import unpack_flush
from mbgpu.moves import ExtSPR, MoveContext, Multiplier
from mbgpu.sampler.model_state import rate_multiplier, spec_with_values
from tests.test_core.build import CYNMIX_PARTS, PRIMATES_GTR, build_chains
from tests.test_core.host_driver import compiled_packed_choice
from tests.test_core.packed_host import packed_choice
from tests.test_core.test_division import _reference, _set_proposal


def _propose(chains, params, trees, div, j, c, rng, ctx):
    """Chain c's proposal: 0 a topology move, 1 a branch length, 2 a new model (all branches)."""
    ch = chains[c]
    move = ExtSPR() if c % 3 == 0 else Multiplier()
    tree = move.propose(T.from_arrays(ch.tree.n_tips, trees.parent[c], trees.brlen[c]), rng, ctx).tree
    values = [np.array(v) for v in ch.values]
    if c % 3 == 2:
        values = [v * rng.uniform(0.8, 1.25, v.shape) if v.size == 1 else v for v in values]
        part = ch.parts[j]
        model = ch.models.get(spec_with_values(part.spec, params, values, part.division))
        div.set_model(c, PROP, model, rate_multiplier(params, values, part.division, part.fixed_mult))
        tree = T.from_arrays(ch.tree.n_tips, trees.parent[c], trees.brlen[c])
    _set_proposal(trees, c, tree)
    div.todo[c] = 2 if c % 3 == 2 else 1
    return tree, values


@pytest.mark.parametrize("wrap", [packed_choice, compiled_packed_choice], ids=["pycuda-path", "compiled-flushes"])
@pytest.mark.parametrize("commands", [PRIMATES_GTR, CYNMIX_PARTS], ids=["primates", "cynmix"])
def test_packed_flushes_give_the_reference_likelihoods(tmp_path, commands, wrap):
    """compiled-flushes: queued and collected by compiled code (mbgpu.cuda.core_flush) through a driver
    on the host (tests.test_core.host_driver) that replays what the launches describe."""
    chains, params, _s = build_chains(tmp_path, commands, nchains=4, wrap=wrap)
    rng = np.random.default_rng(8)
    ctx = MoveContext(n_tips=chains[0].tree.n_tips)
    for j in range(len(chains[0].parts)):
        trees = T.ChainTrees([ch.tree for ch in chains])
        div = DeviceDivision(chains[0].parts[j].inc.shared, [ch.parts[j].inc for ch in chains])
        assert (div.flushes is not None) == (wrap is compiled_packed_choice)
        div.refresh(trees)
        for step in range(10):
            proposals = [_propose(chains, params, trees, div, j, c, rng, ctx) for c in range(len(chains))]
            div.todo[1] = 0 if step % 4 == 3 else div.todo[1]          # a chain without work now and then
            div.evaluate(trees)
            for c, ch in enumerate(chains):
                if div.todo[c]:
                    assert div.lnl_p[c] == pytest.approx(_reference(ch, j, *proposals[c]), rel=1e-11, abs=1e-9)
            accepted = np.array([step % 2 == 0, True, step % 3 == 0, step % 2 == 1])
            div.keep(accepted)
            for c in range(len(chains)):
                if accepted[c] and div.todo[c]:
                    trees.parent[c], trees.kids[c], trees.brlen[c] = (trees.parent_p[c], trees.kids_p[c],
                                                                      trees.brlen_p[c])
                else:
                    trees.parent_p[c], trees.kids_p[c], trees.brlen_p[c] = (trees.parent[c], trees.kids[c],
                                                                            trees.brlen[c])
            div.todo[:] = 0


def test_a_full_flush_fits_and_each_job_is_child_first(tmp_path):
    """Every chain with a new model: the flush fits the buffer, holds every branch's matrix and every
    internal node's operation once, one job per chain whose operations read only tips and the job's
    earlier results, and the root parameters are the chains' models."""
    chains, _p, _s = build_chains(tmp_path, PRIMATES_GTR, nchains=3, wrap=packed_choice)
    trees = T.ChainTrees([ch.tree for ch in chains])
    div = DeviceDivision(chains[0].parts[0].inc.shared, [ch.parts[0].inc for ch in chains])
    div.refresh(trees)                                      # also copies each chain's model into row PROP
    div.todo[:] = 2
    flush = div.plan(trees)
    n, nt, s, k = div.n_nodes, div.n_tips, div.n_states, div.n_categories
    assert flush.blob.size <= flush_capacity(3, n, nt, s, k)
    got = unpack_flush(flush, s, k)
    used = [int((trees.parent[c] >= 0).sum()) for c in range(3)]          # branches of each chain's tree
    assert flush.n_mat == sum(used) and flush.n_eig == 3 and got["counts"] == []
    inner = [u + 1 - nt for u in used]                                    # internal nodes: branches + 1 - tips
    assert got["spans"][:, :2].tolist() == [[0, inner[0]], [inner[0], inner[1]], [inner[0] + inner[1], inner[2]]]
    assert len(set(got["ops"][:, 0].tolist())) == len(got["ops"]) == sum(inner)
    for first, count, weight in got["spans"].tolist():
        seen = set()
        for row in got["ops"][first:first + count].tolist():
            assert all(child < nt or child in seen for child in (row[3], row[5]))
            seen.add(row[0])
        rows = got["ops"][first:first + count]           # weight: outputs plus internal children read
        assert weight == count + int((rows[:, 3] >= nt).sum() + (rows[:, 5] >= nt).sum())
    assert np.allclose(got["params"][:, s + k], [ch.parts[0].inc.model.pinvar for ch in chains])
    assert np.allclose(got["params"][:, :s], [ch.parts[0].inc.model.frequencies for ch in chains])


def _run(folder, monkeypatch, wrap, edit=lambda text: text):
    """Run test_stepper's block (changed by `edit`) in `folder` (the chosen backend wrapped by `wrap`);
    the kinds of pattern-set views the core used, with its number of groups."""
    import io

    import mbgpu.core.stepper as stepper
    import mbgpu.likelihood.select as select
    from mbgpu.console import Console
    from mbgpu.interpreter import Interpreter
    from tests.test_core.test_stepper import BLOCK

    folder.mkdir(exist_ok=True)
    monkeypatch.chdir(folder)
    (folder / "run.nex").write_text(edit(BLOCK.replace("lset nst=6", "set usebeagle=no; lset nst=6")))
    choose, step, kinds = select.choose_backend, stepper.CoreStepper.step, set()

    def counted(self, *a):
        kinds.update("%s/%d" % (type(d).__name__, self.groups) for d in self.divisions)
        return step(self, *a)

    monkeypatch.setattr(select, "choose_backend", lambda *a, **k: wrap(choose(*a, **k)))
    monkeypatch.setattr(stepper.CoreStepper, "step", counted)
    Interpreter(Console(io.StringIO())).run_file(str(folder / "run.nex"))
    monkeypatch.undo()
    return kinds


def test_a_run_through_packed_flushes_writes_the_host_runs_files(tmp_path, monkeypatch):
    """The whole sampler on the device path (flushes replayed on the host backend, chains in two groups
    launched before either decides) writes the same samples as the core's host path (one group): same
    trees, same parameters, log likelihoods to print precision."""
    assert _run(tmp_path / "host", monkeypatch, lambda choice: choice) == {"DivisionArrays/1"}
    assert _run(tmp_path / "device", monkeypatch, packed_choice) == {"DeviceDivision/2"}     # two groups
    for name in ("r.run1.p", "r.run2.p", "r.run1.t", "r.run2.t"):
        assert (tmp_path / "host" / name).read_text() == (tmp_path / "device" / name).read_text(), name


def test_a_device_run_resumed_from_its_checkpoint_is_byte_identical(tmp_path, monkeypatch):
    """Group 0 proposes and launches its next generation before the loop's swaps, samples and
    checkpoint: the checkpoint holds the decided state, so a run to 150 continued with append=yes to
    300 writes exactly the files of a straight run to 300."""
    _run(tmp_path / "straight", monkeypatch, packed_choice)
    assert _run(tmp_path / "resumed", monkeypatch, packed_choice,
                lambda text: text.replace("ngen=300", "ngen=150")) == {"DeviceDivision/2"}
    _run(tmp_path / "resumed", monkeypatch, packed_choice, lambda text: text.replace("ngen=300", "ngen=300 append=yes"))
    for name in ("r.run1.p", "r.run2.p", "r.run1.t", "r.run2.t"):
        assert (tmp_path / "straight" / name).read_text() == (tmp_path / "resumed" / name).read_text(), name


def test_a_device_run_with_fast_tuning_writes_the_host_runs_files(tmp_path, monkeypatch):
    """Group 0's next proposal, launched before the swaps, used its chains' tuning; a swap hands a chain
    another heat's tuning (MrBayes' tuningParam[chainId]), so that proposal is made again: with tunefreq=10
    the tunings differ between heats early, and the files still equal the host path's."""
    fast = lambda text: text.replace("filename=r", "tunefreq=10 filename=r")  # noqa: E731
    assert _run(tmp_path / "host", monkeypatch, lambda choice: choice, fast) == {"DivisionArrays/1"}
    assert _run(tmp_path / "device", monkeypatch, packed_choice, fast) == {"DeviceDivision/2"}
    for name in ("r.run1.p", "r.run2.p", "r.run1.t", "r.run2.t", "r.mcmc"):
        assert (tmp_path / "host" / name).read_text() == (tmp_path / "device" / name).read_text(), name


@pytest.mark.parametrize("lset", ["lset nst=6 rates=invgamma;", "lset nst=2 rates=gamma coding=variable;"])
def test_compiled_flushes_run_the_same_mcmc_as_the_pycuda_path(tmp_path, monkeypatch, lset):
    """Whole runs of the core (two groups of chains in flight, group 0 ahead, heat swaps) with flushes
    queued by compiled code on the host driver and by the pycuda path's calls on a PackedHost: the same
    trees and log likelihoods, bit for bit, at every sample (coding=variable: the host's share added)."""
    import io

    from mbgpu.console import Console
    from mbgpu.interpreter import Interpreter
    from mbgpu.likelihood.select import choose_backend
    from mbgpu.sampler.mc3 import RunOptions
    from tests.conftest import TEST_DATA
    from tests.test_cuda.test_sampler_gpu import SETUP, trace_run

    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.nex").write_text("#NEXUS\n" + SETUP.format(data=TEST_DATA / "primates.nex", lset=lset, ngen=60))
    interp = Interpreter(Console(io.StringIO()))
    interp.run_file(str(tmp_path / "s.nex"))
    opts = RunOptions.from_settings(interp.settings.mcmc)
    choice = choose_backend(interp.settings.options, Console(io.StringIO()), cpu="numpy", cuda_present=lambda: False)
    made, init = [], DeviceDivision.__init__

    def noted(self, *a):
        init(self, *a)
        made.append(self.flushes is not None)

    monkeypatch.setattr(DeviceDivision, "__init__", noted)
    compiled = trace_run(interp.settings, compiled_packed_choice(choice), opts)
    pycuda = trace_run(interp.settings, packed_choice(choice), opts)
    assert made == [True, False] and len(compiled) == 7
    for row_a, row_b in zip(compiled, pycuda):
        for (pa, ba, la), (pb, bb, lb) in zip(row_a, row_b):
            assert np.array_equal(pa, pb) and np.array_equal(ba, bb) and la == lb
