"""Batched generations (mbgpu.sampler.batch_step): every chain's proposal queued, one flush per pattern
set, then the decisions. Output must be byte-identical to the per-chain path (the `sampler_path` fixture's
"chain": IncrementalPartition, one instance per chain)."""
import io

import numpy as np
import pytest

from mbgpu.console import Console
from mbgpu.cuda.batch import ChainSlots
from mbgpu.interpreter import Interpreter
from mbgpu.likelihood.batched import LaneLayout
from mbgpu.likelihood.numpy_backend import NumpyBackend
from mbgpu.sampler.batch_step import PIPELINE_GROUPS, kids_table, pipeline_groups
from mbgpu.tree import random_tree
from tests.conftest import TEST_DATA as DATA
PRIMATES = ("begin mrbayes; set seed=3 swapseed=4; execute %s;\n lset nst=6 rates=invgamma;\n"
            " mcmc ngen=150 nruns=2 nchains=3 samplefreq=10 printfreq=50 diagnfreq=50 tunefreq=50 filename=r; end;\n"
            % (DATA / "primates.nex"))
CYNMIX = ("begin mrbayes; set seed=5 swapseed=6; execute %s;\n set partition=favored;\n"
          " lset applyto=(2,3,4,5) nst=6 rates=gamma; lset applyto=(1) coding=variable rates=gamma;\n"
          " unlink shape=(all) revmat=(all) statefreq=(all); prset ratepr=variable;\n"
          " mcmc ngen=40 nruns=2 nchains=2 samplefreq=5 printfreq=20 diagnfreq=20 filename=r; end;\n"
          % (DATA / "cynmix.nex"))


class LevelCheckingBackend(NumpyBackend):
    """The numpy backend with the batched calls of the CUDA backend, checking what the GPU relies on:
    within one level no operation reads or writes a buffer another operation of the level writes."""

    levels_seen = []

    def update_transition_matrices_many(self, groups):
        for eigen, rates, indices, lengths in groups:
            self.set_category_rates(rates)
            self.update_transition_matrices(eigen, indices, lengths)

    def update_partials_levels(self, ops, counts):
        first = 0
        for count in counts:
            level = ops[first:first + count]
            written = set(level[:, 0].tolist())
            assert len(written) == count, "two operations of a level write one buffer"
            assert not written & set(level[:, 3].tolist()) | set(level[:, 5].tolist()) & written
            self.update_partials(level)
            first += count
        assert first == len(ops)
        LevelCheckingBackend.levels_seen.append(len(counts))

    def scale_jobs(self, jobs):
        for cumulative, reset, indices, sign in jobs:
            if reset:
                self.reset_scale(cumulative)
            (self.accumulate_scale if sign > 0 else self.remove_scale)(cumulative, indices)

    def root_log_likelihoods(self, calls):
        return [self.root_log_likelihood(*call) for call in calls]

    def batch_launch(self, matrix_groups, ops, counts, scale_jobs, root_calls, tag=""):
        """What CudaBackend.batch_launch queues, run at once; the 'handle' holds the values."""
        self.update_transition_matrices_many(matrix_groups)
        if len(ops):
            self.update_partials_levels(ops, counts)
        self.scale_jobs(scale_jobs)
        return self.root_log_likelihoods(root_calls)

    def batch_fetch(self, handle):
        return handle


def run_block(folder, text, monkeypatch, sampler="batched", sampler_path=None):
    """Run `text` in `folder`; with the `sampler_path` fixture, on that likelihood path (else the runs' own)."""
    folder.mkdir(exist_ok=True)
    monkeypatch.chdir(folder)
    if sampler_path is not None:
        sampler_path(sampler)
    (folder / "run.nex").write_text("#NEXUS\n" + text)
    out = io.StringIO()
    Interpreter(Console(out)).run_file(str(folder / "run.nex"))
    return out.getvalue()


def assert_same_files(a, b):
    names = sorted(p.name for p in a.iterdir() if p.suffix in (".p", ".t", ".mcmc"))
    assert len(names) == 5
    for name in names:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


@pytest.mark.parametrize("block", [PRIMATES, CYNMIX], ids=["primates", "cynmix-partitioned-mkv"])
def test_batched_files_equal_per_chain_files(tmp_path, monkeypatch, sampler_path, block, interpreted):
    run_block(tmp_path / "chain", block, monkeypatch, "chain", sampler_path)
    run_block(tmp_path / "batched", block, monkeypatch, "batched", sampler_path)
    assert_same_files(tmp_path / "chain", tmp_path / "batched")


