"""Runs under `mpiexec -n 1..4` (oversubscribed on 2 cores) against the serial run: byte-identical files,
one screen, a clear error for too many ranks, a failing or killed rank stopping the whole job."""
import time

import pytest

from tests.test_mpi.launch import OUTPUTS, block, run, screen

pytestmark = pytest.mark.mpi


@pytest.fixture(scope="module")
def serial(tmp_path_factory):
    folder = tmp_path_factory.mktemp("serial")
    proc = run(folder, block(), None)
    assert proc.returncode == 0, proc.stderr
    (folder / "screen.txt").write_text(proc.stdout)
    return folder


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_outputs_byte_identical_to_serial(tmp_path, serial, n):
    proc = run(tmp_path, block(), n)
    assert proc.returncode == 0, proc.stderr
    for name in OUTPUTS:
        assert (tmp_path / name).read_bytes() == (serial / name).read_bytes(), name
    out = proc.stdout
    assert out.count("Chain results (60 generations requested)") == 1      # one screen, not n copies
    assert "MPI layout: %d processes, 2 runs x 2 chains" % n in out
    assert out.count(" -- (") >= n and "rank -- (run, chain) -- device" in out
    assert (tmp_path / "r.ckp.h5").exists()
    assert screen(out) == screen((serial / "screen.txt").read_text())     # the one driver: the same screen too


def test_layout_table_uneven(tmp_path):
    proc = run(tmp_path, block(ngen=10), 3)
    assert proc.returncode == 0, proc.stderr
    rows = [l.split(" -- ") for l in proc.stdout.splitlines() if l.strip()[:1].isdigit() and " -- (" in l]
    assert [r[1] for r in rows] == ["(1,1) (1,2)", "(2,1)", "(2,2)"]
    assert all(r[2].endswith("cpu") for r in rows)


def test_more_ranks_than_chains_is_one_line_error(tmp_path):
    proc = run(tmp_path, block(ngen=10), 5)
    assert proc.returncode != 0
    lines = [l for l in proc.stderr.splitlines() if "error:" in l]     # Open MPI adds its own exit-status notice
    assert len(lines) == 1, proc.stderr
    assert "5 MPI processes but only 4 chains" in lines[0] and "mpirun -np 4" in lines[0]
    assert not (tmp_path / "r.run1.p").exists()


@pytest.mark.parametrize("kind", ["raise", "kill"])
def test_failing_rank_aborts_job_and_keeps_checkpoint(tmp_path, kind):
    from mbgpu.checkpoint.session import load

    start = time.time()
    proc = run(tmp_path, block(ngen=2000), 2, timeout=120, fault="1:30:%s" % kind)
    assert proc.returncode != 0
    assert time.time() - start < 120
    if kind == "raise":
        msg = [l for l in (proc.stderr + proc.stdout).splitlines() if "MPI rank 1: error:" in l]
        assert msg and "injected fault" in msg[0] and "generation 30" in msg[0], proc.stderr
    payload = load(str(tmp_path / "r.ckp.h5"))            # verified: complete and consistent
    assert int(payload["mc3/generation"][0]) == 20


def test_append_with_another_number_of_ranks(tmp_path, serial):
    first = run(tmp_path, block(ngen=40), 2)
    assert first.returncode == 0, first.stderr
    more = run(tmp_path, block(ngen=60, mcmc_extra="append=yes"), 3)
    assert more.returncode == 0, more.stderr
    assert "Continuing from checkpoint" in more.stdout
    for name in OUTPUTS:
        assert (tmp_path / name).read_bytes() == (serial / name).read_bytes(), name


def _lnl(path):
    rows = path.read_text().splitlines()[2:]
    return [float(r.split("\t")[1]) for r in rows]


def test_site_split_matches_unsplit(tmp_path, serial):
    proc = run(tmp_path, block(set_extra="sitesplit=2"), 2)
    assert proc.returncode == 0, proc.stderr
    assert "site patterns split over 2 ranks per group" in proc.stdout
    for name in ("r.run1.p", "r.run2.p"):
        got, want = _lnl(tmp_path / name), _lnl(serial / name)
        assert len(got) == len(want) == 7
        assert got == pytest.approx(want, rel=1e-9)


@pytest.mark.gpu
@pytest.mark.parametrize("split", [1, 2])
def test_gpu_ranks_equal_the_serial_gpu_run(tmp_path, split):
    """Two ranks on the GPU backend (one GPU each, or sharing the only one): chains spread over the ranks
    give the serial GPU run's files; patterns split over them (`sitesplit=2`) its lnL. The split run hung
    until 2026-11-28: a node's first rank built its chains (the start lnL, a sum over the group) while
    the second waited for it at compile_once_per_node's barrier."""
    extra = "sitesplit=2" if split == 2 else ""
    serial = run(tmp_path / "serial", block(), None, backend="gpu")
    assert serial.returncode == 0, serial.stderr
    proc = run(tmp_path / "mpi", block(set_extra=extra), 2, timeout=300, backend="gpu")
    assert proc.returncode == 0, proc.stderr + proc.stdout[-2000:]
    assert "cuda:" in proc.stdout
    for name in OUTPUTS if split == 1 else ():
        assert (tmp_path / "mpi" / name).read_bytes() == (tmp_path / "serial" / name).read_bytes(), name
    for name in ("r.run1.p", "r.run2.p"):
        assert _lnl(tmp_path / "mpi" / name) == pytest.approx(_lnl(tmp_path / "serial" / name), rel=1e-9)


def test_site_split_needs_whole_groups(tmp_path):
    proc = run(tmp_path, block(ngen=10, set_extra="sitesplit=2"), 3)
    assert proc.returncode != 0
    assert "cannot be cut into site-split groups of 2" in proc.stderr


