"""update_partials_jobs shares its grid out by the jobs' weights (cuda/likelihood_partials.cu,
job_of_block): whatever the weights, block count or pattern count, every job's operations are computed
as the numpy backend computes them (the weights only decide which blocks run which tiles)."""
import numpy as np
import pytest

from mbgpu.likelihood import make_ops

from .test_mma import OPS, _compare, _setup

pytestmark = pytest.mark.gpu

WEIGHTS = [(1, 1, 1), (1000, 1, 1), (1, 1000, 1), (1, 1, 1000), (3, 2, 1)]


@pytest.mark.parametrize("weights", WEIGHTS)
@pytest.mark.parametrize("n_states,n_categories,precision,mma", [(4, 4, "double", False), (4, 4, "single", False),
                                                                  (20, 4, "double", True), (20, 4, "single", False)])
@pytest.mark.parametrize("n_patterns,waves", [(20_011, 1), (20_011, 4), (5, 1)])
def test_weighted_jobs_match_numpy(device, weights, n_states, n_categories, precision, mma, n_patterns,
                                   waves):
    ref, gpu = _setup(device, n_states, n_categories, precision, mma, n_patterns=n_patterns)
    gpu.jobs_waves = waves
    ops = make_ops(OPS)
    ref.update_partials(ops)
    w0, w1, w2 = weights
    with gpu.dev:                         # jobs (6 then 8), (7) and an empty one; then (9, 10, 11)
        gpu._sync_tips()
        d_ops = gpu._upload("t_ops", ops[[0, 2, 1, 3, 4, 5]])
        d_spans = gpu._upload("t_spans", np.array([0, 2, w0, 2, 1, w1, 3, 0, w2], dtype=np.int64))
        gpu.launch_jobs(d_ops, d_spans, 3)
        d_spans2 = gpu._upload("t_spans2", np.array([3, 3, w0], dtype=np.int64))
        gpu.launch_jobs(d_ops, d_spans2, 1)
    _compare(ref, gpu, precision)


def _caterpillar(n_tips: int, n_matrices: int, scale_every: int = 5):
    """Operations of a caterpillar over the tips (one long chain of dependent operations), every
    scale_every-th one rescaling into its own scale buffer."""
    ops, prev, node = [], 0, n_tips
    for k in range(1, n_tips):
        sw = k if k % scale_every == 0 else -1
        ops.append((node, sw, -1, prev, (2 * k) % n_matrices, k, (2 * k + 1) % n_matrices))
        prev, node = node, node + 1
    return ops


@pytest.mark.parametrize("precision", ["double", "single"])
@pytest.mark.parametrize("n_states,mma", [(4, False), (20, False), (20, True)])
def test_jobs_longer_than_a_chunk(device, precision, n_states, mma):
    """A 69-operation chain (its rows come into shared memory JOB_CHUNK at a time) beside a short job."""
    from mbgpu.cuda.backend import JOB_CHUNK, CudaBackend
    from mbgpu.likelihood import InstanceSpec, NumpyBackend

    if mma and precision == "single":
        pytest.skip("fp32 protein is SIMT")
    n_tips, c, p = 70, 4, 3001
    long_ops = _caterpillar(n_tips, n_tips)
    assert len(long_ops) > 2 * JOB_CHUNK
    short = [(n_tips + len(long_ops), -1, -1, 0, 0, 1, 1), (n_tips + len(long_ops) + 1, -1, -1, n_tips + len(long_ops),
                                                              2, 2, 3)]
    spec = InstanceSpec(n_tips=n_tips, n_partials=len(long_ops) + 2, n_patterns=p, n_states=n_states, n_categories=c,
                        n_matrices=n_tips, n_scale_buffers=n_tips)
    rng = np.random.default_rng(n_states)
    gpu, ref = CudaBackend(spec, device=device, precision=precision, mma=mma), NumpyBackend(spec)
    mats = rng.random((n_tips, c, n_states, n_states)) ** 2
    mats /= mats.sum(axis=-1, keepdims=True)
    states = rng.integers(0, n_states + 1, size=(n_tips, p))
    for b in (ref, gpu):
        for t in range(n_tips):
            b.set_tip_states(t, states[t])
        b.set_transition_matrices(np.arange(n_tips), mats)
    ops = make_ops(long_ops + short)
    ref.update_partials(ops)
    with gpu.dev:
        gpu._sync_tips()
        d_ops = gpu._upload("t_ops", ops)
        n = len(long_ops)
        d_spans = gpu._upload("t_spans", np.array([0, n, 3 * n, n, 2, 5], dtype=np.int64))
        gpu.launch_jobs(d_ops, d_spans, 2)
    rtol = 1e-10 if precision == "double" else 1e-5
    for buf in range(n_tips, n_tips + len(long_ops) + 2):
        np.testing.assert_allclose(gpu.partials_of(buf), ref.partials[buf - n_tips], rtol=rtol, atol=0,
                                   err_msg="buffer %d" % buf)
    for s in range(5, n_tips - 1, 5):
        np.testing.assert_allclose(gpu.scale_of(s), ref.scale[s], rtol=rtol, atol=rtol)
