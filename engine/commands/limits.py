"""The bounds of the numeric options of mcmc, set, lset, prset, sump and sumt, in one place.

Most are MrBayes 3.2.7a's own (its DoMcmcParm, DoSetParm, DoLsetParm, DoSumpParm and DoSumtParm refuse
values outside them; checked against the mb binary). MrBayes reads every integer option into a C int,
so 2147483647 is the largest value any of them can hold there: mbgpu uses that as the upper bound of
every integer option MrBayes leaves open, so a value never overflows a C long or an int64 later.
"""
from __future__ import annotations

C_INT_MAX = 2**31 - 1     # MrBayes: sscanf("%d"); ngen=2147483648 is "Too few generations" there
MAX_RUNS = 120            # mcmc.c MAX_RUNS: "Too many runs (maximum of 120 runs)"
MAX_CHAINS = 256          # bayes.h MAX_CHAINS: "Too many chains (maximum of 256 chains)"
MAX_CATS = 20             # lset: "Invalid Ngammacat argument (should be between 2 and 20)"
SEED_MAX = C_INT_MAX - 1  # set: "Seed can be any natural number except 0 and 2147483647"
MIN_TUNEFREQ = 10         # mcmc: "Autotuning frequency must be at least 10"
BURNINFRAC = (0.01, 0.50)     # mcmc/sump/sumt: "Burnin fraction too low (< 0.01)" / "too high (> 0.50)"
MINPARTFREQ = (0.01, 0.80)    # mcmc: "Minimum partition frequency too low (< 0.01)" / "too high (> 0.8)"
STOPVAL = (0.000001, 0.20)    # mcmc: "Stop value too low (< 0.000001)" / "too high (> 0.20)"
PRECISION = (3, 15)           # set: "Precision must be in the range 3 to 15"
MINPROB = (0.0, 0.50)         # sump: "Minprob too high (it should be smaller than 0.50)"
