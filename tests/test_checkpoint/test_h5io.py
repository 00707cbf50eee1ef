"""The checkpoint file itself: exact round trip, checksums everywhere, atomic replacement."""
import os

import h5py
import numpy as np
import pytest

from mbgpu.checkpoint import h5io
from mbgpu.checkpoint.errors import CheckpointCorrupt, CheckpointMissing
from mbgpu.checkpoint.session import load_for_resume
from mbgpu.console import Console


STEPS = ("write", "link", "replace_prev", "replace_new", "fsync_dir")


def payload(gen: int) -> dict:
    rng = np.random.default_rng(gen)
    return {"mc3/generation": np.array([gen], dtype=np.int64), "a/values": rng.normal(size=1000),
            "a/ints": rng.integers(0, 9, size=(7, 3)), "a/empty": np.zeros((0, 4), dtype=np.int32),
            "a/text": '{"state": %d, "inc": 340282366920938463463374607431768211455}' % gen,
            "splits/keys": rng.integers(0, 255, size=(50, 63), dtype=np.uint8)}


def same(a: dict, b: dict) -> bool:
    if sorted(a) != sorted(b):
        return False
    for k in a:
        if isinstance(a[k], str):
            if a[k] != b[k]:
                return False
        elif a[k].dtype != b[k].dtype or a[k].shape != b[k].shape or not np.array_equal(a[k], b[k]):
            return False
    return True


def test_round_trip_is_exact_and_every_dataset_is_checksummed(tmp_path):
    path = tmp_path / "x.ckp.h5"
    h5io.write_atomic(str(path), payload(3), {"generation": 3})
    got = h5io.read_file(str(path))
    assert same(got, payload(3))
    with h5py.File(path) as f:
        assert f.attrs["payload_sha256"] == h5io.payload_digest(payload(3))
        sets = []
        f.visititems(lambda n, o: sets.append(o) if isinstance(o, h5py.Dataset) else None)
        assert all(d.fletcher32 for d in sets if d.size), "fletcher32 on every non-empty dataset"


def test_digest_sees_any_change():
    base = h5io.payload_digest(payload(1))
    changed = payload(1)
    changed["a/values"][17] = np.nextafter(changed["a/values"][17], 1.0)
    assert h5io.payload_digest(changed) != base
    renamed = payload(1)
    renamed["a/valuez"] = renamed.pop("a/values")
    assert h5io.payload_digest(renamed) != base


def test_no_flipped_byte_goes_unnoticed(tmp_path):
    """Flip single bytes all over the file: the reader raises CheckpointCorrupt or returns the exact payload."""
    path = tmp_path / "x.ckp.h5"
    h5io.write_file(str(path), payload(5), {})
    good = path.read_bytes()
    rng = np.random.default_rng(0)
    noticed = 0
    for pos in sorted(set(rng.integers(0, len(good), size=120).tolist())):
        bad = bytearray(good)
        bad[pos] ^= 1 << int(rng.integers(8))
        path.write_bytes(bytes(bad))
        try:
            got = h5io.read_file(str(path))
        except CheckpointCorrupt:
            noticed += 1
            continue
        assert same(got, payload(5)), "byte %d changed the payload silently" % pos
    assert noticed > 30


@pytest.mark.parametrize("crash_at,hard_links", [(step, True) for step in STEPS] +
                         [(step, False) for step in STEPS if step != "link"])
def test_a_crash_at_any_step_leaves_a_valid_checkpoint(tmp_path, monkeypatch, crash_at, hard_links):
    path = str(tmp_path / "x.ckp.h5")
    h5io.write_atomic(path, payload(1), {})
    h5io.write_atomic(path, payload(2), {})

    class Crash(Exception):
        pass

    real_replace, real_link = os.replace, os.link

    def replace(a, b):
        step = "replace_new" if a.endswith(".ckp.h5.tmp") else "replace_prev"
        if step == crash_at:
            raise Crash
        real_replace(a, b)

    def link(a, b):
        if not hard_links:
            raise OSError("no hard links here")
        if crash_at == "link":
            raise Crash
        real_link(a, b)

    def dataset(f, groups, key, value):
        if crash_at == "write" and key == "a/values":
            raise Crash
        return real_dataset(f, groups, key, value)

    real_dataset = h5io._dataset
    monkeypatch.setattr(h5io.os, "replace", replace)
    monkeypatch.setattr(h5io.os, "link", link)
    monkeypatch.setattr(h5io, "_dataset", dataset)
    def sync_directory(folder):
        if crash_at == "fsync_dir":
            raise Crash

    monkeypatch.setattr(h5io, "sync_directory", sync_directory)
    with pytest.raises(Crash):
        h5io.write_atomic(path, payload(3), {})
    monkeypatch.undo()
    notes = []
    console = Console()
    console.print = notes.append
    got, source = load_for_resume_any(path, console)
    gen = int(got["mc3/generation"][0])
    assert gen in (2, 3) and same(got, payload(gen))
    if hard_links:
        assert source == path, "with hard links NAME.ckp.h5 is never absent"
    if source != path:
        assert notes and "continuing from the previous checkpoint" in notes[0]


def load_for_resume_any(path, console):
    """load_for_resume without the REQUIRED-datasets check (these payloads are synthetic)."""
    import mbgpu.checkpoint.session as session

    real = session.validate.require
    session.validate.require = lambda p, where: None
    try:
        return load_for_resume(path, console)
    finally:
        session.validate.require = real


def test_missing_everything(tmp_path):
    with pytest.raises(CheckpointMissing, match="no checkpoint"):
        load_for_resume(str(tmp_path / "none.ckp.h5"), Console())
