"""The compiled core samples MrBayes' posterior: primates GTR+I+G, means of the model parameters and
tree length within Monte Carlo error of MrBayes 3.2.7a's own reference run, and its certain clades."""
import io

import numpy as np

from mbgpu.console import Console
from mbgpu.interpreter import Interpreter
from tests.conftest import TEST_DATA

REF = "mrbayes/reference_runs/primates_gtrig_20k/primates.nex"
PARAMS = ("TL", "r(A<->G)", "r(C<->T)", "pi(A)", "pi(C)", "alpha", "pinvar")


def read_pstat(path):
    """{parameter: (mean, variance, average ESS per run)} of a .pstat file."""
    rows = [line.split("\t") for line in path.read_text().splitlines()[2:] if line.strip()]
    return {r[0]: (float(r[1]), float(r[2]), float(r[7])) for r in rows}


def test_posterior_means_agree_with_mrbayes(tmp_path, monkeypatch, shared_data):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "run.nex").write_text(
        "#NEXUS\nbegin mrbayes; set seed=21 swapseed=22;\nexecute %s;\nlset nst=6 rates=invgamma;\n"
        "mcmc ngen=40000 nchains=4 nruns=2 samplefreq=100 printfreq=10000 diagnfreq=10000 filename=p;\n"
        "sump; sumt; end;\n" % (TEST_DATA / "primates.nex"))
    Interpreter(Console(io.StringIO())).run_file(str(tmp_path / "run.nex"))
    ours = read_pstat(tmp_path / "p.pstat")
    ref = read_pstat(shared_data / (REF + ".pstat"))
    for name in PARAMS:
        m1, v1, e1 = ours[name]
        m2, v2, e2 = ref[name]
        se = np.sqrt(v1 / (2 * e1) + v2 / (2 * e2))       # two runs each
        assert abs(m1 - m2) < 4.5 * se, (name, m1, m2, se)
        assert 0.4 < v1 / v2 < 2.5, (name, v1, v2)
    probs = [float(line.split("\t")[3]) for line in (tmp_path / "p.tstat").read_text().splitlines()[2:]]
    ref_probs = [float(line.split("\t")[3]) for line in
                 (shared_data / (REF + ".tstat")).read_text().splitlines()[2:]]
    assert len(probs) == len(ref_probs) and min(probs) > 0.9      # every clade MrBayes is sure of
