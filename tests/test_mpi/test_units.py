"""The MPI pieces that need no launcher: placement, launch detection, device choice, the tests' fault entry,
slices."""
import pytest

from mbgpu.errors import CommandError, DeviceError
from mbgpu.mpi import comm as mcomm
from mbgpu.mpi.devices import pick_device
from mbgpu.mpi.layout import Layout
from mbgpu.patterns import pattern_slice


@pytest.mark.parametrize("runs,chains,size", [(2, 4, n) for n in range(1, 9)] + [(1, 1, 1), (3, 3, 4), (2, 2, 3)])
def test_every_chain_on_exactly_one_rank_in_order(runs, chains, size):
    lay = Layout(runs, chains, size)
    placed = [rc for rank in range(size) for rc in lay.chains_of(rank)]
    assert placed == [(r, c) for r in range(runs) for c in range(chains)]      # run-major, contiguous
    sizes = [len(lay.chains_of(rank)) for rank in range(size)]
    assert max(sizes) - min(sizes) <= 1 and min(sizes) >= 1
    for rank in range(size):
        assert all(lay.owner(r, c) == rank for r, c in lay.chains_of(rank))


def test_site_split_groups_share_chains():
    lay = Layout(2, 2, 4, sitesplit=2)
    assert lay.chains_of(0) == lay.chains_of(1) == [(0, 0), (0, 1)]
    assert lay.chains_of(2) == lay.chains_of(3) == [(1, 0), (1, 1)]
    assert [lay.leader(r) for r in range(4)] == [True, False, True, False]
    assert lay.owner(1, 1) == 2


class _Comm:
    def __init__(self, rank):
        self.rank = rank

    def Get_rank(self):
        return self.rank


@pytest.mark.parametrize("size,rank,held", [(1, 0, [0, 1]), (2, 0, [0]), (2, 1, [1]), (3, 0, None), (4, 3, None)])
def test_compiled_blocks_only_for_runs_held_whole(size, rank, held):
    """A rank steps its runs in compiled blocks only when it holds them whole (runs_local); no block
    crosses a stop-signal check (a collective), wherever sampling and printing fall."""
    from types import SimpleNamespace

    from mbgpu.mpi.driver import DistributedMC3
    from mbgpu.mpi.stop_check import STOP_EVERY

    opts = SimpleNamespace(nchains=2, samplefreq=1000, printfreq=1000, mcmcdiagn=False, ngen=10 ** 6)
    mc3 = DistributedMC3([[None] * 2 for _ in range(2)], opts, None, None, None, _Comm(rank), Layout(2, 2, size))
    assert mc3.held_runs() == held
    mc3.block_len = 256
    assert [mc3._block_end(g) for g in (1, STOP_EVERY, STOP_EVERY + 1)] == [STOP_EVERY, STOP_EVERY, 2 * STOP_EVERY]


class _Others:
    """A world of this rank and others whose allreduce contributions are given (signal, pace) pairs; each
    Iallreduce (max) completes at Wait, as MPI's may."""

    def __init__(self, others):
        self.others, self.sent = list(others), []

    def Iallreduce(self, send, recv, op):
        from types import SimpleNamespace

        import numpy as np

        signum, pace = self.others.pop(0)
        self.sent.append(send.tolist())
        return SimpleNamespace(Wait=lambda: recv.__setitem__(slice(None), np.maximum(send, [signum, -pace])))


def test_stop_checks_paced_by_the_slowest_ranks_blocks():
    """Checks start STOP_EVERY apart; then every check is as far from the one before as the least pace any
    rank asked two checks before (a rank asks its block length, within STOP_EVERY..MC3.BLOCK_MAX); a
    signal on another rank is seen one check on."""
    from mbgpu.mpi.stop_check import STOP_EVERY, StopCheck
    from mbgpu.sampler.mc3 import MC3

    comm = _Others([(0, 70), (0, MC3.BLOCK_MAX), (0, 40), (5, 60)])
    stops, seen, gen, paces = StopCheck(comm), [], 0, [90, 10 ** 6, 3, 50, 80]
    while gen < 1000 and not seen:
        gen = stops.next_check(gen + 1)
        assert stops.due(gen) and not stops.due(gen - 1)
        seen += [gen] if stops.check(gen, 0, pace=paces.pop(0)) else []
    assert comm.sent == [[0, -90], [0, -MC3.BLOCK_MAX], [0, -STOP_EVERY], [0, -50]]
    # 10: the first; 20: no answer yet; 20+70 (70 < 90); 90+256 (both asked BLOCK_MAX); 346+10 (3 raised
    # to STOP_EVERY) finds the signal 5 another rank sent at 346, and starts no check
    assert seen == [20 + 70 + MC3.BLOCK_MAX + STOP_EVERY] and stops.every == 50 and paces == []
    assert StopCheck(comm).next_check(25) == 30


