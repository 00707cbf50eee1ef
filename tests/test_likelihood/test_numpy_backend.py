"""The protocol as the numpy backend implements it: ops, node classes, scale buffers, slots."""
import numpy as np
import pytest

from mbgpu.likelihood import NONE, InstanceSpec, LikelihoodBackend, NodeSlots, NumpyBackend, make_ops
from mbgpu.likelihood.evaluate import tree_operations
from mbgpu.models import ModelSpec, build_model
from mbgpu.tree import random_tree

MODEL = build_model(ModelSpec(datatype="dna", nst=2, kappa=3.0, rates="gamma", alpha=0.4,
                              statefreqs=(0.1, 0.2, 0.3, 0.4)))


def make_backend(n_tips=4, n_patterns=5):
    spec = InstanceSpec(n_tips=n_tips, n_partials=6, n_patterns=n_patterns, n_states=4, n_categories=4,
                        n_matrices=8, n_scale_buffers=4)
    b = NumpyBackend(spec)
    b.set_category_rates(MODEL.category_rates)
    return b


def test_implements_protocol_and_sizes():
    b = make_backend()
    assert isinstance(b, LikelihoodBackend)
    assert b.spec.n_buffers == 10
    sizes = b.spec.bytes_required()
    assert sizes["partials"] == 8 * 6 * 4 * 5 * 4 and sizes["matrices"] == 8 * 8 * 4 * 16


def test_tip_states_equal_tip_partials_in_every_node_class():
    rng = np.random.default_rng(1)
    states = rng.integers(0, 5, size=(4, 5))                 # 4 = missing
    lengths = rng.uniform(0.05, 0.5, 6)
    results = []
    for compact in (True, False):
        b = make_backend()
        for t in range(4):
            if compact:
                b.set_tip_states(t, states[t])
            else:
                b.set_tip_partials(t, np.vstack([np.eye(4), np.ones(4)])[states[t]])
        b.update_transition_matrices(MODEL.eigen, np.arange(6), lengths)
        # tip-tip (4 <- 0,1), tip-tip (5 <- 2,3), internal-internal (6 <- 4,5), tip-internal (7 <- 0,6)
        b.update_partials(make_ops([(4, NONE, NONE, 0, 0, 1, 1), (5, NONE, NONE, 2, 2, 3, 3),
                                    (6, NONE, NONE, 4, 4, 5, 5), (7, NONE, NONE, 0, 0, 6, 5)]))
        results.append(b.partials.copy())
    assert results[0] == pytest.approx(results[1], rel=1e-14)


def test_scale_write_read_accumulate_remove():
    rng = np.random.default_rng(2)
    b = make_backend()
    for t in range(4):
        b.set_tip_states(t, rng.integers(0, 4, 5))
    b.update_transition_matrices(MODEL.eigen, np.arange(4), np.full(4, 0.3))
    b.update_partials(make_ops([(4, NONE, NONE, 0, 0, 1, 1)]))
    raw = b.partials[0].copy()
    b.update_partials(make_ops([(5, 0, NONE, 0, 0, 1, 1)]))
    assert b.partials[1].max(axis=(0, 2)) == pytest.approx(np.ones(5))
    assert b.partials[1] * np.exp(b.scale[0])[None, :, None] == pytest.approx(raw, rel=1e-14)
    b.update_partials(make_ops([(6, NONE, 0, 0, 0, 1, 1)]))       # read: reuse stored factors
    assert b.partials[2] == pytest.approx(b.partials[1], rel=1e-14)
    b.reset_scale(3)
    b.accumulate_scale(3, np.array([0, 0]))
    assert b.scale[3] == pytest.approx(2 * b.scale[0])
    b.remove_scale(3, np.array([0]))
    assert b.scale[3] == pytest.approx(b.scale[0])


def test_double_buffered_slots_keep_the_other_slot():
    rng = np.random.default_rng(3)
    tree = random_tree(6, rng)
    slots = NodeSlots(6)
    b = NumpyBackend(slots.instance_spec(7, 4, 4))
    b.set_category_rates(MODEL.category_rates)
    for t in range(6):
        b.set_tip_states(t, rng.integers(0, 4, 7))
    nodes = np.flatnonzero(tree.parent >= 0)

    def evaluate(lengths, slot):
        b.update_transition_matrices(MODEL.eigen, np.array([slots.matrix(v, slot) for v in nodes]), lengths)
        ops, scales, root, child, cm = tree_operations(tree, slots, True, slot)
        b.update_partials(ops)
        cum = slots.cumulative_scale(slot)
        b.reset_scale(cum)
        b.accumulate_scale(cum, scales)
        return b.root_log_likelihood(root, MODEL.frequencies, MODEL.category_weights, 0.0, cum, child, cm)

    first = evaluate(tree.brlen[nodes], 0)
    proposal = evaluate(tree.brlen[nodes] * 1.7, 1)
    assert proposal != pytest.approx(first)
    root, child = slots.buffer(tree.root, 0), slots.buffer(tree.children()[tree.root][2], 0)
    again = b.root_log_likelihood(root, MODEL.frequencies, MODEL.category_weights, 0.0,
                                  slots.cumulative_scale(0), child, slots.matrix(tree.children()[tree.root][2], 0))
    assert again == first                                     # "reject": slot 0 untouched


def test_site_likelihood_weights_and_compensated_sum():
    b = make_backend(n_patterns=3)
    for t in range(4):
        b.set_tip_states(t, np.array([0, 1, 2]))
    b.update_transition_matrices(MODEL.eigen, np.arange(4), np.full(4, 0.2))
    b.update_partials(make_ops([(4, NONE, NONE, 0, 0, 1, 1), (5, NONE, NONE, 2, 2, 3, 3)]))
    b.set_transition_matrices(np.array([5]), np.broadcast_to(np.eye(4), (1, 4, 4, 4)))
    site = b.site_log_likelihoods(4, MODEL.frequencies, MODEL.category_weights, 0.0, NONE, 5, 5)
    b.set_pattern_weights(np.array([2.0, 0.5, 1.0]))
    total = b.root_log_likelihood(4, MODEL.frequencies, MODEL.category_weights, 0.0, NONE, 5, 5)
    assert total == pytest.approx(2.0 * site[0] + 0.5 * site[1] + site[2], rel=1e-15)


def test_compensated_sum_keeps_what_naive_summation_loses():
    from mbgpu.likelihood.numpy_backend import compensated_sum

    values = np.array([1e16, 1.0, -1e16] + [0.1] * 10)
    assert sum(values.tolist()) != 2.0                        # left-to-right float addition loses the 1.0
    assert compensated_sum(values) == 2.0
