"""The MCMC sampler: chain state, incremental likelihoods, parameter moves, MC3 runs and output."""
