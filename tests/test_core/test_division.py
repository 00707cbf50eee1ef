"""The compiled likelihood of the core (mbgpu.core.division) equals the interpreted lanes' and a fresh
computation by the numpy reference, for incremental tree changes and for new models."""
import numpy as np
import pytest

from mbgpu.core import trees as T
from mbgpu.core.division import PROP, DivisionArrays
from mbgpu.likelihood.evaluate import PartitionLikelihood
from mbgpu.likelihood.numpy_backend import NumpyBackend
from mbgpu.moves import ExtSPR, MoveContext, Multiplier
from mbgpu.sampler.model_state import rate_multiplier, spec_with_values
from tests.test_core.build import CYNMIX_PARTS, PRIMATES_GTR, build_chains


def _reference(chain, j, tree, values):
    """ln L of pattern set j for (tree, values) from scratch on the numpy reference backend."""
    part = chain.parts[j]
    shared = part.inc.shared
    tips = np.stack([_tip_rows(shared.backend, t) for t in range(tree.n_tips)])
    model = chain._model_of(part, values)
    mult = rate_multiplier(chain.params, values, part.division, part.fixed_mult)
    return PartitionLikelihood(tips, shared.backend.pattern_weights, model, mult, NumpyBackend).log_likelihood(tree)


def _tip_rows(b, t):
    if b.tip_partials[t] is not None:
        return b.tip_partials[t]
    s = b.spec.n_states
    eye = np.vstack([np.eye(s), np.ones((1, s))])
    return eye[b.tip_states[t]]


def _set_proposal(trees, c, tree):
    p, k, b = T.to_arrays(tree)
    trees.parent_p[c], trees.kids_p[c], trees.brlen_p[c] = p, k, b


@pytest.mark.parametrize("commands", [PRIMATES_GTR, CYNMIX_PARTS], ids=["primates", "cynmix"])
def test_incremental_and_full_evaluations_equal_the_reference(tmp_path, commands):
    chains, params, _s = build_chains(tmp_path, commands, nchains=3)
    rng = np.random.default_rng(4)
    ctx = MoveContext(n_tips=chains[0].tree.n_tips)
    for j in range(len(chains[0].parts)):
        trees = T.ChainTrees([ch.tree for ch in chains])
        div = DivisionArrays(chains[0].parts[j].inc.shared, [ch.parts[j].inc for ch in chains])
        div.refresh(trees)
        for c, ch in enumerate(chains):
            assert div.lnl[c] == pytest.approx(_reference(ch, j, ch.tree, ch.values), rel=1e-11)
        for step in range(12):
            proposals = []
            for c, ch in enumerate(chains):          # chain 0 a topology move, 1 a branch, 2 a new model
                move = ExtSPR() if c == 0 else Multiplier()
                tree = move.propose(T.from_arrays(ch.tree.n_tips, trees.parent[c], trees.brlen[c]), rng, ctx).tree
                values = [np.array(v) for v in ch.values]
                if c == 2:
                    values = [v * rng.uniform(0.8, 1.25, v.shape) if v.size == 1 else v for v in values]
                    model = ch.models.get(spec_with_values(ch.parts[j].spec, params, values, ch.parts[j].division))
                    div.set_model(c, PROP, model, rate_multiplier(params, values, ch.parts[j].division,
                                                                  ch.parts[j].fixed_mult))
                    tree = T.from_arrays(ch.tree.n_tips, trees.parent[c], trees.brlen[c])
                _set_proposal(trees, c, tree)
                div.todo[c] = 2 if c == 2 else 1
                proposals.append((tree, values))
            div.evaluate(trees)
            for c, ch in enumerate(chains):
                assert div.lnl_p[c] == pytest.approx(_reference(ch, j, *proposals[c]), rel=1e-11, abs=1e-9)
            accepted = np.array([step % 2 == 0, True, step % 3 == 0])
            div.keep(accepted)
            for c in range(len(chains)):
                if accepted[c]:
                    trees.parent[c], trees.kids[c], trees.brlen[c] = (trees.parent_p[c], trees.kids_p[c],
                                                                      trees.brlen_p[c])


def _random_matrix(tmp_path, datatype, alphabet, n_taxa=7, n_chars=60, seed=3):
    rng = np.random.default_rng(seed)
    rows = ["t%d %s" % (i, "".join(rng.choice(list(alphabet), n_chars))) for i in range(n_taxa)]
    path = tmp_path / ("%s.nex" % datatype)
    path.write_text("#NEXUS\nbegin data; dimensions ntax=%d nchar=%d; format datatype=%s missing=? gap=-;\n"
                    "matrix\n%s\n;\nend;\n" % (n_taxa, n_chars, datatype, "\n".join(rows)))
    return path


