"""The CUDA backend against the numpy backend (1e-10 relative in fp64) and the MrBayes oracles."""
import functools
import zlib

import numpy as np
import pytest

from mbgpu.likelihood import NONE, InstanceSpec, LikelihoodBackend, NodeSlots, NumpyBackend, make_ops
from mbgpu.likelihood import PartitionLikelihood, total_log_likelihood, tree_operations
from mbgpu.models import ModelSpec, build_model
from mbgpu.tree import random_tree

pytestmark = pytest.mark.gpu
REL = 1e-10

MODELS = {
    "dna_gtr_i_g4": ModelSpec(datatype="dna", nst=6, revmat=(1.0, 4.0, 0.7, 1.2, 3.9, 1.0),
                              statefreqs=(0.3, 0.2, 0.22, 0.28), rates="invgamma", alpha=0.5, pinvar=0.2),
    "dna_hky_g8": ModelSpec(datatype="dna", nst=2, kappa=3.0, rates="gamma", alpha=0.3, ngammacat=8),
    "dna_jc": ModelSpec(datatype="dna", nst=1),
    "protein_wag_g4": ModelSpec(datatype="protein", aamodel="wag", rates="gamma", alpha=0.7),
    "protein_lg_i": ModelSpec(datatype="protein", aamodel="lg", rates="propinv", pinvar=0.1),
    "mk3_g4": ModelSpec(datatype="standard", n_states=3, rates="gamma", alpha=0.8),
    "mk5": ModelSpec(datatype="standard", n_states=5),
    "mkv2_g4": ModelSpec(datatype="standard", n_states=2, coding="variable", rates="gamma", alpha=0.8),
}


def cuda_factory(device, precision="double"):
    from mbgpu.cuda.backend import CudaBackend

    return functools.partial(CudaBackend, device=device, precision=precision)


