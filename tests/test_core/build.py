"""Chains of a small analysis built as `mcmc` builds them (no run), for the core's tests."""
from __future__ import annotations

import io

from mbgpu.analysis import division_pattern_sets
from mbgpu.console import Console
from mbgpu.interpreter import Interpreter
from mbgpu.likelihood.select import choose_backend
from mbgpu.sampler.mc3 import RunOptions
from mbgpu.sampler.setup import build_runs
from tests.conftest import TEST_DATA

PRIMATES_GTR = "execute %s;\n lset nst=6 rates=invgamma;" % (TEST_DATA / "primates.nex")
CYNMIX_PARTS = ("execute %s;\n set partition=favored; lset applyto=(2,3,4,5) nst=6 rates=gamma;"
                " unlink shape=(all) revmat=(all) statefreq=(all); prset ratepr=variable;"
                % (TEST_DATA / "cynmix.nex"))


def build_chains(tmp_path, commands: str, nruns: int = 1, nchains: int = 2, seed: int = 7, cpu: str = "compiled",
                 wrap=None):
    """(flat list of chains, params, settings) of `commands` followed by mcmcp; `wrap` may replace the
    backend choice (e.g. tests.test_core.packed_host.packed_choice)."""
    text = "#NEXUS\nbegin mrbayes; %s\n mcmcp nruns=%d nchains=%d; end;\n" % (commands, nruns, nchains)
    path = tmp_path / "build.nex"
    path.write_text(text)
    interp = Interpreter(Console(io.StringIO()))
    interp.run_file(str(path))
    s = interp.settings
    sets = division_pattern_sets(s)
    opts = RunOptions.from_settings(s.mcmc)
    factory = choose_backend(s.options, Console(io.StringIO()), cpu=cpu, cuda_present=lambda: False)
    if wrap is not None:
        factory = wrap(factory)
    runs, params = build_runs(s, sets, opts, factory, seed)
    return [c for run in runs for c in run], params, s
