"""A test-only backend that takes packed flushes (mbgpu.cuda.batch.PackedFlush) like the CUDA backend
and replays them, section by section, on a host backend (the numpy reference by default): the core's
device path (mbgpu.core.device_division) then runs, and is checked, without a GPU."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from mbgpu.cuda.batch import unpack_flush
from mbgpu.models.substitution import EigenSystem


class PackedHost:
    """Wraps a host backend (`inner`); launch_packed replays a flush on it, batch_fetch returns the lnLs.
    Not a HostBuffers itself (and its inner one is kept under another name), so the core takes the
    device path for it."""

    def __init__(self, inner):
        self.host, self.spec, self.launches = inner, inner.spec, 0

    def __getattr__(self, name):
        return getattr(self.__dict__["host"], name)

    def launch_packed(self, flush, tag: str = ""):
        b, s, c = self.host, self.spec.n_states, self.spec.n_categories
        got = unpack_flush(flush, s, c)
        assert sum(got["counts"]) + int(got["spans"][:, 1].sum()) == len(got["ops"])
        assert not (got["counts"] and len(got["spans"]))
        for e, row in enumerate(got["eigens"]):
            eigen = EigenSystem(row[:s], row[s:s + s * s].reshape(s, s), row[s + s * s:].reshape(s, s))
            mine = got["eigen_of"] == e
            b.set_category_rates(got["rates"][e])
            b.update_transition_matrices(eigen, got["mat_index"][mine], got["lengths"][mine])
        first = 0
        for count in got["counts"]:              # each level reads only earlier levels' results
            _check_level(got["ops"][first:first + count])
            b.update_partials(got["ops"][first:first + count])
            first += count
        for first, count, _weight in got["spans"].tolist():      # or job by job, each job child-first
            _check_job(got["ops"][first:first + count], self.spec.n_tips)
            b.update_partials(got["ops"][first:first + count])
        for cum, reset, start, count, sign in got["scale_table"].tolist():
            assert reset == 1 and sign == 1
            b.reset_scale(cum)
            b.accumulate_scale(cum, got["scale_index"][start:start + count])
        self.launches += 1
        return [b.root_log_likelihood(root, p[:s], p[s:s + c], p[s + c], cum, child, cm)
                for (root, cum, child, cm), p in zip(got["root_jobs"].tolist(), got["params"])]

    def batch_fetch(self, handle):
        return handle


def _check_level(ops: np.ndarray) -> None:
    """Operations of one level are independent: no row reads or writes what another writes."""
    dest = ops[:, 0].tolist()
    assert len(set(dest)) == len(dest), "two operations of one level write one buffer"
    assert not set(dest) & set(ops[:, 3].tolist() + ops[:, 5].tolist()), "a level reads what it writes"


def _check_job(ops: np.ndarray, n_tips: int) -> None:
    """A job's operations read only tips, buffers the job wrote before, or buffers it never writes."""
    written = set(ops[:, 0].tolist())
    done = set()
    for row in ops.tolist():
        for child in (row[3], row[5]):
            assert child < n_tips or child in done or child not in written, "a job reads before it writes"
        done.add(row[0])


def packed_choice(choice):
    """A BackendChoice whose instances are PackedHost wrappers of the chosen host backend."""
    return replace(choice, make=lambda spec: PackedHost(choice.make(spec)))