def test_batched_flush_path_equals_per_chain(tmp_path, monkeypatch, sampler_path, interpreted):
    """The one-flush-for-all-chains path (as on the GPU) on numpy: same files as chain by chain."""
    import mbgpu.likelihood.select as select

    run_block(tmp_path / "chain", PRIMATES, monkeypatch, "chain", sampler_path)
    monkeypatch.setattr(select, "_cuda_available", lambda: True)
    monkeypatch.setattr(select, "_gpu_factory", lambda precision, device, asynchronous: LevelCheckingBackend)
    monkeypatch.setattr(select, "GPU_MIN_WORK", 0)            # primates is below the size the GPU is chosen for
    LevelCheckingBackend.levels_seen.clear()
    screen = run_block(tmp_path / "flush", PRIMATES, monkeypatch, "batched", sampler_path)
    assert "Likelihood backend: CUDA GPU" in screen
    assert len(LevelCheckingBackend.levels_seen) >= 150       # a levelled flush per generation
    assert_same_files(tmp_path / "chain", tmp_path / "flush")


def test_kids_table_matches_children():
    rng = np.random.default_rng(1)
    for n in (3, 4, 9, 30):
        tree = random_tree(n, rng)
        table = kids_table(tree.parent)
        for v, kids in enumerate(tree.children()):
            assert table[v] == kids + [-1] * (3 - len(kids))


def test_lane_layout_matches_chain_slots():
    cs, lay = ChainSlots(7, 3), LaneLayout(7, 3)
    assert cs.instance_spec(10, 4, 4) == lay.instance_spec(10, 4, 4)
    v = np.arange(13)
    for lane in range(3):
        for slot in (0, 1):
            s = np.full(13, slot)
            assert lay.buffers(lane, v, s).tolist() == [cs.buffer(lane, int(x), slot) for x in v]
            assert lay.matrices(lane, v, s).tolist() == [cs.matrix(lane, int(x), slot) for x in v]
            inner = v[7:]
            assert lay.scales(lane, inner, s[7:]).tolist() == [cs.scale(lane, int(x), slot) for x in inner]
        assert lay.cumulative(lane) == cs.cumulative_scale(lane)


@pytest.mark.parametrize("groups", [1, 3])
def test_pipeline_groups_do_not_change_the_output(tmp_path, monkeypatch, sampler_path, pipeline, groups, interpreted):
    run_block(tmp_path / "one", PRIMATES, monkeypatch, "batched", sampler_path)       # the default, 2 groups
    pipeline(groups)
    run_block(tmp_path / "other", PRIMATES, monkeypatch, "batched", sampler_path)
    assert_same_files(tmp_path / "one", tmp_path / "other")


def test_runs_take_the_batched_path_in_two_pipeline_groups(tmp_path, monkeypatch, interpreted):
    """No switch: every run's chains are lanes of shared instances, stepped in PIPELINE_GROUPS = 2 groups."""
    import mbgpu.sampler.batch_step as batch_step

    assert pipeline_groups() == PIPELINE_GROUPS == 2
    seen, lanes = [], []
    launch = batch_step.launch_chains
    monkeypatch.setattr(batch_step, "launch_chains", lambda chains, tag="": seen.append(tag) or launch(chains, tag))
    lane = batch_step.LanePartition
    monkeypatch.setattr(batch_step, "LanePartition", lambda *a: lanes.append(a) or lane(*a))
    folder = tmp_path / "run"
    folder.mkdir()
    monkeypatch.chdir(folder)
    (folder / "run.nex").write_text("#NEXUS\n" + PRIMATES.replace("ngen=150", "ngen=3"))
    Interpreter(Console(io.StringIO())).run_file(str(folder / "run.nex"))
    assert len(lanes) == 6 and seen[-2:] == ["0", "1"]        # 2 runs x 3 chains, one pattern set
    with pytest.raises(AssertionError):
        batch_step.PartFactory(NumpyBackend, 4, 2, mode="fast")


def test_parsimony_fast_paths_equal_the_direct_formulas():
    """ParsSPR's candidate costs (float32 dot, exact for integer weights) and the branch-free Fitch sets
    equal the direct numpy formulas bit for bit; non-integer weights take the direct path."""
    from mbgpu.moves import graph, parsimony

    rng = np.random.default_rng(4)
    tree = random_tree(25, rng)
    masks = (1 << rng.integers(0, 4, (25, 300))).astype(np.uint32)
    masks[3, :40] = 15                                                  # missing data
    adj = graph.undirected(tree)
    final = parsimony.final_sets(adj, 0, masks.astype(np.uint8), 25)
    down = parsimony.downpass(adj, 0, masks, 25)
    order, parent = parsimony.rooted_order(adj, 0)
    for v in order:                                                     # Fitch's rule with np.where
        kids = [w for w in adj[v] if parent.get(w) == v]
        if v >= 25 and kids:
            acc = down[kids[0]]
            for k in kids[1:]:
                both = acc & down[k]
                acc = np.where(both != 0, both, acc | down[k])
            assert np.array_equal(down[v], acc)
    assert all(np.array_equal(final[v], parsimony.final_sets(adj, 0, masks, 25)[v]) for v in final)
    xs, ys = [parent[y] for y in order[1:]], order[1:]
    s_set = masks[7]
    for w in (rng.integers(0, 9, 300).astype(float), rng.random(300) * 5):
        direct = [float(w[((final[x] | final[y]) & s_set) == 0].sum()) for x, y in zip(xs, ys)]
        assert parsimony.missed_weights(final, s_set, w, xs, ys).tolist() == direct


