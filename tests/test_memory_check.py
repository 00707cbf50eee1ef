"""The memory estimate of a run's likelihood tables, made before they are allocated (mbgpu.memory_check)."""
import io

import numpy as np
import pytest

from mbgpu.analysis import division_pattern_sets
from mbgpu.console import Console
from mbgpu.interpreter import Interpreter
from mbgpu.likelihood.batched import LaneLayout
from mbgpu.likelihood.host_buffers import HostBuffers
from mbgpu.likelihood.select import choose_backend
from mbgpu.memory_check import (GIB, NotEnoughMemory, Table, available_bytes, check_fits, likelihood_bytes,
                                set_bytes, show_bytes)
from mbgpu.sampler.mc3 import RunOptions
from mbgpu.sampler.setup import build_runs
from tests.conftest import TEST_DATA


@pytest.mark.parametrize("n_tips, n_lanes, table", [(4, 1, Table(7, 4, 1)), (12, 8, Table(413, 4, 4)),
                                                    (30, 3, Table(50, 20, 6))])
def test_a_set_counts_the_buffers_the_host_instance_allocates(n_tips, n_lanes, table):
    """The estimate is the interpreted instance's partials + matrices + scales, plus the core's scratch."""
    spec = LaneLayout(n_tips, n_lanes).instance_spec(table.n_patterns, table.n_states, table.n_categories)
    b = HostBuffers(spec)
    allocated = b.partials.nbytes + b.matrices.nbytes + b.scale.nbytes
    scratch = n_lanes * (2 * table.n_states + 2) * table.n_patterns * 8
    assert set_bytes(n_tips, n_lanes, table) == allocated + scratch


def test_the_peak_counts_the_largest_set_twice():
    small, large = Table(10, 4, 1), Table(100, 4, 4)
    assert likelihood_bytes(8, 2, [small, large]) == set_bytes(8, 2, small) + 2 * set_bytes(8, 2, large)
    assert likelihood_bytes(8, 2, []) == 0


def test_what_fits_passes_and_what_does_not_is_one_line():
    check_fits(10 * GIB, available=10 * GIB)
    check_fits(10**18, available=None)          # unknown: not checked
    with pytest.raises(NotEnoughMemory) as e:
        check_fits(108 * GIB + 1, available=23 * GIB)
    assert e.value.one_line() == ("mbgpu: error: this analysis needs 109 GiB of memory for its conditional "
                                  "likelihoods; this machine has 23 GiB available (reduce nruns or nchains, or "
                                  "use fewer data)")


def test_sizes_are_rounded_up():
    assert [show_bytes(n) for n in (0, 1023, 1024, 1025, GIB, GIB + 1, 5 << 40)] == \
        ["0 bytes", "1023 bytes", "1 KiB", "2 KiB", "1 GiB", "2 GiB", "5 TiB"]


def test_the_machine_reports_its_memory():
    got = available_bytes()
    assert got is None or got > 0


def _primates(tmp_path, nruns: int, nchains: int):
    path = tmp_path / "build.nex"
    path.write_text("#NEXUS\nbegin mrbayes; execute %s;\n lset rates=gamma; mcmcp nruns=%d nchains=%d; end;\n"
                    % (TEST_DATA / "primates.nex", nruns, nchains))
    interp = Interpreter(Console(io.StringIO()))
    interp.run_file(str(path))
    s = interp.settings
    factory = choose_backend(s.options, Console(io.StringIO()), cpu="numpy", cuda_present=lambda: False)
    return s, division_pattern_sets(s), RunOptions.from_settings(s.mcmc), factory


def test_build_runs_stops_before_allocating(tmp_path):
    """An injected budget below the need: NotEnoughMemory, and no chain is built."""
    s, sets, opts, factory = _primates(tmp_path, nruns=2, nchains=2)
    need = likelihood_bytes(s.matrix.ntax, 4, [Table(p.n_patterns, p.n_states, 4) for g in sets for p in g])
    with pytest.raises(NotEnoughMemory, match="needs %s of memory" % show_bytes(need)):
        build_runs(s, sets, opts, factory, 1, available=need - 1)
    runs, _ = build_runs(s, sets, opts, factory, 1, available=need)
    assert np.isfinite([c.lnl for run in runs for c in run]).all()


def test_the_module_doctest():
    import doctest

    import mbgpu.memory_check

    assert doctest.testmod(mbgpu.memory_check).failed == 0
