"""Every NEXUS file in ../shared/data loads; commands that are not implemented yet say so plainly."""
import io

import pytest

from mbgpu.console import Console
from mbgpu.errors import NotImplementedYet
from mbgpu.interpreter import Interpreter
from tests.conftest import SHARED

pytestmark = pytest.mark.shared   # every NEXUS file of ../shared
FILES = sorted((SHARED / "data" / "mrbayes").glob("*.nex")) + sorted((SHARED / "data" / "oracles").glob("*.nex"))
DIMS = {"primates": (12, 898), "avian_ovomucoids": (89, 88), "cynmix": (32, 3246), "finch": (4, 16119),
        "hymfossil": (114, 5449), "hym": (20, 510), "kim": (27, 1742), "replicase": (9, 720),
        "sceloporus": (123, 1606)}


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_file_loads(path, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # anything a file writes lands here
    import mbgpu.commands.handlers as handlers
    real = handlers.run_mcmc

    def two_generations(interp):  # the example blocks ask for real analyses: build them, run 2 generations
        interp.settings.mcmc["Ngen"] = min(interp.settings.mcmc["Ngen"], 2)
        real(interp)

    monkeypatch.setattr(handlers, "run_mcmc", two_generations)
    it = Interpreter(Console(io.StringIO()))
    try:
        it.run_file(str(path))
    except NotImplementedYet:
        pass  # e.g. sump/sumt/delete in the example blocks: stated plainly, data already loaded
    m = it.settings.matrix
    assert m is not None and m.ntax > 0
    if path.stem in DIMS:
        assert (m.ntax, m.nchar) == DIMS[path.stem]


def test_the_shared_files_were_found(shared_data):
    """Guard: without ../shared the parametrised tests above would collect nothing and pass silently."""
    assert len(FILES) >= 47, "expected the 10 MrBayes examples and 37 oracles in %s, found %d" % (SHARED, len(FILES))
