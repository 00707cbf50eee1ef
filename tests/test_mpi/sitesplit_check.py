"""Run under mpiexec -n K: the log likelihood of random trees with the patterns split over the K ranks
equals the unsplit one within 1e-9 relative (printed by rank 0 as `max_rel=...`; exit 1 if not), through
the per-evaluation calls and through a batched backend's flush (the path the CUDA backend takes)."""
import sys

import numpy as np
from mpi4py import MPI

from mbgpu.likelihood import PartitionLikelihood
from mbgpu.likelihood.numpy_backend import NumpyBackend
from mbgpu.models import ModelSpec, build_model
from mbgpu.mpi.sitesplit import split_factory
from mbgpu.tree import random_tree

SPEC = ModelSpec(datatype="dna", nst=6, revmat=(1.0, 4.0, 0.5, 0.8, 3.5, 1.0), statefreqs=(0.3, 0.2, 0.25, 0.25),
                 rates="invgamma", alpha=0.6, pinvar=0.15)


class CallsBackend(NumpyBackend):
    """The numpy backend with the four batched calls, so SharedInstance flushes through them (as on CUDA)."""

    def update_transition_matrices_many(self, groups) -> None:
        for eigen, rates, idx, lengths in groups:
            self.set_category_rates(rates)
            self.update_transition_matrices(eigen, idx, lengths)

    def update_partials_levels(self, ops, counts) -> None:
        self.update_partials(ops)

    def scale_jobs(self, jobs) -> None:
        for cumulative, reset, indices, _sign in jobs:
            if reset:
                self.reset_scale(cumulative)
            self.accumulate_scale(cumulative, np.asarray(indices, dtype=np.int64))

    def root_log_likelihoods(self, calls) -> list:
        return [self.root_log_likelihood(*c) for c in calls]


def batched_worst(comm, tips, weights, model, trees) -> float:
    """Largest relative difference of lanes flushed through split vs whole batched instances."""
    from mbgpu.likelihood.batched import batch_mode
    from mbgpu.sampler.batch_step import PartFactory

    whole = PartFactory(CallsBackend, tips.shape[0], 2, mode="batched")
    split = PartFactory(split_factory(CallsBackend, comm), tips.shape[0], 2, mode="batched")
    lanes = [f.new(0, tips, weights, model, 1.0) for f in (whole, split)]
    assert batch_mode(split.shared[0].backend) == "calls", "the split backend must stay batched"
    worst = 0.0
    for tree in trees:
        a, b = (lane.propose(tree, model, 1.0) for lane in lanes)
        worst = max(worst, abs(a - b) / abs(a))
    return worst


def main() -> int:
    comm = MPI.COMM_WORLD
    rng = np.random.default_rng(23)
    n_tips, n_pat = 11, 301
    states = rng.integers(4, size=(n_tips, n_pat))
    tips = np.zeros((n_tips, n_pat, 4))
    np.put_along_axis(tips, states[..., None], 1.0, axis=2)
    tips[rng.random((n_tips, n_pat)) < 0.05] = 1.0
    weights = rng.integers(1, 5, n_pat).astype(float)
    model = build_model(SPEC)
    whole = PartitionLikelihood(tips, weights, model, backend=NumpyBackend)
    split = PartitionLikelihood(tips, weights, model, backend=split_factory(NumpyBackend, comm))
    worst = 0.0
    for _ in range(20):
        tree = random_tree(n_tips, rng)
        a, b = whole.log_likelihood(tree), split.log_likelihood(tree)
        worst = max(worst, abs(a - b) / abs(a))
    sites = np.abs(split.site_log_likelihoods(tree) - whole.site_log_likelihoods(tree)).max()
    batched = batched_worst(comm, tips, weights, model, [random_tree(n_tips, rng) for _ in range(5)])
    tiny = PartitionLikelihood(tips[:, :1], weights[:1], model, backend=split_factory(NumpyBackend, comm))
    alone = PartitionLikelihood(tips[:, :1], weights[:1], model, backend=NumpyBackend)
    empty = abs(tiny.log_likelihood(tree) - alone.log_likelihood(tree)) / abs(alone.log_likelihood(tree))
    if comm.Get_rank() == 0:
        print("ranks=%d max_rel=%.3e site_max_abs=%.3e batched_max_rel=%.3e one_pattern_rel=%.3e"
              % (comm.Get_size(), worst, sites, batched, empty))
    return 0 if max(worst, sites, batched, empty) <= 1e-9 else 1


if __name__ == "__main__":
    sys.exit(main())
