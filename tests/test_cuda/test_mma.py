"""The tensor-core partials of wide state spaces (cuda/likelihood_mma.cuh) against the numpy backend:
every node class, scale writes and reads, tip partial vectors, pattern counts that are not a multiple
of the 8-pattern tile, protein, doublet and codon-sized state spaces, fp64 (1e-10) and fp32 (1e-5), the
per-level and the one-launch (jobs) kernels; and the SIMT path that devices before sm_80 use."""
import numpy as np
import pytest

from mbgpu.likelihood import NONE, InstanceSpec, NumpyBackend, make_ops

pytestmark = pytest.mark.gpu

N_TIPS = 6
# dest, scale write, scale read, child 1, matrix 1, child 2, matrix 2: tip-tip, tip-partials, internal-tip,
# internal-internal, a scale read, a compact tip beside an internal node; tip 3 has partial vectors.
OPS = [(6, 0, NONE, 0, 0, 1, 1), (7, NONE, NONE, 2, 2, 3, 3), (8, 1, NONE, 6, 4, 4, 5), (9, NONE, 0, 6, 6, 7, 7),
       (10, 2, NONE, 8, 8, 9, 9), (11, NONE, NONE, 5, 1, 10, 3)]
CASES = [(20, 4, "double", True), (20, 4, "single", True), (20, 8, "double", True), (16, 4, "single", True),
         (61, 3, "double", True), (61, 1, "single", True), (20, 4, "double", False), (20, 4, "single", False)]


def _setup(device, n_states, n_categories, precision, mma, n_patterns=1003, seed=0):
    from mbgpu.cuda.backend import CudaBackend

    rng = np.random.default_rng(seed + n_states + 100 * n_categories)
    spec = InstanceSpec(n_tips=N_TIPS, n_partials=6, n_patterns=n_patterns, n_states=n_states,
                        n_categories=n_categories, n_matrices=10, n_scale_buffers=3)
    gpu = CudaBackend(spec, device=device, precision=precision, mma=mma)
    ref = NumpyBackend(spec)
    mats = rng.random((10, n_categories, n_states, n_states)) ** 3
    mats /= mats.sum(axis=-1, keepdims=True)
    low = -40 if precision == "double" else -8                    # small entries: rescaling matters
    mats *= 10.0 ** rng.uniform(low, 0, (10, 1, 1, 1))
    states = rng.integers(0, n_states + 1, size=(N_TIPS, n_patterns))
    vectors = rng.random((n_patterns, n_states)) * (rng.random((n_patterns, n_states)) < 0.3)
    vectors[np.arange(n_patterns), states[3] % n_states] = 1.0
    for b in (ref, gpu):
        for t in range(N_TIPS):
            if t == 3:
                b.set_tip_partials(t, vectors)
            else:
                b.set_tip_states(t, states[t])
        b.set_transition_matrices(np.arange(10), mats)
    return ref, gpu


def _compare(ref, gpu, precision):
    rtol = 1e-10 if precision == "double" else 1e-5
    for buf in range(N_TIPS, N_TIPS + 6):
        want = ref.partials[buf - N_TIPS]
        np.testing.assert_allclose(gpu.partials_of(buf), want, rtol=rtol, atol=0, err_msg="buffer %d" % buf)
        assert np.all(want.max(axis=(0, 2)) > 0)
    for s in range(3):
        np.testing.assert_allclose(gpu.scale_of(s), ref.scale[s], rtol=rtol, atol=rtol)


@pytest.mark.parametrize("n_states,n_categories,precision,mma", CASES)
def test_wide_partials_match_numpy(device, n_states, n_categories, precision, mma):
    ref, gpu = _setup(device, n_states, n_categories, precision, mma)
    assert gpu.mma is mma and ("WIDE_MMA" in gpu.defines) is mma
    ops = make_ops(OPS)
    for b in (ref, gpu):
        b.update_partials(ops)
    scale = np.asarray(ref.scale[0])
    assert np.ptp(scale) > 0.1                                   # the factors vary: a wrong row shows
    _compare(ref, gpu, precision)


@pytest.mark.parametrize("n_states,n_categories,precision,mma", CASES[:2] + CASES[4:5])
def test_wide_partials_in_one_jobs_launch(device, n_states, n_categories, precision, mma):
    """Two jobs (one per chain, child-first) in one update_partials_jobs launch, as the sampler flushes."""
    ref, gpu = _setup(device, n_states, n_categories, precision, mma, n_patterns=20_011)
    ops = make_ops(OPS)
    ref.update_partials(ops)
    with gpu.dev:                         # jobs (6 then 8) and (7); then (9, 10, 11), each child-first
        gpu._sync_tips()
        d_ops = gpu._upload("t_ops", ops[[0, 2, 1, 3, 4, 5]])
        d_spans = gpu._upload("t_spans", np.array([0, 2, 5, 2, 1, 2], dtype=np.int64))
        gpu.launch_jobs(d_ops, d_spans, 2)
        d_spans2 = gpu._upload("t_spans2", np.array([3, 3, 7], dtype=np.int64))
        gpu.launch_jobs(d_ops, d_spans2, 1)
    _compare(ref, gpu, precision)