def random_tips(rng, n_taxa, n_patterns, n_states, ambiguity):
    """One-hot tips with some missing cells; with `ambiguity` also partial ambiguity vectors."""
    states = rng.integers(0, n_states, size=(n_taxa, n_patterns))
    tips = np.zeros((n_taxa, n_patterns, n_states))
    np.put_along_axis(tips, states[..., None], 1.0, axis=2)
    tips[rng.random((n_taxa, n_patterns)) < 0.05] = 1.0
    if ambiguity:
        amb = rng.random((n_taxa, n_patterns)) < 0.1
        tips[amb] = np.maximum(tips[amb], rng.random((int(amb.sum()), n_states)) < 0.4)
        tips[: n_taxa // 3] = np.where(rng.random((n_taxa // 3, n_patterns, 1)) < 0.1, 1.0, tips[: n_taxa // 3])
    return tips


@pytest.mark.parametrize("name", sorted(MODELS))
@pytest.mark.parametrize("ambiguity", [False, True])
def test_random_trees_match_numpy(device, name, ambiguity):
    rng = np.random.default_rng(zlib.crc32(("%s-%s" % (name, ambiguity)).encode()))
    model = build_model(MODELS[name])
    for n_taxa, n_patterns in ((5, 37), (23, 513)):
        tree = random_tree(n_taxa, rng)
        tips = random_tips(rng, n_taxa, n_patterns, model.n_states, ambiguity)
        weights = rng.integers(1, 4, n_patterns).astype(float)
        for scaling in (True, 3, False):
            ref = PartitionLikelihood(tips, weights, model, 1.3, scaling=scaling)
            gpu = PartitionLikelihood(tips, weights, model, 1.3, backend=cuda_factory(device), scaling=scaling)
            assert isinstance(gpu.backend, LikelihoodBackend)
            want, got = ref.log_likelihood(tree), gpu.log_likelihood(tree)
            assert got == pytest.approx(want, rel=REL, abs=0), (name, n_taxa, scaling, got - want)
            np.testing.assert_allclose(gpu.site_log_likelihoods(tree), ref.site_log_likelihoods(tree), rtol=REL)


def test_partitions_match_numpy(device):
    rng = np.random.default_rng(11)
    tree = random_tree(17, rng)
    parts = [(MODELS["dna_gtr_i_g4"], 0.5), (MODELS["protein_wag_g4"], 1.7), (MODELS["mk3_g4"], 1.0)]
    ref, gpu = [], []
    for spec, mult in parts:
        model = build_model(spec)
        tips = random_tips(rng, 17, 200, model.n_states, True)
        w = np.ones(200)
        ref.append(PartitionLikelihood(tips, w, model, mult))
        gpu.append(PartitionLikelihood(tips, w, model, mult, backend=cuda_factory(device)))
    assert total_log_likelihood(gpu, tree) == pytest.approx(total_log_likelihood(ref, tree), rel=REL, abs=0)


def test_oracles_match_numpy_and_mrbayes(device, oracle_dir, oracle_cases, monkeypatch):
    names = sorted(oracle_cases.CASES)
    for name in names:
        path = oracle_dir / (name + ".nex")
        expected = float((oracle_dir / (name + ".lnl")).read_text().split()[0])
        ref_parts, tree = oracle_cases.build_partitions(path, oracle_cases.CASES[name])
        with monkeypatch.context() as m:
            m.setattr(oracle_cases, "PartitionLikelihood",
                      functools.partial(PartitionLikelihood, backend=cuda_factory(device)))
            gpu_parts, _ = oracle_cases.build_partitions(path, oracle_cases.CASES[name])
        assert all(type(p.backend).__name__ == "CudaBackend" for p in gpu_parts)
        want, got = total_log_likelihood(ref_parts, tree), total_log_likelihood(gpu_parts, tree)
        assert got == pytest.approx(want, rel=REL, abs=0), (name, got, want)
        assert got == pytest.approx(expected, abs=1e-8, rel=0), (name, got, expected)
    assert len(names) == 36


def _pair(device, spec, precision="double"):
    from mbgpu.cuda.backend import CudaBackend

    return NumpyBackend(spec), CudaBackend(spec, device=device, precision=precision)


def test_node_classes_scale_read_and_scale_arithmetic(device):
    rng = np.random.default_rng(2)
    model = build_model(MODELS["dna_hky_g8"])
    spec = InstanceSpec(n_tips=4, n_partials=6, n_patterns=300, n_states=4, n_categories=8, n_matrices=8,
                        n_scale_buffers=5)
    ref, gpu = _pair(device, spec)
    states = rng.integers(0, 5, size=(4, 300))
    ambiguous = (rng.random((300, 4)) < 0.5) + np.eye(4)[states[3] % 4]
    for b in (ref, gpu):
        b.set_category_rates(model.category_rates)
        for t in range(3):
            b.set_tip_states(t, states[t])
        b.set_tip_partials(3, ambiguous)
        b.update_transition_matrices(model.eigen, np.arange(8), np.array([0.1, 0.2, 0.05, 0.4, 0.3, 0.15, 0.7, 1.1]))
    ops = make_ops([(4, 0, NONE, 0, 0, 1, 1), (5, NONE, NONE, 2, 2, 3, 3), (6, 1, NONE, 4, 4, 5, 5),
                    (7, NONE, 0, 0, 0, 1, 1), (8, NONE, NONE, 6, 5, 2, 1), (9, 2, NONE, 8, 3, 7, 2)])
    for b in (ref, gpu):
        b.update_partials(ops)
        b.reset_scale(4)
        b.accumulate_scale(4, np.array([0, 1, 2, 2]))
        b.remove_scale(4, np.array([2]))
    for buf in range(4, 10):
        np.testing.assert_allclose(gpu.partials_of(buf), ref.partials[buf - 4], rtol=REL, atol=1e-300)
    for s in (0, 1, 2, 4):
        np.testing.assert_allclose(gpu.scale_of(s), ref.scale[s], rtol=REL, atol=1e-13)
    for child, cm, pinv in ((NONE, NONE, 0.0), (3, 6, 0.3), (0, 7, 0.0), (7, 7, 0.1)):
        args = (9, model.frequencies, model.category_weights, pinv, 4, child, cm)
        assert gpu.root_log_likelihood(*args) == pytest.approx(ref.root_log_likelihood(*args), rel=REL, abs=0)


def test_set_transition_matrices_and_weights(device):
    rng = np.random.default_rng(3)
    spec = InstanceSpec(n_tips=3, n_partials=2, n_patterns=50, n_states=20, n_categories=2, n_matrices=3,
                        n_scale_buffers=1)
    ref, gpu = _pair(device, spec)
    mats = rng.random((3, 2, 20, 20))
    w = rng.integers(1, 9, 50).astype(float)
    states = rng.integers(0, 21, size=(3, 50))
    for b in (ref, gpu):
        for t in range(3):
            b.set_tip_states(t, states[t])
        b.set_transition_matrices(np.arange(3), mats)
        b.set_pattern_weights(w)
        b.update_partials(make_ops([(3, 0, NONE, 0, 0, 1, 1)]))
    args = (3, np.full(20, 0.05), np.array([0.3, 0.7]), 0.0, 0, 2, 2)
    assert gpu.root_log_likelihood(*args) == pytest.approx(ref.root_log_likelihood(*args), rel=REL, abs=0)


def test_batched_chains_equal_separate_numpy_chains(device):
    from mbgpu.cuda.batch import ChainSlots
    from mbgpu.cuda.backend import CudaBackend

    rng = np.random.default_rng(8)
    specs = [ModelSpec(datatype="protein", aamodel="wag", rates="gamma", alpha=a) for a in (0.3, 0.9, 2.0, 5.0)]
    models = [build_model(s) for s in specs]
    trees = [random_tree(9, rng) for _ in models]
    states = rng.integers(0, 21, size=(9, 400))
    cs = ChainSlots(9, len(models))
    gpu = CudaBackend(cs.instance_spec(400, 20, 4), device=device, chains=len(models))
    for t in range(9):
        gpu.set_tip_states(t, states[t])
    groups, ops, calls, scale_jobs, want = [], [], [], [], []
    for k, (model, tree) in enumerate(zip(models, trees)):
        nodes = np.flatnonzero(tree.parent >= 0)
        groups.append((model.eigen, model.category_rates, [cs.matrix(k, v) for v in nodes], tree.brlen[nodes]))
        o, scales, root, child, cm = cs.tree_operations(tree, k)
        ops.append(o)
        scale_jobs.append((cs.cumulative_scale(k), True, scales, 1))
        calls.append((root, model.frequencies, model.category_weights, 0.0, cs.cumulative_scale(k), child, cm))
        tips = np.vstack([np.eye(20), np.ones((1, 20))])[states]
        want.append(PartitionLikelihood(tips, np.ones(400), model).log_likelihood(tree))
    gpu.update_transition_matrices_many(groups)
    gpu.update_partials(np.concatenate(ops))
    gpu.scale_jobs(scale_jobs)
    got = gpu.root_log_likelihoods(calls)
    np.testing.assert_allclose(got, want, rtol=REL)


def test_memory_is_planned_before_allocating(device):
    from mbgpu.cuda.backend import CudaBackend
    from mbgpu.errors import DeviceError

    huge = InstanceSpec(n_tips=100, n_partials=4000, n_patterns=2_000_000, n_states=20, n_categories=4,
                        n_matrices=10, n_scale_buffers=10)
    free_before = device.mem_get_info()[0]
    with pytest.raises(DeviceError, match="'partials'.*remedies.*beagleprecision=single"):
        CudaBackend(huge, device=device)
    assert abs(device.mem_get_info()[0] - free_before) < (1 << 30)      # nothing big was allocated


def test_single_precision_within_1e6_of_double_200_taxa_100k_sites(device):
    rng = np.random.default_rng(200)
    model = build_model(ModelSpec(datatype="dna", nst=6, revmat=(1.0, 4.0, 0.7, 1.2, 3.9, 1.0),
                                  statefreqs=(0.3, 0.2, 0.22, 0.28), rates="gamma", alpha=0.5))
    tree = random_tree(200, rng, brlen=lambda g, n: g.exponential(0.05, n))
    states = rng.integers(0, 4, size=(200, 100_000))
    slots = NodeSlots(200, 1)
    out = {}
    for precision in ("double", "single"):
        from mbgpu.cuda.backend import CudaBackend

        b = CudaBackend(slots.instance_spec(100_000, 4, 4), device=device, precision=precision)
        b.set_category_rates(model.category_rates)
        for t in range(200):
            b.set_tip_states(t, states[t])
        nodes = np.flatnonzero(tree.parent >= 0)
        b.update_transition_matrices(model.eigen, [slots.matrix(v) for v in nodes], tree.brlen[nodes])
        ops, scales, root, child, cm = tree_operations(tree, slots, True)
        b.update_partials(ops)
        b.reset_scale(slots.cumulative_scale())
        b.accumulate_scale(slots.cumulative_scale(), scales)
        out[precision] = b.root_log_likelihood(root, model.frequencies, model.category_weights, 0.0,
                                               slots.cumulative_scale(), child, cm)
        del b
    print("fp64 %.10f fp32 %.10f rel %.3e" % (out["double"], out["single"],
                                             abs(out["single"] / out["double"] - 1)))
    assert out["single"] == pytest.approx(out["double"], rel=1e-6)
    assert out["single"] != out["double"]
