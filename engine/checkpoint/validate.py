"""Checks a checkpoint against the analysis about to continue from it, before any file is touched:
required datasets, data and settings fingerprints, seeds, ngen, and the output files' recorded prefix.
"""
from __future__ import annotations

import hashlib
import json
import os

from mbgpu.checkpoint import schema
from mbgpu.checkpoint.errors import CheckpointCorrupt, CheckpointMismatch, OutputMismatch

REQUIRED = ("meta/mbgpu_version", "meta/data_sha256", "meta/model_sha256", "meta/run_sha256",
            "meta/settings_json", "meta/seeds", "mc3/generation", "mc3/ranks", "mc3/swap_tried",
            "mc3/swap_accepted", "mc3/swap_rng", "sink/paths", "sink/offsets", "sink/tail_sha256",
            "sink/last_stat", "splits/keys", "splits/sample_sizes", "splits/ids")
TAIL = 4096  # bytes before each recorded offset whose sha256 is stored


def require(payload: dict, path: str) -> None:
    missing = [k for k in REQUIRED if k not in payload]
    if missing:
        raise CheckpointCorrupt("checkpoint '%s' is incomplete: dataset '%s' is missing" % (path, missing[0]))


def fingerprints(settings, sets, ss=None) -> dict:
    """The current analysis' fingerprints, as stored under meta/ by the writer (`ss`: an ss run's SsPlan)."""
    model, run = schema.model_settings(settings), schema.run_settings(settings, ss)
    return {"meta/data_sha256": schema.data_digest(settings, sets), "meta/model_sha256": schema.digest_json(model),
            "meta/run_sha256": schema.digest_json(run),
            "meta/settings_json": json.dumps({"model": model, "run": run}, sort_keys=True)}


def check_fingerprints(payload: dict, current: dict, path: str) -> None:
    """Other data, another model or other run settings: a CheckpointMismatch naming what differs."""
    if payload["meta/data_sha256"] != current["meta/data_sha256"]:
        raise CheckpointMismatch("checkpoint '%s' was written for other data (the taxa or compressed site patterns "
                                 "differ: sha256 %s..., now %s...)" % (path, payload["meta/data_sha256"][:12],
                                                                       current["meta/data_sha256"][:12]))
    old, new = json.loads(payload["meta/settings_json"]), json.loads(current["meta/settings_json"])
    for part, what in (("model", "another model"), ("run", "other mcmc settings")):
        key = "meta/%s_sha256" % part
        if payload[key] != current[key]:
            diff = schema.first_difference(old.get(part), new.get(part)) or "settings differ"
            raise CheckpointMismatch("checkpoint '%s' was written for %s (%s)" % (path, what, diff))


def check_seeds(payload: dict, options: dict, path: str) -> None:
    """Adopt the checkpoint's seeds where none is set; an explicit different seed is an error."""
    seeds = [int(x) for x in payload["meta/seeds"]]
    for name, value in zip(("Seed", "Swapseed"), seeds):
        mine = options.get(name)
        if mine is None:
            options[name] = value
        elif int(mine) != value:
            raise CheckpointMismatch("checkpoint '%s' was written with %s=%d, not %s=%d"
                                     % (path, name.lower(), value, name.lower(), int(mine)))


def check_generation(payload: dict, ngen: int, path: str) -> int:
    gen = int(payload["mc3/generation"][0])
    if ngen < gen:
        raise CheckpointMismatch("checkpoint '%s' is at generation %d, beyond ngen=%d: ask for ngen >= %d"
                                 % (path, gen, ngen, gen))
    return gen


def output_plan(payload: dict, path: str, expected: list[str]) -> list[tuple[str, int]]:
    """[(output path, offset)] after checking every file still holds what the checkpoint saw (-1: absent)."""
    folder = os.path.dirname(path)
    names = json.loads(payload["sink/paths"])
    tails = json.loads(payload["sink/tail_sha256"])
    offsets = [int(x) for x in payload["sink/offsets"]]
    if [os.path.basename(p) for p in expected] != names:
        raise CheckpointMismatch("checkpoint '%s' was written for the output files %s, not %s"
                                 % (path, ", ".join(names), ", ".join(os.path.basename(p) for p in expected)))
    plan = []
    for name, offset, tail in zip(names, offsets, tails):
        out = os.path.join(folder, name)
        if offset >= 0:
            check_output(out, offset, tail, path)
        plan.append((out, offset))
    return plan


def check_output(out: str, offset: int, tail: str, path: str) -> None:
    if not os.path.isfile(out):
        raise OutputMismatch("output file '%s' recorded in checkpoint '%s' is missing" % (out, path))
    size = os.path.getsize(out)
    if size < offset:
        raise OutputMismatch("output file '%s' has %d bytes, fewer than the %d recorded in checkpoint '%s'"
                             % (out, size, offset, path))
    if tail_digest(out, offset) != tail:
        raise OutputMismatch("output file '%s' was changed since checkpoint '%s' was written (its first %d bytes "
                             "differ)" % (out, path, offset))


def tail_digest(out: str, offset: int) -> str:
    """sha256 of the TAIL bytes before `offset` (cheap, and catches a file from another run)."""
    start = max(0, offset - TAIL)
    with open(out, "rb") as fh:
        fh.seek(start)
        return hashlib.sha256(fh.read(offset - start)).hexdigest()
