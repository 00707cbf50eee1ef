"""64-bit offsets: ta(MC)^3's large case, 31 taxa x 360,031 protein sites (WAG+G4, fp64), with partials over
4 GiB and over 2^31 elements, checked against the numpy backend on 5,000-site slices at both ends."""
import numpy as np
import pytest

from mbgpu.likelihood import NodeSlots, NumpyBackend, tree_operations
from mbgpu.models import ModelSpec, build_model
from mbgpu.tree import random_tree

pytestmark = [pytest.mark.gpu, pytest.mark.slow]
N_TAXA, N_SITES, SLICE = 31, 360_031, 5_000


def evaluate(backend, model, tree, slots, slot, sites=False):
    nodes = np.flatnonzero(tree.parent >= 0)
    backend.update_transition_matrices(model.eigen, [slots.matrix(v, slot) for v in nodes], tree.brlen[nodes])
    ops, scales, root, child, cm = tree_operations(tree, slots, True, slot)
    backend.update_partials(ops)
    cum = slots.cumulative_scale(slot)
    backend.reset_scale(cum)
    backend.accumulate_scale(cum, scales)
    args = (root, model.frequencies, model.category_weights, model.pinvar, cum, child, cm)
    return backend.site_log_likelihoods(*args) if sites else backend.root_log_likelihood(*args)


def test_360031_protein_sites_beyond_32_bit_offsets(device):
    from mbgpu.cuda.backend import CudaBackend

    rng = np.random.default_rng(360031)
    model = build_model(ModelSpec(datatype="protein", aamodel="wag", rates="gamma", alpha=0.5))
    tree = random_tree(N_TAXA, rng, brlen=lambda g, n: g.exponential(0.1, n))
    states = rng.integers(0, 20, size=(N_TAXA, N_SITES))
    states[rng.random(states.shape) < 0.02] = 20                       # missing cells
    slots = NodeSlots(N_TAXA, per_node=4)                               # 120 partial buffers
    spec = slots.instance_spec(N_SITES, 20, 4)
    elements = spec.n_partials * 4 * N_SITES * 20
    assert elements > 2**31 and 8 * elements > 4 * 2**30
    gpu = CudaBackend(spec, device=device)
    gpu.set_category_rates(model.category_rates)
    for t in range(N_TAXA):
        gpu.set_tip_states(t, states[t])
    site = evaluate(gpu, model, tree, slots, 3, sites=True)            # slot 3: the highest buffers
    top = max(slots.buffer(v, 3) for v in range(N_TAXA, tree.n_nodes)) - N_TAXA
    assert top * 4 * N_SITES * 20 > 2**31 and 8 * top * 4 * N_SITES * 20 > 8 * 2**30
    small = NodeSlots(N_TAXA, per_node=1)
    for part in (slice(0, SLICE), slice(N_SITES - SLICE, N_SITES)):
        ref = NumpyBackend(small.instance_spec(SLICE, 20, 4))
        ref.set_category_rates(model.category_rates)
        for t in range(N_TAXA):
            ref.set_tip_states(t, states[t, part])
        np.testing.assert_allclose(site[part], evaluate(ref, model, tree, small, 0, sites=True), rtol=1e-10)
    first = evaluate(gpu, model, tree, slots, 3)
    assert first == pytest.approx(float(np.sum(site)), rel=1e-12)
    for k in range(12):                                                # repeated evaluations, every slot
        scaled = tree.copy()
        scaled.brlen[:] = tree.brlen * (0.8 + 0.05 * k)
        assert np.isfinite(evaluate(gpu, model, scaled, slots, k % 4))
    assert evaluate(gpu, model, tree, slots, 3) == first               # deterministic
