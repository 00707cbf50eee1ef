"""The compiled (numba) CPU backend against the numpy reference and MrBayes' oracle likelihoods."""
import io

import numpy as np
import pytest

pytest.importorskip("numba")

from mbgpu.console import Console  # noqa: E402
from mbgpu.likelihood import (NONE, InstanceSpec, LikelihoodBackend, NodeSlots, NumpyBackend,  # noqa: E402
                              PartitionLikelihood, make_ops, total_log_likelihood)
from mbgpu.likelihood import evaluate as evaluate_module  # noqa: E402
from mbgpu.likelihood.compiled_backend import CompiledBackend  # noqa: E402
from mbgpu.likelihood.evaluate import tree_operations  # noqa: E402
from mbgpu.likelihood.select import choose_backend  # noqa: E402
from mbgpu.models import ModelSpec, build_model  # noqa: E402
from mbgpu.tree import random_tree  # noqa: E402

DNA_G = build_model(ModelSpec(datatype="dna", nst=2, kappa=3.0, rates="gamma", alpha=0.4,
                              statefreqs=(0.1, 0.2, 0.3, 0.4)))
GTR_IG = ModelSpec(datatype="dna", nst=6, revmat=(1.0, 4.0, 0.7, 1.2, 3.9, 1.0), statefreqs=(0.3, 0.2, 0.22, 0.28),
                   rates="invgamma", alpha=0.5, pinvar=0.2)
MODELS = {
    "dna_gtr_i_g4": GTR_IG,
    "dna_jc": ModelSpec(datatype="dna", nst=1),
    "protein_wag_g4": ModelSpec(datatype="protein", aamodel="wag", rates="gamma", alpha=0.7),
    "protein_lg_i": ModelSpec(datatype="protein", aamodel="lg", rates="propinv", pinvar=0.1),
    "standard_2": ModelSpec(datatype="standard", n_states=2),
    "standard_3_g4": ModelSpec(datatype="standard", n_states=3, rates="gamma", alpha=0.8),
}