def test_stop_checks_fixed_when_not_paced(monkeypatch):
    from mbgpu.mpi.stop_check import STOP_EVERY, StopCheck

    monkeypatch.setattr(StopCheck, "paced", False)
    comm = _Others([(0, 10), (0, 10), (0, 10)])
    stops, gens = StopCheck(comm), []
    for _ in range(3):
        gens.append(stops.next_check(gens[-1] + 1 if gens else 1))
        stops.check(gens[-1], 0, pace=200)
    assert gens == [STOP_EVERY, 2 * STOP_EVERY, 3 * STOP_EVERY] and comm.sent[0] == [0, -STOP_EVERY]


def test_too_many_ranks_says_what_to_change():
    with pytest.raises(CommandError, match=r"9 MPI processes but only 8 chains .*at most 8 .*mpirun -np 8"):
        Layout(2, 4, 9)
    with pytest.raises(CommandError, match="site-split groups of 2"):
        Layout(2, 4, 3, sitesplit=2)
    with pytest.raises(CommandError, match="in 5 site-split groups but only 4 chains"):
        Layout(2, 2, 10, sitesplit=2)


def test_table_lists_rank_chains_and_device():
    lines = Layout(2, 3, 4).table(["h cpu"] * 4)
    assert lines[0] == "   MPI layout: 4 processes, 2 runs x 3 chains"
    assert lines[2:] == ["         0 -- (1,1) (1,2) -- h cpu", "         1 -- (1,3) (2,1) -- h cpu",
                         "         2 -- (2,2) -- h cpu", "         3 -- (2,3) -- h cpu"]


@pytest.mark.parametrize("env,size", [
    ({}, None), ({"OMPI_COMM_WORLD_SIZE": "4"}, 4), ({"PMI_SIZE": "2", "PMI_RANK": "1"}, 2),
    ({"PMIX_RANK": "0"}, 0), ({"SLURM_NTASKS": "8"}, None), ({"SLURM_NTASKS": "8", "SLURM_STEP_NUM_TASKS": "8"}, None),
    ({"SLURM_STEP_ID": "0", "SLURM_STEP_NUM_TASKS": "8"}, 8)])
def test_launch_detection(env, size):
    assert mcomm.launched_size(env) == size
    assert mcomm.launched(env) == (size is not None)


def test_never_silently_n_copies_without_mpi4py(monkeypatch):
    monkeypatch.setattr(mcomm, "_import_mpi", lambda: None)
    assert mcomm.world({}) is None                              # plain serial run
    assert mcomm.world({"PMI_SIZE": "1"}) is None              # mpiexec -n 1: the serial run is the same
    with pytest.raises(mcomm.MpiLaunchError, match="4 processes.*mpi4py is not installed"):
        mcomm.world({"OMPI_COMM_WORLD_SIZE": "4"})


def test_mpi4py_of_another_mpi_is_refused(monkeypatch):
    class World:
        def Get_size(self):
            return 1

    class FakeMPI:
        COMM_WORLD = World()

        @staticmethod
        def Get_library_version():
            return "MPICH Version: 4\nmore"

    monkeypatch.setattr(mcomm, "_import_mpi", lambda: FakeMPI)
    with pytest.raises(mcomm.MpiLaunchError, match="started 2 processes but mpi4py's MPI \\(MPICH Version: 4\\) sees "
                                                   "a world of 1"):
        mcomm.world({"PMI_SIZE": "2"})


def test_device_choice():
    assert pick_device(0, 4)[0] == 0 and pick_device(5, 4)[0] == 1
    assert pick_device(3, 1, "2")[0] == 0          # srun --gpus-per-task=1 (CUDA_VISIBLE_DEVICES=2): one visible
    assert [pick_device(i, 3, "0,2,3")[0] for i in range(4)] == [0, 1, 2, 0]   # a chosen set of GPUs, in turn
    with pytest.raises(DeviceError, match="no CUDA device.*CUDA_VISIBLE_DEVICES=unset"):
        pick_device(0, 0)


