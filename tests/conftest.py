"""Shared fixtures and the skip rules for `gpu` and `mpi` tests."""
import importlib.util
import os
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

try:        # CI (CI=true): property tests draw the same examples every run, so a red build is reproducible
    from hypothesis import settings as _hypothesis_settings

    _hypothesis_settings.register_profile("ci", derandomize=True, print_blob=True)
    if os.environ.get("CI"):
        _hypothesis_settings.load_profile("ci")
except ImportError:
    pass
SHARED = Path(os.environ.get("MBGPU_SHARED") or ROOT.parent / "shared")
TEST_DATA = ROOT / "tests" / "data"   # what the tests need in a fresh clone (tests/data/README.md)
# Fixtures that reach outside the checkout (../shared: MrBayes' binaries, its data, the auxiliary oracles).
# A test using one is marked `shared` automatically and skips with a reason where ../shared is absent.
SHARED_FIXTURES = {"shared_data", "mb_double", "mb"}


def _cuda_ok() -> bool:
    try:
        from mbgpu.cuda.context import cuda_available
    except ImportError:
        return False
    return cuda_available()


def _mpi_ok() -> bool:
    """mpi4py and an mpiexec (the `mpi` extra's MPICH, $MBGPU_MPIEXEC, or one on PATH) are present."""
    if importlib.util.find_spec("mpi4py") is None:
        return False
    return bool(os.environ.get("MBGPU_MPIEXEC") or shutil.which("mpiexec", path=os.path.dirname(sys.executable))
                or shutil.which("mpiexec"))


def _require_shared() -> bool:
    """MBGPU_REQUIRE_SHARED=1 (.ci/run's second pass): a `shared` test that skips is a failure."""
    return os.environ.get("MBGPU_REQUIRE_SHARED") == "1"


def pytest_collection_modifyitems(config, items):
    if _require_shared() and not (SHARED / "data").is_dir():
        raise pytest.UsageError("MBGPU_REQUIRE_SHARED=1 but %s/data does not exist" % SHARED)
    for item in items:
        if SHARED_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.shared)
    cuda = None
    mpi = _mpi_ok()
    if not mpi and os.environ.get("MBGPU_REQUIRE_MPI") == "1" and any("mpi" in item.keywords for item in items):
        raise pytest.UsageError("MBGPU_REQUIRE_MPI=1 but mpi4py or mpiexec is missing: the mpi tests would be "
                                "skipped (pip install -e '.[mpich]', or '.[mpi]' with a system MPI)")
    for item in items:
        if "gpu" in item.keywords:
            if cuda is None:
                cuda = _cuda_ok()
            if not cuda:
                item.add_marker(pytest.mark.skip(reason="no CUDA device or pycuda"))
        if "mpi" in item.keywords and not mpi:
            item.add_marker(pytest.mark.skip(reason="needs mpi4py and an mpiexec (pip install -e '.[mpich]', or '.[mpi]' with a system MPI)"))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Under MBGPU_REQUIRE_SHARED=1 a skipped `shared` test fails: the outside oracles must have run."""
    outcome = yield
    report = outcome.get_result()
    if _require_shared() and report.skipped and "shared" in item.keywords and "gpu" not in item.keywords:
        report.outcome = "failed"
        report.longrepr = "MBGPU_REQUIRE_SHARED=1: this shared test was skipped (%s)" % (report.longrepr,)


def _peer(name: str) -> Path:
    path = SHARED / "peers" / "bin" / name
    if not os.access(path, os.X_OK):
        pytest.skip("MrBayes (%s) is not there: ../shared/peers is not beside the checkout" % path)
    return path


@pytest.fixture(scope="session")
def mb_double() -> Path:
    """The real MrBayes 3.2.7a in double precision (../shared/peers/bin/mb-double): the likelihood oracle."""
    return _peer("mb-double")


@pytest.fixture(scope="session")
def mb() -> Path:
    """The real MrBayes 3.2.7a (single precision, BEAGLE inside): the side-by-side peer."""
    return _peer("mb")


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """../shared/data beside the checkout, or $MBGPU_SHARED/data (a copy carried to the GPU machine);
    skips when absent, e.g. an sdist test run."""
    path = SHARED / "data"
    if not path.is_dir():
        pytest.skip("../shared/data is not beside the checkout")
    return path


@pytest.fixture
def interpreted(monkeypatch):
    """Runs in this test take the interpreted chain step, not the compiled core (mbgpu.core): for tests
    that compare the interpreted sampler's own variants (per-chain, batched, pipelined) byte for byte."""
    import mbgpu.sampler.batch_step as batch_step

    monkeypatch.setattr(batch_step, "core_for", lambda chains: None)


@pytest.fixture
def sampler_path(monkeypatch):
    """`sampler_path("chain")`: the chains built in this test (mbgpu.sampler.setup.build_runs) take the
    per-chain likelihood path (IncrementalPartition, one instance per chain), the reference the batched
    path is compared with; "batched" is what runs always take."""
    import mbgpu.sampler.setup as setup
    from mbgpu.sampler.batch_step import PartFactory

    def use(mode: str) -> None:
        def make(factory, n_tips: int, n_lanes: int, asked: str = "batched"):
            return PartFactory(factory, n_tips, n_lanes, mode if asked == "batched" else asked)  # reweight: "chain"
        monkeypatch.setattr(setup, "PartFactory", make)
    return use


@pytest.fixture
def pipeline(monkeypatch):
    """`pipeline(k)`: MC3 runs in this test step each generation's chains in k groups (step_generation's
    `groups`; runs use its default, mbgpu.sampler.batch_step.PIPELINE_GROUPS)."""
    import functools

    import mbgpu.sampler.batch_step as batch_step
    import mbgpu.sampler.mc3 as mc3

    def use(groups: int) -> None:
        monkeypatch.setattr(mc3, "step_generation", functools.partial(batch_step.step_generation, groups=groups))
    return use
