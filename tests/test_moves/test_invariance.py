"""Each move, alone, leaves the prior invariant (no data: the likelihood is constant).

Chains start from exact prior draws; after `steps` MH steps of an invariant kernel the final states are
again iid prior draws, so chi-square (15 topologies of 5 taxa) and KS tests (one branch, tree length)
apply without thinning. A long single chain per topology move checks that it actually mixes over
the 15 topologies.
"""
import numpy as np
import pytest
from scipy import stats

from mbgpu.moves import NNI, ExtSPR, ExtTBR, Multiplier, NodeSlider, ParsSPR, TreeLengthMultiplier
from tests.test_moves.mh import EXP10, GAMMADIR, prior_reference, run_chain, run_from_prior

N_TIPS = 5
P_MIN = 1e-3


def random_data(seed: int, n_tips: int = N_TIPS, n_patterns: int = 30):
    """Random DNA masks (some ambiguous) with integer weights, as ctx.pattern_masks wants them."""
    rng = np.random.default_rng(seed)
    masks = (1 << rng.integers(0, 4, (n_tips, n_patterns))).astype(np.uint32)
    masks[rng.random((n_tips, n_patterns)) < 0.05] = 15
    return {"pattern_masks": [(masks, rng.integers(1, 4, n_patterns).astype(float))]}


MOVES = {
    "Multiplier": (lambda: [Multiplier()], None),
    "TLMultiplier": (lambda: [TreeLengthMultiplier()], None),
    "Nodeslider": (lambda: [NodeSlider()], None),
    "NNI": (lambda: [NNI()], None),
    "ExtSPR": (lambda: [ExtSPR()], None),
    "ExtTBR": (lambda: [ExtTBR()], None),
    "ParsSPR": (lambda: [ParsSPR()], random_data),
}


def _check_prior(topo, branch, length, prior_text, seed):
    counts = np.array([topo.count(t) for t in set(topo)])
    assert len(counts) == 15
    assert stats.chisquare(counts).pvalue > P_MIN, counts
    ref_b, ref_l = prior_reference(prior_text, N_TIPS, 100_000, seed)
    assert stats.ks_2samp(branch, ref_b).pvalue > P_MIN
    assert stats.ks_2samp(length, ref_l).pvalue > P_MIN


@pytest.mark.parametrize("prior_text", [EXP10, GAMMADIR])
@pytest.mark.parametrize("name", list(MOVES))
def test_move_leaves_prior_invariant(name, prior_text):
    make, data = MOVES[name]
    seed = 11 + len(name)
    n_chains = 900 if name == "ParsSPR" else 1500
    topo, branch, length, acc, moved = run_from_prior(
        make(), [1.0], prior_text, N_TIPS, n_chains, 16, seed, data(seed) if data else None)
    assert 0.05 < acc and moved > 0.5, (acc, moved)
    _check_prior(topo, branch, length, prior_text, seed)


@pytest.mark.parametrize("name", ["NNI", "ExtSPR", "ExtTBR", "ParsSPR"])
def test_topology_move_mixes_to_uniform(name):
    """One long chain (topology move + Multiplier), thinned: all 15 topologies, uniformly."""
    make, data = MOVES[name]
    topo, _, _, _ = run_chain(make() + [Multiplier()], [1.0, 1.0], GAMMADIR, N_TIPS, 1500, 6, 5,
                              data(5) if data else None)
    counts = np.array([topo.count(t) for t in set(topo)])
    assert len(counts) == 15
    assert stats.chisquare(counts).pvalue > P_MIN, counts
