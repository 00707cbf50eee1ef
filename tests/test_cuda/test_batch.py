"""Level scheduling and many chains in one instance (CPU only, checked with the numpy backend)."""
import numpy as np
import pytest

from mbgpu.cuda.batch import ChainSlots, root_job_arrays, scale_job_arrays, schedule_levels
from mbgpu.likelihood import NONE, NodeSlots, NumpyBackend, make_ops, tree_operations
from mbgpu.models import ModelSpec, build_model
from mbgpu.tree import random_tree


def test_levels_respect_every_dependency():
    rng = np.random.default_rng(4)
    tree = random_tree(12, rng)
    ops, *_ = tree_operations(tree, NodeSlots(12), True)
    order, counts = schedule_levels(ops)
    assert sorted(order.tolist()) == list(range(len(ops))) and sum(counts) == len(ops)
    level_of = np.repeat(np.arange(len(counts)), counts)[np.argsort(order)]
    for i, row in enumerate(ops):
        for j in range(i):
            if ops[j, 0] in (row[3], row[5]):
                assert level_of[j] < level_of[i]
    assert counts[0] >= 2                     # independent nodes share a launch


def test_write_after_read_and_scale_dependencies_separate_levels():
    ops = make_ops([(5, 0, NONE, 0, 0, 1, 1), (6, NONE, 0, 2, 2, 3, 3),    # reads scale 0 written above
                    (7, NONE, NONE, 5, 5, 4, 4), (5, NONE, NONE, 0, 0, 2, 2)])   # rewrites 5 after a read
    order, counts = schedule_levels(ops)
    assert counts == [1, 1, 1, 1] or counts == [1, 2, 1]
    level = {int(o): k for k, o in enumerate(order)}
    assert level[1] > level[0] and level[3] > level[2] > level[0]


def test_chain_slots_give_each_chain_the_single_chain_likelihood():
    rng = np.random.default_rng(5)
    models = [build_model(ModelSpec(datatype="dna", nst=2, kappa=k, rates="gamma", alpha=a))
              for k, a in ((2.0, 0.3), (5.0, 1.2), (3.0, 0.7))]
    trees = [random_tree(7, rng) for _ in models]
    states = rng.integers(0, 5, size=(7, 30))
    cs = ChainSlots(7, len(models))
    many = NumpyBackend(cs.instance_spec(30, 4, 4))
    for t in range(7):
        many.set_tip_states(t, states[t])
    rows, expected = [], []
    for k, (model, tree) in enumerate(zip(models, trees)):
        nodes = np.flatnonzero(tree.parent >= 0)
        many.set_category_rates(model.category_rates)
        many.update_transition_matrices(model.eigen, [cs.matrix(k, v) for v in nodes], tree.brlen[nodes])
        ops, scales, root, child, cm = cs.tree_operations(tree, k)
        rows.append(ops)
        expected.append((root, scales, child, cm))
        one = NumpyBackend(NodeSlots(7).instance_spec(30, 4, 4))
        one.set_category_rates(model.category_rates)
        for t in range(7):
            one.set_tip_states(t, states[t])
        o_ops, o_sc, o_root, o_child, o_cm = tree_operations(tree, NodeSlots(7))
        one.update_transition_matrices(model.eigen, [NodeSlots(7).matrix(v) for v in nodes], tree.brlen[nodes])
        one.update_partials(o_ops)
        one.accumulate_scale(NodeSlots(7).cumulative_scale(), o_sc)
        expected[-1] += (one.root_log_likelihood(o_root, model.frequencies, model.category_weights, 0.0,
                                                 NodeSlots(7).cumulative_scale(), o_child, o_cm),)
    many.update_partials(np.concatenate(rows))
    for k, (root, scales, child, cm, lnl) in enumerate(expected):
        cum = cs.cumulative_scale(k)
        many.accumulate_scale(cum, scales)
        got = many.root_log_likelihood(root, models[k].frequencies, models[k].category_weights, 0.0, cum, child, cm)
        assert got == pytest.approx(lnl, rel=1e-13)


def test_job_tables():
    table, flat = scale_job_arrays([(9, True, [1, 2], 1), (8, False, [], -1)])
    assert table.tolist() == [[9, 1, 0, 2, 1], [8, 0, 2, 0, -1]] and flat.tolist() == [1, 2]
    jobs, params = root_job_arrays([(5, np.full(4, 0.25), np.full(2, 0.5), 0.2, 3, NONE, NONE)], 4, 2)
    assert jobs.tolist() == [[5, 3, NONE, 0]]
    assert params[0, -2] == 0.2 and params[0, -1] == pytest.approx(np.log(0.8))


def test_resident_blocks_follows_cuda_occupancy_rules():
    """Blocks per multiprocessor on an H100's limits: registers per warp in units of 256, shared memory
    with the 1 KiB reservation, threads and the block cap decide (the jobs kernel's grid is one wave)."""
    from mbgpu.cuda.backend import resident_blocks

    h100 = {"registers": 65536, "threads": 2048, "shared": 233472, "blocks": 32, "reserved": 1024}
    assert resident_blocks(78, 256, 2368, h100) == 3          # 80 registers a thread: 20,480 a block
    assert resident_blocks(50, 256, 4912, h100) == 4          # 56 a thread
    assert resident_blocks(128, 256, 30720, h100) == 2
    assert resident_blocks(32, 256, 100 * 1024, h100) == 2    # shared memory decides
    assert resident_blocks(16, 1024, 0, h100) == 2            # threads decide
    assert resident_blocks(8, 32, 0, h100) == 32              # the block cap decides
    assert resident_blocks(255, 1024, 0, h100) == 1           # never below one