def random_tips(rng, n_tips, n_patterns, n_states, ambiguous=True, missing=True):
    """One-hot tips (with missing data); with `ambiguous`, some tips get partial (ambiguity) vectors."""
    states = rng.integers(0, n_states + int(missing), size=(n_tips, n_patterns))
    tips = np.vstack([np.eye(n_states), np.ones(n_states)])[states]
    if ambiguous:
        for t in rng.choice(n_tips, size=max(1, n_tips // 4), replace=False):
            amb = rng.integers(0, 2, size=(n_patterns, n_states)).astype(float)
            amb[np.arange(n_patterns), rng.integers(0, n_states, n_patterns)] = 1.0
            tips[t] = amb
    return tips


def both(tips, weights, model, **kw):
    return [PartitionLikelihood(tips, weights, model, backend=factory, **kw) for factory in (NumpyBackend, CompiledBackend)]


@pytest.mark.parametrize("name", sorted(MODELS))
@pytest.mark.parametrize("ambiguous", [False, True])
def test_tree_log_likelihood_equals_numpy(name, ambiguous):
    rng = np.random.default_rng(11)
    model = build_model(MODELS[name])
    tree = random_tree(17, rng, brlen=lambda g, n: g.exponential(0.1, n))
    tips = random_tips(rng, 17, 53, model.n_states, ambiguous)
    weights = rng.integers(1, 4, 53).astype(float)
    for scaling in (False, True, 3):
        ref, got = both(tips, weights, model, scaling=scaling)
        assert isinstance(got.backend, LikelihoodBackend)
        assert got.log_likelihood(tree) == pytest.approx(ref.log_likelihood(tree), rel=1e-12, abs=0)
        assert got.site_log_likelihoods(tree) == pytest.approx(ref.site_log_likelihoods(tree), rel=1e-12)


@pytest.mark.parametrize("threads", [1, 2])
def test_scaling_on_200_taxa_where_unscaled_underflows(threads):
    rng = np.random.default_rng(5)
    model = build_model(GTR_IG)
    tree = random_tree(640, rng, brlen=lambda g, n: g.exponential(0.5, n))
    tips = random_tips(rng, 640, 300, 4, missing=False)          # about -1.3 per tip and site: < -709
    weights = np.ones(300)
    unscaled = PartitionLikelihood(tips, weights, model, backend=CompiledBackend, scaling=False)
    assert not np.isfinite(unscaled.log_likelihood(tree))            # underflows without scaling

    def compiled(spec):
        return CompiledBackend(spec, threads=threads, parallel_min_work=1)

    for scaling in (True, 4):
        ref = PartitionLikelihood(tips, weights, model, backend=NumpyBackend, scaling=scaling)
        got = PartitionLikelihood(tips, weights, model, backend=compiled, scaling=scaling)
        assert got.backend.parallel == (threads > 1)
        expected = ref.log_likelihood(tree)
        assert np.isfinite(expected)
        assert got.log_likelihood(tree) == pytest.approx(expected, rel=1e-12, abs=0)


def make_pair(n_states=4, n_patterns=37):
    spec = InstanceSpec(n_tips=4, n_partials=6, n_patterns=n_patterns, n_states=n_states, n_categories=4,
                        n_matrices=8, n_scale_buffers=4)
    return NumpyBackend(spec), CompiledBackend(spec, threads=1)


@pytest.mark.parametrize("n_states", [4, 20, 3])
def test_every_node_class_and_scale_buffer_call(n_states):
    """tip-tip, tip-internal, internal-internal with compact and partial tips; scale write/read;
    accumulate/remove; the root with a compact-tip, tip-partial and internal edge child; +I."""
    rng = np.random.default_rng(n_states)
    pair = make_pair(n_states)
    states = rng.integers(0, n_states + 1, size=(4, 37))
    amb = rng.integers(0, 2, size=(37, n_states)).astype(float)
    amb[:, 0] = 1.0
    matrices = rng.uniform(0.0, 1.0, size=(8, 4, n_states, n_states))
    ops = make_ops([(4, 0, NONE, 0, 0, 1, 1), (5, NONE, NONE, 2, 2, 3, 3), (6, 1, NONE, 4, 4, 5, 5),
                    (7, NONE, 0, 0, 0, 6, 6), (8, 2, NONE, 6, 6, 3, 7), (9, NONE, NONE, 1, 1, 0, 0)])
    for b in pair:
        for t in range(4):
            b.set_tip_states(t, states[t])
        b.set_tip_partials(1, amb)
        b.set_transition_matrices(np.arange(8), matrices)
        b.update_partials(ops)
        b.reset_scale(3)
        b.accumulate_scale(3, np.array([0, 1, 2, 1]))
        b.remove_scale(3, np.array([1]))
    ref, got = pair
    assert got.partials == pytest.approx(ref.partials, rel=1e-13)
    assert got.scale == pytest.approx(ref.scale, rel=1e-13, abs=1e-15)
    freqs = rng.dirichlet(np.ones(n_states))
    cat_w = np.full(4, 0.25)
    for child, cm in ((NONE, NONE), (0, 0), (1, 1), (5, 5)):
        for pinvar in (0.0, 0.3):
            args = (8, freqs, cat_w, pinvar, 3, child, cm)
            assert got.site_log_likelihoods(*args) == pytest.approx(ref.site_log_likelihoods(*args), rel=1e-12)
            assert got.root_log_likelihood(*args) == pytest.approx(ref.root_log_likelihood(*args), rel=1e-12)


def test_double_buffered_slots_and_partial_path_update():
    """A proposal rewrites the path from a node to the root in the other slots; slot 0 stays valid."""
    rng = np.random.default_rng(3)
    tree = random_tree(12, rng)
    slots = NodeSlots(12)
    backends = [f(slots.instance_spec(41, 4, 4)) for f in (NumpyBackend, CompiledBackend)]
    states = rng.integers(0, 5, size=(12, 41))
    nodes = np.flatnonzero(tree.parent >= 0)
    results = []
    for b in backends:
        b.set_category_rates(DNA_G.category_rates)
        for t in range(12):
            b.set_tip_states(t, states[t])

        def evaluate(lengths, slot, b=b):
            b.update_transition_matrices(DNA_G.eigen, np.array([slots.matrix(v, slot) for v in nodes]), lengths)
            ops, scales, root, child, cm = tree_operations(tree, slots, True, slot)
            b.update_partials(ops)
            cum = slots.cumulative_scale(slot)
            b.reset_scale(cum)
            b.accumulate_scale(cum, scales)
            return b.root_log_likelihood(root, DNA_G.frequencies, DNA_G.category_weights, 0.0, cum, child, cm)

        first = evaluate(tree.brlen[nodes], 0)
        second = evaluate(tree.brlen[nodes] * 1.7, 1)
        third_child = tree.children()[tree.root][2]
        again = b.root_log_likelihood(slots.buffer(tree.root, 0), DNA_G.frequencies, DNA_G.category_weights, 0.0,
                                      slots.cumulative_scale(0), slots.buffer(third_child, 0),
                                      slots.matrix(third_child, 0))
        assert again == first
        results.append((first, second))
    assert results[1] == pytest.approx(results[0], rel=1e-12)


def test_results_do_not_depend_on_threads_or_blocks():
    rng = np.random.default_rng(8)
    model = build_model(GTR_IG)
    tree = random_tree(30, rng)
    tips = random_tips(rng, 30, 2001, 4)
    values = []
    for threads, block in ((1, None), (2, None), (2, 7), (1, 1000)):
        def factory(spec, threads=threads, block=block):
            b = CompiledBackend(spec, threads=threads, parallel_min_work=1)
            b.block = block or b.block
            return b
        values.append(PartitionLikelihood(tips, np.ones(2001), model, backend=factory).log_likelihood(tree))
    assert len(set(values)) == 1


def test_select_picks_compiled_on_the_cpu_and_numpy_on_request():
    out = io.StringIO()
    choice = choose_backend({"Usebeagle": "No"}, Console(out), cuda_present=lambda: True)
    assert choice.kind == "cpu" and choice.make is CompiledBackend and "compiled CPU" in out.getvalue()
    out = io.StringIO()
    choice = choose_backend({"Usebeagle": "No"}, Console(out), cuda_present=lambda: True, cpu="numpy")
    assert choice.make is NumpyBackend and "numpy CPU" in out.getvalue()
    with pytest.raises(ValueError):
        choose_backend({}, Console(io.StringIO()), cuda_present=lambda: False, cpu="fortran")


def test_oracle_log_likelihoods_through_the_compiled_backend(shared_data, monkeypatch):
    """Every MrBayes oracle case of test_oracles.py, with the compiled backend as the default factory."""
    oracles = pytest.importorskip("tests.test_likelihood.test_oracles")
    monkeypatch.setattr(evaluate_module, "NumpyBackend", CompiledBackend)
    for name in sorted(oracles.CASES):
        path = shared_data / "oracles" / (name + ".nex")
        expected = float((shared_data / "oracles" / (name + ".lnl")).read_text().split()[0])
        partitions, tree = oracles.build_partitions(path, oracles.CASES[name])
        assert all(isinstance(p.backend, CompiledBackend) for p in partitions)
        got = total_log_likelihood(partitions, tree)
        assert got == pytest.approx(expected, abs=1e-9 * abs(expected) + 1e-8, rel=0), (name, got, expected)


def test_numba_cache_goes_to_the_user_cache_folder_not_the_install(tmp_path):
    """A fresh process: the compiled kernels are cached under $XDG_CACHE_HOME/mbgpu/numba and nothing is
    written beside the installed module (leftovers there shadow a later editable install)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    import mbgpu.likelihood

    pkg = Path(mbgpu.likelihood.__file__).parent
    before = {p.name for p in pkg.rglob("*.nb[ic]")}
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["XDG_CACHE_HOME"] = str(tmp_path)
    code = ("import numpy as np\n"
            "from mbgpu.likelihood.compiled_backend import CompiledBackend\n"
            "from mbgpu.likelihood.protocol import InstanceSpec\n"
            "b = CompiledBackend(InstanceSpec(3, 2, 5, 4, 1, 4, 2), threads=1)\n"
            "b.update_partials(np.array([[3, -1, -1, 0, 0, 1, 1]], dtype=np.int64))\n")
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=300)
    assert list((tmp_path / "mbgpu" / "numba").rglob("*.nbi"))
    assert {p.name for p in pkg.rglob("*.nb[ic]")} == before
