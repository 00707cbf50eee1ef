"""Clock trees of MrBayes 3.2.7a (issue 22): prior densities and moves as pure functions of plain arrays.

Priors: `distributions` (calibration / treeagepr / clockratepr densities with MrBayes' parameterizations),
`rooted` (the rooted-tree arrays: parent, node depths in substitution units, tips = ids below n_tips),
`tree_priors` (uniform incl. calibrated sub-trees, birth-death, coalescent), `fossilized` (fossilized
birth-death), `relaxed` (igr, tk02, cpp branch-rate priors), `special` (MrBayes' LnGamma, LnFactorial).
Every kernel is compiled (numba.njit with mbgpu.jit.JIT_OPTIONS; `py_func` is its Python body).
Moves, written for the compiled core (state changed in place, log proposal ratio returned): `tree_moves`
(NodesliderClock, TreeStretch, depth bounds), `topology_moves` (ExtSprClock, NNIClock), `param_moves`
(clock rate, tree-prior parameters), `fbd_moves` (AddBranch/DelBranch), `relaxed_moves` and `cpp_moves`
(branch-rate moves), `relaxed_lengths` (effective branch lengths, the tree moves' relaxed-clock terms),
`pars_spr_clock` (ParsSPRClock), `fossil_spr` (ExtFossilSprClock); `limits` holds MrBayes' bounds (bayes.h)
and `model` the ClockModel each tree's settings give.
Nothing here is wired into the sampler yet: clock priors are refused at mcmc/ss (docs/plans/clocks.md,
docs/plans/clocks-integration.md).
"""
