"""Instances split by patterns (mbgpu.cuda.split): the slice count from a memory budget, slices of numpy
backends against one whole backend (no GPU), and on a GPU a forced small memory limit: several CudaBackend
slices on one device give the numpy reference's log likelihoods and the same MCMC as the numpy core."""
import io
import zlib
from dataclasses import replace

import numpy as np
import pytest

from mbgpu.cuda.memory_plan import RESERVE_BYTES, plan_instance
from mbgpu.cuda.split import PatternSplit, slices_needed
from mbgpu.likelihood import InstanceSpec, NumpyBackend, PartitionLikelihood
from mbgpu.models import ModelSpec, build_model
from mbgpu.tree import random_tree

MODELS = {"dna": ModelSpec(datatype="dna", nst=6, revmat=(1.0, 4.0, 0.7, 1.2, 3.9, 1.0), rates="invgamma",
                           alpha=0.5, pinvar=0.2),
          "protein": ModelSpec(datatype="protein", aamodel="wag", rates="gamma", alpha=0.7)}


def _data(name, n_taxa=19, n_patterns=1001):
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    model = build_model(MODELS[name])
    s = model.n_states
    states = rng.integers(0, s + 1, size=(n_taxa, n_patterns))
    tips = np.vstack([np.eye(s), np.ones((1, s))])[states]
    tips[0, ::7] = rng.random((tips[0, ::7].shape[0], s)) < 0.5      # some partial ambiguity
    tips[0, ::7, 0] = 1.0
    return model, tips, rng.integers(1, 5, n_patterns).astype(float), random_tree(n_taxa, rng)


def test_slices_needed_is_the_fewest_that_fit():
    spec = InstanceSpec(n_tips=10, n_partials=40, n_patterns=10_000, n_states=20, n_categories=4, n_matrices=80,
                        n_scale_buffers=20)
    whole = plan_instance(spec, "double").total
    half = plan_instance(replace(spec, n_patterns=5_000), "double").total
    assert slices_needed(spec, "double", RESERVE_BYTES + whole) == 1
    assert slices_needed(spec, "double", RESERVE_BYTES + whole - 1) == 2
    assert slices_needed(spec, "double", RESERVE_BYTES + half) == 2
    assert slices_needed(spec, "double", RESERVE_BYTES + half - 1) == 3
    assert slices_needed(spec, "double", RESERVE_BYTES) == 10_000                 # nothing fits: a slice a pattern


@pytest.mark.parametrize("name", sorted(MODELS))
def test_numpy_slices_sum_to_the_whole(name):
    model, tips, weights, tree = _data(name)
    made = []

    def split(spec):
        made.append(PatternSplit(spec, lambda s, device: NumpyBackend(s), ["a", "b"], 3))
        return made[-1]

    whole = PartitionLikelihood(tips, weights, model, 1.3)
    parts = PartitionLikelihood(tips, weights, model, 1.3, backend=split)
    assert [c.stop - c.start for c in made[0].cuts] == [334, 334, 333]
    assert parts.log_likelihood(tree) == pytest.approx(whole.log_likelihood(tree), rel=1e-12, abs=0)
    np.testing.assert_allclose(parts.site_log_likelihoods(tree), whole.site_log_likelihoods(tree), rtol=1e-12)