def _moved_trees(n_tips, seed, steps):
    """Successive trees of ExtSPR proposals (topologies change, node ids and root stay)."""
    from mbgpu.moves.base import MoveContext
    from mbgpu.moves.spr import ExtSPR

    rng = np.random.default_rng(seed)
    tree, move, ctx = random_tree(n_tips, rng), ExtSPR(), MoveContext(n_tips=n_tips)
    trees = [tree]
    for _ in range(steps):
        prop = move.propose(trees[-1], rng, ctx)
        if not prop.aborted:
            trees.append(prop.tree)
    return trees


def test_topology_derived_from_the_previous_one_equals_a_fresh_one():
    from mbgpu.sampler.batch_step import _Topology

    for n in (4, 6, 25):
        trees = _moved_trees(n, n, 60)
        topo = _Topology(trees[0])
        for tree in trees[1:]:
            moved = np.flatnonzero(tree.parent != trees[0].parent).tolist()
            derived, fresh = _Topology(trees[0]).moved_to(tree, moved), _Topology(tree)
            assert derived.kids == fresh.kids and derived.root == fresh.root and derived.key == fresh.key
            step = np.flatnonzero(tree.parent != np.array(topo.parent)).tolist()
            topo = topo.moved_to(tree, step) if step else topo       # a chain of derivations too
            assert topo.kids == fresh.kids and topo.full() == fresh.full()


def test_deepest_first_is_the_paths_to_the_root_by_depth():
    """Every ancestor of a seed once, ordered by depth (deepest first), a tie by the first seed reaching it."""
    from mbgpu.sampler.batch_step import deepest_first

    rng = np.random.default_rng(7)
    for n in (4, 9, 40):
        tree = random_tree(n, rng)
        parent = tree.parent.tolist()
        for _ in range(50):
            seeds = [int(v) for v in rng.choice(np.arange(n, tree.n_nodes), size=int(rng.integers(1, 5)))]
            seeds = list(dict.fromkeys(seeds))
            first, depth = {}, {}
            for i, s in enumerate(seeds):
                path = [s]
                while parent[path[-1]] >= 0:
                    path.append(parent[path[-1]])
                for d, u in enumerate(reversed(path)):
                    first.setdefault(u, i)
                    depth[u] = d
            want = sorted(depth, key=lambda u: (-depth[u], first[u]))
            assert deepest_first(parent, seeds) == (want, [depth[u] for u in want])
    assert deepest_first(parent, []) == ([], [])


def test_level_ops_is_a_stable_sort_by_level():
    from mbgpu.likelihood.batched import LaneJob, level_ops

    rng = np.random.default_rng(3)
    jobs, rows, levels = [], [], []
    for lane in range(4):
        n = int(rng.integers(0, 9))
        lv = sorted(rng.integers(0, 5, n).tolist())
        ops = rng.integers(0, 1000, (n, 7))
        jobs.append(LaneJob(lane, None, None, [], [], ops.ravel().tolist(), lv, [], 0, ()))
        rows.append(ops)
        levels += lv
    ops, counts = level_ops(jobs)
    want = np.concatenate(rows)[np.argsort(np.array(levels, dtype=np.int64), kind="stable")]
    assert np.array_equal(ops, want) and counts == [c for c in np.bincount(levels).tolist() if c]
    empty, none = level_ops([LaneJob(0, None, None, [], [], [], [], [], 0, ())])
    assert empty.shape == (0, 7) and none == []


def test_full_order_is_the_internal_nodes_stably_sorted_by_depth():
    from mbgpu.sampler.batch_step import _Topology

    for n in (3, 4, 10, 40):
        for tree in _moved_trees(n, n + 1, 30)[::5]:
            depth = {}
            for v in range(tree.n_nodes):
                d, u = 0, v
                while tree.parent[u] >= 0:
                    u, d = int(tree.parent[u]), d + 1
                depth[v] = d
            want = sorted(range(n, tree.n_nodes), key=lambda v: -depth[v])
            assert _Topology(tree).full() == (want, [depth[v] for v in want])
