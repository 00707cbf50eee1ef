"""Clock-tree prior densities of MrBayes 3.2.7a (issue 22, first layer): pure functions of plain arrays.

`distributions` holds the calibration / treeagepr / clockratepr densities with MrBayes' parameterizations,
`rooted` the rooted-tree arrays they read (parent, node depths in substitution units, tips = ids below
n_tips), `tree_priors` the clock tree priors (uniform incl. calibrated sub-trees, birth-death, coalescent,
fossilized birth-death) and `relaxed` the branch-rate priors (igr, tk02, cpp). Nothing here is wired into
the sampler yet: every clock prior is still refused at the command (docs/plans/clocks.md).
"""
