"""`ss` under `mpiexec`: the .ss, .p, .t and .mcmc files and the screen are the serial run's, for several
numbers of ranks, with one chain per run (the cold lnL of another rank's run reaches rank 0 at every
sample) and after a stop on one rank continued (`ss append=yes`) with another number of ranks."""
import pytest

from tests.test_mpi.launch import OUTPUTS, block, run, screen

pytestmark = pytest.mark.mpi

FILES = OUTPUTS + ("r.ss",)


def ss_block(chains: int = 2, extra: str = "") -> str:
    """block()'s analysis as `ss`: 200 generations, 3 steps of 50 after a burn-in of 50."""
    text = block(ngen=200, mcmc_extra=extra).replace(" mcmc ngen=", " ss nsteps=3 ngen=")
    return text.replace("nchains=2", "nchains=%d" % chains)


def same_files(a, b) -> list[str]:
    return [n for n in FILES if (a / n).read_bytes() != (b / n).read_bytes()]


@pytest.mark.parametrize("chains, n", [(2, 3), (2, 4), (1, 2)])
def test_ss_byte_identical_to_serial(tmp_path, chains, n):
    text = ss_block(chains)
    one, many = run(tmp_path / "serial", text, None, 600), run(tmp_path / "mpi", text, n, 600)
    assert one.returncode == 0 and many.returncode == 0, (one.stderr, many.stderr)
    assert same_files(tmp_path / "serial", tmp_path / "mpi") == []
    assert "Marginal likelihood (in natural log units) estimated using stepping-stone" in many.stdout
    assert screen(many.stdout) == screen(one.stdout)


def test_ss_stopped_under_mpi_continues_with_other_ranks(tmp_path):
    one = run(tmp_path / "serial", ss_block(), None, 600)
    assert one.returncode == 0, one.stderr
    # the signal at 113 rides the stop check started at 120, which every rank finishes at 130
    stopped = run(tmp_path / "mpi", ss_block(), 3, 600, fault="2:113:usr1")
    assert stopped.returncode == 138, stopped.stdout[-2000:] + stopped.stderr
    more = run(tmp_path / "mpi", ss_block(extra="append=yes"), 2, 600)
    assert more.returncode == 0, more.stderr
    assert "Continuing from checkpoint 'r.ckp.h5' at generation 130" in more.stdout
    assert same_files(tmp_path / "serial", tmp_path / "mpi") == []
    tail = one.stdout.split("Marginal likelihood (in natural log units)")[1].split("More statistics")[0]
    assert tail in more.stdout