def _script(name: str, k: int, timeout: int):
    """tests/test_mpi/`name` under mpiexec -n k from the repository root: its stdout (rc 0 asserted)."""
    import subprocess
    import sys
    from pathlib import Path

    from tests.test_mpi.launch import _flags, clean_env, mpiexec

    exe = mpiexec()
    script = Path(__file__).with_name(name)
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run([exe, *_flags(exe), "-n", str(k), sys.executable, str(script)], cwd=root,
                          env=clean_env(), capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


@pytest.mark.parametrize("k", [2, 3])
def test_split_log_likelihood_equals_whole(k):
    assert "ranks=%d max_rel=" % k in _script("sitesplit_check.py", k, 120)


@pytest.mark.parametrize("k", [2, 3])
def test_split_parsimony_pass_makes_the_unsplit_moves(k):
    """ParsSPR's Fitch pass split over a site-split group (pars_split_check.py): the same moves, bits."""
    out = _script("pars_split_check.py", k, 300)
    assert "ranks=%d split=yes moves=300 same=yes" % k in out
    assert "ranks=%d split=no moves=300 same=yes" % k in out


def test_stop_signal_on_one_rank_stops_every_rank_with_a_checkpoint(tmp_path):
    """Rank 2 gets SIGUSR1 at generation 25; its check at 30 carries it (every STOP_EVERY = 10 generations a
    non-blocking collective, finished at the next check), so every rank sees it at 40, writes the checkpoint
    there and stops."""
    from mbgpu.checkpoint.session import load

    proc = run(tmp_path, block(ngen=2000), 3, timeout=120, fault="2:25:usr1")
    assert proc.returncode == 138, proc.stdout[-2000:] + proc.stderr
    assert "SIGUSR1 received." in proc.stdout and "resume with 'mcmc append=yes ngen=2000'" in proc.stdout
    assert int(load(str(tmp_path / "r.ckp.h5"))["mc3/generation"][0]) == 40
    assert (tmp_path / "r.run1.p").read_text().splitlines()[-1].split("\t")[0] == "40"


def test_allchains_outputs_byte_identical_to_serial(tmp_path):
    """allchains=yes over 4 ranks (each chain on its own rank): the heats' move statistics travel with
    accepted swaps by message, and the heated chains' moves reach rank 0: .mcmc and screen as serial."""
    text = block(mcmc_extra="allchains=yes allcomps=yes")
    (tmp_path / "serial").mkdir()
    (tmp_path / "mpi").mkdir()
    one, four = run(tmp_path / "serial", text, None), run(tmp_path / "mpi", text, 4)
    assert one.returncode == 0 and four.returncode == 0, (one.stderr, four.stderr)
    for name in OUTPUTS:
        assert (tmp_path / "mpi" / name).read_bytes() == (tmp_path / "serial" / name).read_bytes(), name
    assert "(heated)" in four.stdout and "Pairwise average" in four.stdout
    assert screen(four.stdout) == screen(one.stdout)


@pytest.mark.parametrize("unlink", ["topology", "brlens"])
def test_unlinked_topologies_byte_identical_to_serial(unlink, tmp_path):
    """Three trees per chain (`unlink topology`, or `unlink brlens`: three sharing one topology) over 3
    ranks: rank 0 gets each cold chain's trees by message and writes every tree's file as the serial run
    does."""
    model = ("charset p1 = 1-898\\3; charset p2 = 2-898\\3; charset p3 = 3-898\\3; partition c = 3: p1, p2, p3; "
             "set partition=c; unlink %s=(all);" % unlink)
    text = block().replace("lset nst=6 rates=gamma;", model)
    (tmp_path / "serial").mkdir()
    (tmp_path / "mpi").mkdir()
    one, three = run(tmp_path / "serial", text, None), run(tmp_path / "mpi", text, 3)
    assert one.returncode == 0 and three.returncode == 0, (one.stderr, three.stderr)
    names = ["r.run1.p", "r.run2.p", "r.mcmc"] + ["r.tree%d.run%d.t" % (k, r) for k in (1, 2, 3) for r in (1, 2)]
    for name in names:
        assert (tmp_path / "mpi" / name).read_bytes() == (tmp_path / "serial" / name).read_bytes(), name
    assert screen(three.stdout) == screen(one.stdout)


@pytest.mark.parametrize("clock", ["", "clockvarpr=cpp"])
def test_clock_tree_byte_identical_to_serial(tmp_path, clock):
    """A clock analysis (birth-death, free clock rate, a calibrated clade; and with the compound Poisson clock,
    whose events travel with the tree) over 3 ranks: the cold chains' clock trees reach rank 0 by message
    and every file is the serial run's."""
    model = ("taxset apes = 3-7; constraint apes = apes; prset brlenspr=clock:birthdeath clockratepr=lognormal(-2,1) "
             "topologypr=constraints(apes) nodeagepr=calibrated %s; calibrate apes=uniform(0.1,0.4);" % clock)
    text = block(mcmc_extra="checkpoint=no").replace("lset nst=6 rates=gamma;", "lset nst=2; " + model)
    (tmp_path / "serial").mkdir()
    (tmp_path / "mpi").mkdir()
    one, three = run(tmp_path / "serial", text, None), run(tmp_path / "mpi", text, 3)
    assert one.returncode == 0 and three.returncode == 0, (one.stdout[-2000:], three.stderr[-2000:])
    for name in OUTPUTS:
        assert (tmp_path / "mpi" / name).read_bytes() == (tmp_path / "serial" / name).read_bytes(), name
    assert "[&R] [&clockrate=" in (tmp_path / "serial" / "r.run1.t").read_text()
    assert screen(three.stdout) == screen(one.stdout)