def test_flushes_go_to_every_slice_and_their_sums_add():
    class Part:
        def __init__(self, spec, device):
            self.spec, self.device, self.flushes = spec, device, []

        def launch_packed(self, flush, tag=""):
            self.flushes.append((flush, tag))
            return (self.spec.n_patterns, tag)

        def batch_fetch(self, handle):
            return [float(handle[0]), 0.5]

    spec = InstanceSpec(n_tips=4, n_partials=4, n_patterns=10, n_states=4, n_categories=1, n_matrices=4,
                        n_scale_buffers=1)
    sp = PatternSplit(spec, Part, ["gpu0", "gpu1"], 3)
    assert [p.device for p in sp.parts] == ["gpu0", "gpu1", "gpu0"] and sp.spec is spec
    handles = sp.launch_packed("blob", "1")
    assert all(p.flushes == [("blob", "1")] for p in sp.parts)
    assert sp.batch_fetch(handles) == [10.0, 1.5]
    assert sp.device == "gpu0"                       # other attributes: the first slice's


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(MODELS))
def test_forced_memory_limit_splits_on_one_gpu_and_matches_numpy(device, name):
    from mbgpu.cuda.backend import backend_factory

    model, tips, weights, tree = _data(name)
    ref = PartitionLikelihood(tips, weights, model, 1.3)
    spec = ref.backend.spec
    limit = RESERVE_BYTES + plan_instance(replace(spec, n_patterns=-(-spec.n_patterns // 4)), "double").total
    gpu = PartitionLikelihood(tips, weights, model, 1.3, backend=backend_factory(device=device, memory_limit=limit))
    assert isinstance(gpu.backend, PatternSplit) and len(gpu.backend.parts) == 4
    assert gpu.log_likelihood(tree) == pytest.approx(ref.log_likelihood(tree), rel=1e-10, abs=0)
    np.testing.assert_allclose(gpu.site_log_likelihoods(tree), ref.site_log_likelihoods(tree), rtol=1e-10)


@pytest.mark.gpu
def test_compiled_core_runs_a_split_instance_like_numpy(shared_data, tmp_path, monkeypatch):
    """The compiled core's packed flushes on 3 slices (asynchronous, one GPU) against the numpy core."""
    from mbgpu.console import Console
    from mbgpu.cuda.backend import backend_factory
    from mbgpu.interpreter import Interpreter
    from mbgpu.sampler.mc3 import RunOptions
    from tests.test_cuda.test_sampler_gpu import SETUP, assert_same_trace, trace_run

    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.nex").write_text("#NEXUS\n" + SETUP.format(data=shared_data / "mrbayes/primates.nex",
                                                             lset="lset nst=6 rates=invgamma;", ngen=200))
    interp = Interpreter(Console(io.StringIO()))
    interp.run_file(str(tmp_path / "s.nex"))
    opts = RunOptions.from_settings(interp.settings.mcmc)
    made = []
    factory = backend_factory(precision="double", asynchronous=True, memory_limit=RESERVE_BYTES + (3 << 20))

    def counted(spec):
        made.append(factory(spec))
        return made[-1]

    counted.device, counted.asynchronous = factory.device, factory.asynchronous
    cpu = trace_run(interp.settings, NumpyBackend, opts)
    gpu = trace_run(interp.settings, counted, opts)
    assert made and all(isinstance(b, PatternSplit) and len(b.parts) >= 2 for b in made)
    assert_same_trace(cpu, gpu, 200 // 10 + 1)


def test_the_factory_splits_only_when_it_must_and_says_so(monkeypatch):
    """backend_factory's choice, with stand-in devices and backends: a slice budget gives round-robin
    slices and one console line; room on the first GPU gives one whole backend; a split that would need
    more GPUs than there are gives the whole backend, whose memory plan then stops the run."""
    import types

    import mbgpu.cuda.backend as B
    import mbgpu.cuda.context as context

    free = {0: 1 << 40, 1: 1 << 40}

    def gpu(i):
        return types.SimpleNamespace(index=i, mem_get_info=lambda: (free[i], 1 << 40))

    monkeypatch.setattr(context, "open_device", lambda index=None: gpu(index or 0))
    made = []
    monkeypatch.setattr(B.CudaBackend, "__init__", lambda self, spec, **kw: made.append((spec.n_patterns,
                                                                                         kw["device"].index)))
    spec = InstanceSpec(n_tips=10, n_partials=40, n_patterns=1000, n_states=20, n_categories=4, n_matrices=80,
                        n_scale_buffers=20)
    third = RESERVE_BYTES + plan_instance(replace(spec, n_patterns=334), "double").total
    notes = []
    make = B.backend_factory(devices=[0, 1], memory_limit=third)
    make.note = notes.append
    assert isinstance(make(spec), PatternSplit)
    assert made == [(334, 0), (333, 1), (333, 0)]
    assert notes == ["   1000 site patterns do not fit one GPU's memory: split into 3 slices on GPUs 0, 1"]
    made.clear(), notes.clear()
    make = B.backend_factory(devices=[0, 1])
    make.note = notes.append
    assert not isinstance(make(spec), PatternSplit) and made == [(1000, 0)] and not notes
    made.clear()
    free[0] = free[1] = third                      # three slices' worth needed, two GPUs
    assert not isinstance(make(spec), PatternSplit) and made == [(1000, 0)]
    made.clear()
    free[0] = free[1] = RESERVE_BYTES + plan_instance(replace(spec, n_patterns=500), "double").total
    assert isinstance(make(spec), PatternSplit) and made == [(500, 0), (500, 1)]
    assert notes == ["   1000 site patterns do not fit one GPU's memory: split into 2 slices on GPUs 0, 1"]
