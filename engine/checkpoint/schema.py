"""What a checkpoint is tied to: the schema version, file names, and the fingerprints of the data and
of the settings that must not change between a run and its continuation (`mcmc append=yes`).

Settings are reduced to canonical JSON (floats by repr, so exact) and hashed; the JSON itself is stored
too, so a mismatch can name the setting that differs instead of only saying "different".
"""
from __future__ import annotations

import dataclasses
import hashlib
import json

import numpy as np

FORMAT = "mbgpu-checkpoint"
SCHEMA_VERSION = 1
SUFFIX = ".ckp.h5"
PREVIOUS = "~"     # NAME.ckp.h5~ holds the checkpoint before the current one
TEMPORARY = ".tmp"  # NAME.ckp.h5.tmp while a checkpoint is being written

# mcmc settings a continuation may change: they do not alter the samples already drawn or to come.
MAY_CHANGE = frozenset({"Ngen", "Checkpoint", "Checkfreq", "Append", "Printfreq", "Printall", "Printmax",
                        "Starttree", "Startparams", "Nperts", "Filename", "Seed", "Swapseed"})
# `set` options that change the bytes of the output files.
OUTPUT_OPTIONS = ("Scientific", "Precision")


def checkpoint_path(stem: str) -> str:
    return stem + SUFFIX


def canonical(value):
    """A JSON-able, exact and order-independent form of a settings value."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {"@": type(value).__name__,
                **{f.name: canonical(getattr(value, f.name)) for f in dataclasses.fields(value)}}
    if isinstance(value, dict):
        return {str(k): canonical(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (list, tuple)):
        return [canonical(v) for v in value]
    if isinstance(value, np.ndarray):
        return [canonical(v) for v in value.tolist()]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return repr(float(value))
    if isinstance(value, (set, frozenset)):
        return sorted(canonical(v) for v in value)
    return value if value is None or isinstance(value, str) else str(value)


def model_settings(settings) -> dict:
    """Everything that defines the model and priors of every division (lset, prset, unlink, outgroup; a
    clock analysis' clock models and constraints too: `clock_settings`)."""
    out = {"division": [{"datatype": d.datatype, "lset": canonical(d.lset), "prset": canonical(d.prset)}
                         for d in settings.divisions],
           "unlinked": canonical(settings.unlinked), "outgroup": int(settings.outgroup),
           "partition": settings.partition}
    clock = clock_settings(settings)
    if clock is not None:       # absent otherwise, so other analyses keep their fingerprints
        out["clock"] = clock
    return out


def clock_settings(settings) -> dict | None:
    """A clock analysis' ClockModels (with the `calibrate` ages, which no prset holds) and the taxa of the
    constraints its topology prior names (they fix the clock tree's calibrated and locked nodes); None
    without a clock tree."""
    from mbgpu import constraints
    from mbgpu.clock.model import clock_models

    models = clock_models(settings)
    if all(m is None for m in models):
        return None
    names = {str(a) for d in settings.divisions for pr in [d.prset.get("Topologypr")]
             if pr is not None and pr.kind == "Constraints" for a in pr.args}
    return {"models": [_plain(canonical(m)) for m in models],
            "constraints": {c.name: _plain(canonical(c)) for c in constraints.named(settings, sorted(names))}}


def _plain(value):
    """A canonical tree without its type tags ('@'), so `first_difference` names the field that differs."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if k != "@"}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def run_settings(settings, ss=None) -> dict:
    """The mcmc settings and output options a continuation must keep; for `ss` (its SsPlan) also the
    step schedule, so an ss checkpoint continues only as the same ss run (and never as an mcmc)."""
    mcmc = {k: canonical(v) for k, v in sorted(settings.mcmc.items()) if k not in MAY_CHANGE}
    out = {"mcmc": mcmc, "set": {k: canonical(settings.options.get(k)) for k in OUTPUT_OPTIONS}}
    if ss is not None:
        out["ss"] = {f.name: canonical(getattr(ss, f.name)) for f in dataclasses.fields(ss) if f.name != "requested"}
    return out


def digest_json(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def data_digest(settings, sets) -> str:
    """sha256 of the taxa and every division's compressed patterns (state masks, weights, columns)."""
    h = hashlib.sha256()
    h.update(json.dumps(list(settings.matrix.taxa)).encode())
    for d, group in enumerate(sets):
        for ps in group:
            h.update(("|%d|%s|%d|" % (d, ps.datatype, ps.n_states)).encode())
            if ps.ordered:
                h.update(b"ordered|")
            for arr, dtype in ((ps.masks, "<u4"), (ps.weights, "<f8"), (ps.columns, "<i8")):
                a = np.ascontiguousarray(arr, dtype=dtype)
                h.update(repr(a.shape).encode())
                h.update(a.tobytes())
    return h.hexdigest()


def first_difference(old, new, path: str = "") -> str | None:
    """A readable path to the first place two canonical settings trees differ, with both values."""
    if isinstance(old, dict) and isinstance(new, dict) and "@" not in old and "@" not in new:
        for k in sorted(set(old) & set(new)):     # shared keys first: a changed prset says more than a
            got = first_difference(old[k], new[k], "%s%s " % (path, k))   # section that came or went
            if got:
                return got
        for k in sorted(set(old) ^ set(new)):
            return "%s%s: %s in the checkpoint, %s now" % (path, k, _show(old.get(k)), _show(new.get(k)))
        return None
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for i, (a, b) in enumerate(zip(old, new)):
            got = first_difference(a, b, "%s%d " % (path, i + 1))
            if got:
                return got
        return None
    if old != new:
        return "%s: %s in the checkpoint, %s now" % (path.strip(), _show(old), _show(new))
    return None


def _show(v) -> str:
    if isinstance(v, dict) and "@" in v:      # a PriorValue as prset echoes it: Clock:Birthdeath, Exponential(10.0)
        args = v.get("args", [])
        text = "%s(%s)" % (v.get("kind", v["@"]), ",".join(str(_show(a)) for a in args)) if args else \
            str(v.get("kind", v["@"]))
        return text + (":" + _show(v["sub"]) if v.get("sub") is not None else "")
    if isinstance(v, list):
        return "(%s)" % ",".join(_show(x) for x in v)
    return "absent" if v is None else str(v)
