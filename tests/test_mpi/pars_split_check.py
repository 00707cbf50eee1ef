"""Run under mpiexec -n K: ParsSPR with its Fitch pass split over the K ranks (each counts its share of the
words, MPI_Allreduce called from compiled code sums the counts) makes the unsplit pass's moves bit for bit
(trees, lengths, log Hastings, random streams): DNA and protein partitions with whole weights (split, one of
them with fewer words than ranks), and with a partition of real weights (not split). Rank 0 prints
`ranks=K split=... moves=N same=yes`; exit 1 if not."""
import sys

import numpy as np
from mpi4py import MPI

from mbgpu.core import pars_spr as core
from mbgpu.core.trees import to_arrays
from mbgpu.moves.base import BRLENS_MAX, BRLENS_MIN
from mbgpu.mpi.native_allreduce import int64_sum
from mbgpu.tree import random_tree

N_TIPS = 24


def partitions(rng, real: bool):
    """Random state-set masks (some ambiguous) and weights per (states, patterns)."""
    parts = []
    for k, n_pat in ((4, 900), (20, 300), (4, 40)):
        m = (1 << rng.integers(0, k, (N_TIPS, n_pat))).astype(np.uint32)
        m[rng.random((N_TIPS, n_pat)) < 0.1] = (1 << k) - 1
        w = rng.integers(1, 9, n_pat).astype(float)
        w[rng.integers(0, n_pat)] = 5000.0                 # a heavy pattern: many weight planes
        parts.append((m, w + 0.5 if real and k == 20 else w))
    return parts


def moves_agree(comm, real: bool) -> tuple[bool, int]:
    """300 ParsSPR proposals from the same states, split and not: (all the same, proposals)."""
    rng = np.random.default_rng(11)
    whole = core.prepare_pars_data(partitions(rng, real), None, None, N_TIPS, 0.05)
    split = whole[:-1] + (whole[-1].copy(),)
    split[-1][core.PASS_RANKS:] = int64_sum(comm)
    assert core._split_counts(split[-1], whole[3][:0], whole[1]) == (not real)
    parent, kids, brlen = to_arrays(random_tree(N_TIPS, rng))
    s = np.array([3, 1, 4, 1], dtype=np.uint64)
    same = True
    for _ in range(300):
        got = []
        for data in (whole, split):
            p, k, b, st = parent.copy(), kids.copy(), brlen.copy(), s.copy()
            h = core.pars_spr(p, k, b, N_TIPS, st, core.PARS_SPR_TUNING, BRLENS_MIN, BRLENS_MAX, 0, *data)
            got.append((p, k, b, st, h))
        (p, k, b, st, h), (p2, k2, b2, st2, h2) = got
        same &= bool(np.array_equal(p, p2) and np.array_equal(k, k2) and np.array_equal(b, b2)
                     and np.array_equal(st, st2) and (h == h2 or (h != h and h2 != h2)))
        if h > -np.inf:
            parent, kids, brlen = p2, k2, b2
        s = st2
    return same, 300


def main() -> int:
    comm = MPI.COMM_WORLD
    ok = True
    for real in (False, True):
        same, n = moves_agree(comm, real)
        same = comm.allreduce(same, op=MPI.LAND)
        if comm.Get_rank() == 0:
            print("ranks=%d split=%s moves=%d same=%s" % (comm.Get_size(), "no" if real else "yes", n,
                                                          "yes" if same else "no"), flush=True)
        ok &= same
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
