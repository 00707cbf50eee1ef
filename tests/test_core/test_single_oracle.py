"""The core's single-precision likelihood (`set beagleprecision=single` on the CPU) against MrBayes
3.2.7a's own values on its oracle files (../shared/data/oracles: fixed tree, fixed parameters): within
1e-6 relative of MrBayes' double-precision value, and no farther from it than MrBayes' default
single-precision build is, give or take that much again."""
import re

import numpy as np
import pytest

from mbgpu.core import trees as T
from mbgpu.core.division import DivisionArrays
from tests.test_core.build import build_chains

CASES = ["primates_gtr_i_g4", "primates_ambig_gtr_g4", "sceloporus_hky_g4", "avian_wag_g4"]


@pytest.mark.parametrize("name", CASES)
def test_single_precision_core_against_mrbayes(shared_data, tmp_path, name):
    source = shared_data / "oracles" / (name + ".nex")
    text = re.sub(r"(?im)^\s*mcmc\b[^;]*;", "", source.read_text())    # the state only: no run
    path = tmp_path / source.name
    path.write_text(text)
    chains, _params, _s = build_chains(tmp_path, "execute %s;" % path, nchains=1)
    trees = T.ChainTrees([ch.tree for ch in chains])
    div = DivisionArrays(chains[0].parts[0].inc.shared, [ch.parts[0].inc for ch in chains], dtype=np.float32)
    div.refresh(trees)
    div.todo[:] = 2
    div.evaluate(trees)
    double = float(source.with_suffix(".lnl").read_text())
    single = float(source.with_suffix(".lnl.single").read_text())
    got = float(div.lnl_p[0])
    assert got == pytest.approx(double, rel=1e-6)
    assert abs(got - double) <= 2 * abs(single - double) + 1e-6 * abs(double)
