"""A checkpoint that cannot be used gives one specific error and leaves every file untouched."""
import re
import shutil

import h5py
import pytest

from mbgpu.checkpoint.errors import CheckpointCorrupt, CheckpointMismatch, CheckpointMissing, OutputMismatch
from mbgpu.cli import main
from tests.test_checkpoint.common import PRIMATES, block, hashes, run_in, run_text, same_outputs


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A run to generation 100 with only its final checkpoint (no NAME.ckp.h5~)."""
    mp = pytest.MonkeyPatch()
    folder = tmp_path_factory.mktemp("done") / "w"
    try:
        run_text(folder, block(100, "checkfreq=1000"), mp)
    finally:
        mp.undo()
    (folder / "run.nex").unlink()
    assert not (folder / "r.ckp.h5~").exists()
    return folder


def copy_of(finished, tmp_path):
    work = tmp_path / "w"
    shutil.copytree(finished, work)
    return work


def flip_dataset_byte(path, name):
    with h5py.File(path, "r") as f:
        offset = f[name].id.get_chunk_info(0).byte_offset
    data = bytearray(path.read_bytes())
    data[offset + 3] ^= 0x10
    path.write_bytes(bytes(data))


def flip_file_byte(path, where):
    data = bytearray(path.read_bytes())
    data[where] ^= 0x01
    path.write_bytes(bytes(data))


def other_data(tmp_path):
    text = PRIMATES.read_text()
    i = text.lower().index("matrix")
    j = text.index("\n", text.index("\n", i) + 1)  # second line after `matrix`: the first taxon's row
    row = text[text.index("\n", i) + 1:j]
    k = len(row) - 5
    swapped = row[:k] + ("A" if row[k] != "A" else "C") + row[k + 1:]
    path = tmp_path / "other.nex"
    path.write_text(text[:text.index("\n", i) + 1] + swapped + text[j:])
    return path


CASES = {
    "missing": (lambda w, t: (w / "r.ckp.h5").unlink(), {}, CheckpointMissing,
                r"no checkpoint 'r\.ckp\.h5' to continue from"),
    "truncated": (lambda w, t: (w / "r.ckp.h5").write_bytes((w / "r.ckp.h5").read_bytes()[:30000]), {},
                  CheckpointCorrupt, r"checkpoint 'r\.ckp\.h5' is truncated"),
    "not hdf5": (lambda w, t: (w / "r.ckp.h5").write_text("hello\n"), {}, CheckpointCorrupt,
                 r"is not an HDF5 checkpoint"),
    "bit flip": (lambda w, t: flip_dataset_byte(w / "r.ckp.h5", "chains/run0_chain1/brlen"), {}, CheckpointCorrupt,
                 r"is damaged: dataset 'chains/run0_chain1/brlen' fails its checksum"),
    "other data": (lambda w, t: None, {"data": "other"}, CheckpointMismatch, r"was written for other data"),
    "other model": (lambda w, t: None, {"model": "lset nst=2 rates=invgamma;"}, CheckpointMismatch,
                    r"was written for another model \(division 1 lset Nst: 6 in the checkpoint, 2 now\)"),
    "other prior": (lambda w, t: None, {"model": "lset nst=6 rates=invgamma; prset shapepr=exponential(2);"},
                    CheckpointMismatch, r"another model \(division 1 prset Shapepr: Exponential\(1\.0\) in the "
                                        r"checkpoint, Exponential\(2\.0\) now\)"),
    "other mcmc": (lambda w, t: None, {"mcmc": "nruns=2 nchains=3 samplefreq=10 printfreq=100 diagnfreq=60 "
                                               "tunefreq=25 filename=r"},
                   CheckpointMismatch, r"other mcmc settings \(mcmc Samplefreq: 20 in the checkpoint, 10 now\)"),
    "other seed": (lambda w, t: None, {"seed": "set seed=5;"}, CheckpointMismatch, r"written with seed=3, not seed=5"),
    "small ngen": (lambda w, t: None, {"ngen": 50}, CheckpointMismatch, r"at generation 100, beyond ngen=50"),
    "output gone": (lambda w, t: (w / "r.run2.t").unlink(), {}, OutputMismatch,
                    r"output file 'r\.run2\.t' recorded in checkpoint 'r\.ckp\.h5' is missing"),
    "output short": (lambda w, t: (w / "r.run1.p").write_text("[ID: 1]\n"), {}, OutputMismatch,
                     r"'r\.run1\.p' has 8 bytes, fewer than the \d+ recorded"),
    # inside the rows the checkpoint keeps (not in the last generation's row, which append drops, as MrBayes)
    "output edited": (lambda w, t: flip_file_byte(w / "r.mcmc", (w / "r.mcmc").read_bytes().rindex(b"\n100\t") - 10),
                      {}, OutputMismatch,
                      r"output file 'r\.mcmc' was changed since checkpoint"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_checkpoint_gives_its_error_and_touches_nothing(finished, tmp_path, monkeypatch, case):
    damage, opts, kind, message = CASES[case]
    work = copy_of(finished, tmp_path)
    damage(work, tmp_path)
    data = other_data(tmp_path) if opts.get("data") == "other" else PRIMATES
    text = block(opts.get("ngen", 200), "append=yes", model=opts.get("model", "lset nst=6 rates=invgamma;"),
                 data=data, **({"mcmc": opts["mcmc"]} if "mcmc" in opts else {}))
    if "seed" in opts:
        text = text.replace("set seed=3 ", opts["seed"].rstrip(";") + " ")
    before = hashes(work)
    with pytest.raises(kind) as got:
        run_in(work, text, monkeypatch)
    assert re.search(message, got.value.message), got.value.message
    assert hashes(work) == before


def test_cli_prints_one_located_line_with_status_2(finished, tmp_path, monkeypatch, capsys):
    work = copy_of(finished, tmp_path)
    (work / "r.ckp.h5").write_bytes((work / "r.ckp.h5").read_bytes()[:5000])
    cmd = tmp_path / "resume.nex"
    cmd.write_text(block(200, "append=yes"))
    monkeypatch.chdir(work)
    before = hashes(work)
    assert main([str(cmd)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert re.match(r".*resume\.nex:\d+:\d+: error: checkpoint 'r\.ckp\.h5' is truncated", err[0]), err
    assert hashes(work) == before


def test_damaged_checkpoint_falls_back_to_the_previous_one(tmp_path, monkeypatch):
    run_text(tmp_path / "ref", block(200), monkeypatch)
    work = tmp_path / "w"
    run_text(work, block(150, "checkfreq=60"), monkeypatch)  # checkpoints at 60, 120 and the final one at 150
    flip_dataset_byte(work / "r.ckp.h5", "mc3/ranks")
    text = run_in(work, block(200, "checkfreq=60 append=yes"), monkeypatch)
    assert re.search(r"Note: checkpoint 'r\.ckp\.h5' is damaged: .*; continuing from the previous checkpoint "
                     r"'r\.ckp\.h5~' \(generation 120\)", text), text
    assert same_outputs(tmp_path / "ref", work) == []


def test_both_damaged_names_both(finished, tmp_path, monkeypatch):
    work = copy_of(finished, tmp_path)
    shutil.copy(work / "r.ckp.h5", work / "r.ckp.h5~")
    flip_dataset_byte(work / "r.ckp.h5", "mc3/ranks")
    (work / "r.ckp.h5~").write_bytes(b"")
    before = hashes(work)
    with pytest.raises(CheckpointCorrupt, match=r"fails its checksum.*; the previous checkpoint is unusable too: "):
        run_in(work, block(200, "append=yes"), monkeypatch)
    assert hashes(work) == before
