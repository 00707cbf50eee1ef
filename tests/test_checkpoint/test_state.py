"""Pieces of the sampler state: split counters, seeds, and the likelihood check on restore."""
import shutil

import numpy as np
import pytest

from mbgpu.checkpoint import h5io
from mbgpu.checkpoint.errors import CheckpointMismatch
from mbgpu.checkpoint.schema import canonical, first_difference
from mbgpu.checkpoint.state import capture_splits, restore_splits
from mbgpu.splits import SplitCounter
from tests.test_checkpoint.common import block, hashes, run_in, run_text, same_outputs


def test_split_counter_round_trip_with_wide_bitsets():
    rng = np.random.default_rng(1)
    n_taxa = 500
    counter = SplitCounter(2, n_taxa)
    pool = [int.from_bytes(rng.bytes(63), "little") >> 4 for _ in range(40)]
    for _ in range(30):
        for r in range(2):
            counter.add(r, sorted({pool[i] for i in rng.choice(len(pool), size=12)}))
    state = capture_splits(counter)
    assert state["splits/keys"].shape[1] == (n_taxa + 7) // 8
    again = SplitCounter(2, n_taxa)
    restore_splits(again, state)
    assert again.samples == counter.samples
    assert again.asdsf() == counter.asdsf()


def test_canonical_settings_are_exact_and_diffable():
    assert canonical({"b": 0.1, "a": (1, 2.5)}) == {"a": [1, "2.5"], "b": "0.1"}
    assert first_difference({"x": {"Nst": 6}}, {"x": {"Nst": 2}}) == "x Nst: 6 in the checkpoint, 2 now"
    assert first_difference({"x": 1}, {"x": 1}) is None


def test_tampered_likelihood_is_refused(tmp_path, monkeypatch):
    """A payload whose stored lnL does not match the recomputation (valid checksums) is refused untouched."""
    work = tmp_path / "w"
    run_text(work, block(60, "checkfreq=1000"), monkeypatch)
    payload = h5io.read_file(str(work / "r.ckp.h5"))
    payload["chains/run1_chain2/part_lnl"] = payload["chains/run1_chain2/part_lnl"] + 0.5
    h5io.write_file(str(work / "r.ckp.h5"), payload, {})
    before = hashes(work)
    with pytest.raises(CheckpointMismatch, match=r"\(run 2, chain 3\): the log likelihood recomputed"):
        run_in(work, block(100, "append=yes"), monkeypatch)
    assert hashes(work) == before


def test_seeds_come_from_the_checkpoint_when_not_set(tmp_path, monkeypatch):
    run_text(tmp_path / "ref", block(120), monkeypatch)
    work = tmp_path / "w"
    run_text(work, block(50), monkeypatch)
    text = run_in(work, block(120, "append=yes").replace("set seed=3 swapseed=4;", ""), monkeypatch)
    assert "Seed = 3" in text and "Swapseed = 4" in text
    assert same_outputs(tmp_path / "ref", work) == []


def test_moved_folder_resumes(tmp_path, monkeypatch):
    """Output paths are stored relative to the checkpoint: a moved folder still resumes."""
    run_text(tmp_path / "ref", block(100), monkeypatch)
    run_text(tmp_path / "a", block(40), monkeypatch)
    shutil.move(str(tmp_path / "a"), str(tmp_path / "b"))
    run_in(tmp_path / "b", block(100, "append=yes"), monkeypatch)
    assert same_outputs(tmp_path / "ref", tmp_path / "b") == []