def test_mpi_backend_gets_the_ranks_device(monkeypatch):
    """Under MPI the rank's device index is passed to the backend factory (no environment in between)."""
    import io

    import mbgpu.likelihood.select as select
    import mbgpu.mpi.devices as devices
    from mbgpu.console import Console
    from mbgpu.mpi.layout import Layout
    from mbgpu.mpi.driver import _backend

    class Comm:
        def __init__(self, rank):
            self.rank = rank

        def Get_rank(self):
            return self.rank

        def Get_size(self):
            return 4

    made = []
    monkeypatch.setattr(devices, "local_comm", lambda comm: comm)
    monkeypatch.setattr(devices, "share_cores", lambda n: n)
    monkeypatch.setattr(devices, "assign_device", lambda local_rank: (local_rank % 2, "cuda:%d" % (local_rank % 2)))
    monkeypatch.setattr(select, "_cuda_available", lambda: True)
    monkeypatch.setattr(select, "_gpu_factory", lambda precision, device, asynchronous: made.append(device) or object())
    settings = type("S", (), {"options": {}, "mcmc": {}})()
    for rank in range(4):
        _factory, label, _local = _backend(settings, Console(io.StringIO()), Comm(rank), Layout(2, 2, 4),
                                           select.GPU_MIN_WORK)            # data big enough for the GPU
        assert label == "cuda:%d" % (rank % 2)
    assert made == [0, 1, 0, 1]


def test_fault_entry_parsing():
    from tests.test_mpi.fault_entry import parse_fault

    assert parse_fault("1:20:kill") == (1, 20, "kill")
    with pytest.raises(ValueError):
        parse_fault("1:x:raise")
    with pytest.raises(ValueError):
        parse_fault("1:2:explode")


@pytest.mark.parametrize("n,k", [(10, 3), (3, 4), (413, 2), (1, 1)])
def test_pattern_slices_cover_once(n, k):
    cuts = [pattern_slice(n, k, i) for i in range(k)]
    assert cuts[0][0] == 0 and cuts[-1][1] == n
    assert all(a[1] == b[0] for a, b in zip(cuts, cuts[1:]))
    assert max(h - l for l, h in cuts) - min(h - l for l, h in cuts) <= 1


@pytest.mark.parametrize("name", ["mpi.layout", "mpi.devices", "patterns"])
def test_doctests(name):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module("mbgpu." + name))
    assert result.attempted > 0 and result.failed == 0


def test_launched_without_mpi4py_stops_with_one_line(tmp_path):
    import os

    from tests.test_mpi.launch import block, run

    hide = tmp_path / "hide" / "mpi4py"
    hide.mkdir(parents=True)
    (hide / "__init__.py").write_text("raise ImportError('hidden for this test')\n")
    path = os.pathsep.join([str(hide.parent)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
    proc = run(tmp_path / "w", block(ngen=10), None, PMI_SIZE="4", PMI_RANK="0", PYTHONPATH=path)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "mbgpu: error: started by an MPI launcher (4 processes) but mpi4py is not installed: install mbgpu[mpi] "
        "(mpi4py built against this cluster's MPI: docs/hpc.md) or run mbgpu without mpirun/srun, otherwise every process would run the whole "
        "analysis"]
    assert not (tmp_path / "w" / "r.run1.p").exists()


@pytest.mark.parametrize("runs, chains, size, sitesplit, local", [
    (2, 2, 2, 1, True), (2, 2, 1, 1, True), (4, 8, 4, 1, True), (2, 2, 4, 2, True),
    (2, 2, 3, 1, False), (2, 2, 4, 1, False), (3, 2, 2, 1, False)])
def test_runs_local_when_each_run_is_on_one_group(runs, chains, size, sitesplit, local):
    """Swaps go without messages only where every run's chains share one rank group (and no ss or
    reweighting reads the other runs each generation)."""
    from types import SimpleNamespace

    from mbgpu.mpi.driver import DistributedMC3

    mc3 = object.__new__(DistributedMC3)
    mc3.layout, mc3.opts = Layout(runs, chains, size, sitesplit), SimpleNamespace(nchains=chains)
    mc3.runs, mc3.stepping, mc3._grouped = [None] * runs, None, None
    assert mc3.runs_local is local
    mc3.stepping = object()
    assert mc3.runs_local is False


def test_openmp_threads_wait_passively_under_mpi_unless_the_user_says(monkeypatch):
    """Spinning OpenMP workers made numba's parallel regions 10-250x slower under mpiexec (docs/hpc.md)."""
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    mcomm.passive_openmp_threads()
    import os
    assert os.environ["OMP_WAIT_POLICY"] == "passive"
    monkeypatch.setenv("OMP_WAIT_POLICY", "active")
    mcomm.passive_openmp_threads()
    assert os.environ["OMP_WAIT_POLICY"] == "active"