def _propose_trees(chains, trees, div, rng, ctx):
    """Chain 0 proposes a topology (ExtSPR), the others a branch length (Multiplier); the proposed trees."""
    proposals = []
    for c, ch in enumerate(chains):
        move = ExtSPR() if c == 0 else Multiplier()
        tree = move.propose(T.from_arrays(ch.tree.n_tips, trees.parent[c], trees.brlen[c]), rng, ctx).tree
        _set_proposal(trees, c, tree)
        div.todo[c] = 1
        proposals.append(tree)
    return proposals


@pytest.mark.parametrize("datatype, alphabet, model", [
    ("protein", "ACDEFGHIKLMNPQRSTVWY?", "prset aamodelpr=fixed(wag); lset rates=invgamma;"),
    ("standard", "0123?", "lset coding=all rates=gamma;"),
    ("standard", "0123?", "ctype ordered: 1-60; lset coding=all rates=gamma;"),
], ids=["protein", "standard-4-states-coding-all", "standard-ordered"])
def test_other_state_counts_equal_the_reference(tmp_path, datatype, alphabet, model):
    """The kernels' general state-count path (20 and 4 states of standard data) against the reference."""
    path = _random_matrix(tmp_path, datatype, alphabet)
    chains, params, _s = build_chains(tmp_path, "execute %s;\n %s" % (path, model), nchains=2)
    specs = [p.inc.model.spec for p in chains[0].parts]
    part = max(range(len(specs)), key=lambda i: (specs[i].ordered, specs[i].n_states))   # the widest (ordered)
    assert specs[part].ordered == ("ordered" in model)
    trees = T.ChainTrees([ch.tree for ch in chains])
    div = DivisionArrays(chains[0].parts[part].inc.shared, [ch.parts[part].inc for ch in chains])
    div.refresh(trees)
    rng = np.random.default_rng(5)
    ctx = MoveContext(n_tips=chains[0].tree.n_tips)
    for _ in range(6):
        proposals = _propose_trees(chains, trees, div, rng, ctx)
        div.evaluate(trees)
        for c, ch in enumerate(chains):
            assert div.lnl_p[c] == pytest.approx(_reference(ch, part, proposals[c], ch.values), rel=1e-11)
        div.keep(np.ones(2, dtype=bool))
        trees.parent[:], trees.kids[:], trees.brlen[:] = trees.parent_p, trees.kids_p, trees.brlen_p


@pytest.mark.parametrize("data", ["primates", "dna60", "protein"])
def test_single_precision_equals_the_reference_to_float32_accuracy(tmp_path, data):
    """`set beagleprecision=single`: float32 partials and matrices (float64 sums and logs) give the numpy
    reference's lnL to 1e-6 relative, also where every pattern needs rescaling (60 random taxa: site
    likelihoods near 4^-60, far below float32's range) and for 20 states (the general kernels)."""
    if data == "primates":
        commands = PRIMATES_GTR
    else:
        dna = data == "dna60"
        path = _random_matrix(tmp_path, "dna" if dna else "protein", "ACGT?" if dna else "ACDEFGHIKLMNPQRSTVWY?",
                              n_taxa=60 if dna else 9, n_chars=150)
        commands = "execute %s;\n %s" % (path, "lset nst=6 rates=invgamma;" if dna else
                                       "prset aamodelpr=fixed(wag); lset rates=gamma;")
    chains, params, _s = build_chains(tmp_path, commands, nchains=2)
    trees = T.ChainTrees([ch.tree for ch in chains])
    div = DivisionArrays(chains[0].parts[0].inc.shared, [ch.parts[0].inc for ch in chains], dtype=np.float32)
    assert div.partials.dtype == np.float32 and div.tip_x.dtype == np.float32
    rng = np.random.default_rng(6)
    ctx = MoveContext(n_tips=chains[0].tree.n_tips)
    div.refresh(trees)                     # every node, in float32 (the lnL kept as the host's)
    div.todo[:] = 2
    div.evaluate(trees)
    for c, ch in enumerate(chains):
        assert div.lnl_p[c] == pytest.approx(_reference(ch, 0, ch.tree, ch.values), rel=1e-6)
    div.keep(np.ones(2, dtype=bool))
    rescaled = 0
    for _ in range(6):
        proposals = _propose_trees(chains, trees, div, rng, ctx)
        div.evaluate(trees)
        rescaled += int(div.scaled.sum())
        for c, ch in enumerate(chains):
            assert div.lnl_p[c] == pytest.approx(_reference(ch, 0, proposals[c], ch.values), rel=1e-6)
        div.keep(np.ones(2, dtype=bool))
        trees.parent[:], trees.kids[:], trees.brlen[:] = trees.parent_p, trees.kids_p, trees.brlen_p
    assert rescaled > 0 or data == "primates"
