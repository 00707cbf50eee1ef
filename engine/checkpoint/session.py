"""What the `mcmc` command does about checkpoints, in the order it needs it:

1. `CheckpointSession.begin` (before the seeds are chosen): with append=yes, read and verify the
   checkpoint (falling back to NAME.ckp.h5~ with a note when NAME.ckp.h5 is missing or damaged) and
   adopt its seeds;
2. `check_inputs` (after the data are compressed): data/settings fingerprints, ngen, output files;
3. `restore_chains` (after the chains are built): state and likelihood caches, lnL checked;
4. `prepare_outputs` (just before the files are opened): truncate every output to its offset;
5. `attach` (after MC3 is built): restore the rest and hook the per-generation checkpoints;
6. `signals()` around the run, `finish` after it, `raise_if_stopped` after the summary.
Nothing is written or truncated before step 4, and steps 1-3 raise on every problem.
"""
from __future__ import annotations

import json
import os
import time

import numpy as np

from mbgpu.checkpoint import h5io, validate
from mbgpu.checkpoint.errors import CheckpointCorrupt, CheckpointMissing
from mbgpu.checkpoint.schema import PREVIOUS, checkpoint_path
from mbgpu.checkpoint.signals import RunStopped, StopFlag, stop_on_signals
from mbgpu.checkpoint.state import capture, restore, restore_chains
from mbgpu.version import __version__

IND = "   "


def load(path: str) -> dict:
    """A verified, complete checkpoint payload (CheckpointMissing / CheckpointCorrupt otherwise)."""
    if not os.path.exists(path):
        raise CheckpointMissing("no checkpoint '%s' to continue from: append=yes needs the files of an earlier "
                                "run with checkpoint=yes and the same filename" % path)
    payload = h5io.read_file(path)
    validate.require(payload, path)
    return payload


def load_for_resume(path: str, console) -> tuple[dict, str]:
    """(payload, file it came from): NAME.ckp.h5, else a valid NAME.ckp.h5~ (with a printed note)."""
    try:
        return load(path), path
    except (CheckpointMissing, CheckpointCorrupt) as exc:
        first = exc
    prev = path + PREVIOUS
    if not os.path.exists(prev):
        raise first
    try:
        payload = load(prev)
    except CheckpointCorrupt as exc:
        raise CheckpointCorrupt("%s; the previous checkpoint is unusable too: %s"
                                % (first.message, exc.message)) from None
    gen = int(payload["mc3/generation"][0])
    console.print("%sNote: %s; continuing from the previous checkpoint '%s' (generation %d)"
                  % (IND, first.message, prev, gen))
    return payload, prev


class CheckpointSession:
    """Checkpoint writing and resuming for one `mcmc` command (see the module docstring for the order)."""

    def __init__(self, settings, stem: str, console):
        m = settings.mcmc
        self.stem, self.console, self.path = stem, console, checkpoint_path(stem)
        self.enabled = m.get("Checkpoint", "Yes") == "Yes"
        self.freq = int(m.get("Checkfreq", 2000))
        self.appending = m.get("Append", "No") == "Yes"
        self.payload: dict | None = None
        self.source = self.path
        self.plan: list[tuple[str, int]] = []
        self.stop = StopFlag()
        self.last_written: int | None = None
        self.announced = False
        self.mc3 = self.sink = None
        self.fprints: dict = {}
        self.gather = None  # MPI: callable(mc3) -> {(run, chain): capture_chain dict} of every chain (rank 0)
        self.elapsed_before, self.t0 = 0.0, time.time()
        self.seeds, self.ngen, self.outputs = (0, 0), 0, []  # set by check_inputs

    @classmethod
    def begin(cls, settings, stem: str, console) -> "CheckpointSession":
        self = cls(settings, stem, console)
        if self.appending:
            self.payload, self.source = load_for_resume(self.path, console)
            validate.check_seeds(self.payload, settings.options, self.source)
        return self

    @property
    def resuming(self) -> bool:
        return self.payload is not None

    def check_inputs(self, settings, sets, opts, ss=None) -> None:
        """`ss`: an ss run's SsPlan (its schedule is fingerprinted and its .ss file is an output)."""
        from mbgpu.sampler.sink import output_paths
        from mbgpu.tree_groups import tree_groups

        self.fprints = validate.fingerprints(settings, sets, ss)
        self.seeds = (int(settings.options["Seed"]), int(settings.options["Swapseed"]))
        self.ngen, self.outputs = opts.ngen, output_paths(self.stem, opts.nruns, tree_groups(settings))
        if ss is not None:
            self.outputs.append(self.stem + ".ss")
        if self.payload is None:
            return
        validate.check_fingerprints(self.payload, self.fprints, self.source)
        gen = validate.check_generation(self.payload, opts.ngen, self.source)
        self.plan = validate.output_plan(self.payload, self.source, self.outputs)
        self.console.print("%sContinuing from checkpoint '%s' at generation %d" % (IND, self.source, gen))

    def restore_chains(self, runs) -> None:
        if self.payload is not None:
            restore_chains(runs, self.payload, self.source)

    def prepare_outputs(self) -> bool:
        """Truncate every output file to its checkpoint offset (remove those not yet created); True if appending."""
        if self.payload is None:
            return False
        for out, offset in self.plan:
            if offset >= 0:
                self._note_partial_line(out, offset)
                os.truncate(out, offset)
            elif os.path.exists(out):
                os.remove(out)
        return True

    def _note_partial_line(self, out: str, offset: int) -> None:
        """One line on the screen when `out` ends in a partial line (a write cut short by a full disk or a
        kill) that the truncation to the checkpoint's offset removes."""
        size = os.path.getsize(out)
        if size <= offset:
            return
        with open(out, "rb") as fh:
            fh.seek(size - 1)
            if fh.read(1) == b"\n":
                return
        self.console.print("%sNote: '%s' ended in a partial line (%d bytes after the checkpoint); it is cut back "
                           "to the checkpoint's last whole line" % (IND, out, size - offset))

    def last_generation(self) -> int | None:
        """The generation of the newest checkpoint on disk for this run (None: none written or read)."""
        if self.last_written is not None:
            return int(self.last_written)
        if self.payload is not None:
            return int(self.payload["mc3/generation"][0])
        return None

    def attach(self, mc3, sink) -> None:
        """Restore the MC3 (and an ss run's step bookkeeping: mc3.stepping is set before) and hook in."""
        self.mc3, self.sink = mc3, sink
        if self.payload is not None:
            restore(mc3, sink, self.payload, self.source, chains=False)
            if mc3.stepping is not None:
                mc3.stepping.restore(mc3, self.payload, self.source)
            self.elapsed_before = float(self.payload.get("meta/elapsed_s", np.zeros(1))[0])
        self.t0 = time.time()
        mc3.after_generation = self.after_generation

    def signals(self):
        return stop_on_signals(self.stop)

    # -- during and after the run -----------------------------------------------------------------
    def after_generation(self, mc3, gen: int) -> bool:
        """Called at the end of every generation; True stops the run (a stop signal arrived)."""
        if self.stop.signum is not None:
            self.write(mc3)
            self.announce()
            return True
        if self.enabled and gen % self.freq == 0:
            self.write(mc3)
        return False

    def finish(self, mc3) -> None:
        """The end-of-run checkpoint (MrBayes writes one too), so append=yes can extend a finished run."""
        if (self.enabled or self.stop.signum is not None) and self.last_written != mc3.gen:
            self.write(mc3)
        if self.stop.signum is not None:
            self.announce()

    def announce(self) -> None:
        if self.announced:
            return
        self.announced = True
        self.console.print("%s%s received." % (IND, self.stop.name))
        if self.last_written is None:
            self.console.print("%sNo checkpoint was written" % IND)
            return
        self.console.print("%sCheckpoint written at generation %d to %s; resume with 'mcmc append=yes ngen=%d'"
                           % (IND, self.last_written, self.path, self.ngen))

    def raise_if_stopped(self) -> None:
        """After the summary: a signal-stopped run ends the session with status 128 + signal."""
        if self.stop.signum is not None:
            self.announce()  # a signal that arrived after the last generation
            raise RunStopped(self.stop.signum)

    def write(self, mc3) -> None:
        """Flush and fsync the outputs, then write NAME.ckp.h5 atomically for generation mc3.gen."""
        sizes = self.sink.output_sizes()
        if mc3.stepping is not None:
            sizes.update(mc3.stepping.output_sizes())
        offsets = [sizes[p] for p in self.outputs]
        payload = capture(mc3, self.sink, self.gather(mc3) if self.gather is not None else None)
        if mc3.stepping is not None:
            payload.update(mc3.stepping.capture(mc3))
        if mc3.reweight is not None:
            payload.update(mc3.reweight.capture())
        payload.update(self.fprints)
        payload.update({
            "meta/mbgpu_version": __version__, "meta/seeds": np.array(self.seeds, dtype=np.int64),
            "meta/ngen": np.array([self.ngen], dtype=np.int64),
            "meta/elapsed_s": np.array([self.elapsed_before + time.time() - self.t0]),
            "sink/paths": json.dumps([os.path.basename(p) for p in self.outputs]),
            "sink/offsets": np.array(offsets, dtype=np.int64),
            "sink/tail_sha256": json.dumps([validate.tail_digest(p, o) if o >= 0 else ""
                                            for p, o in zip(self.outputs, offsets)]),
        })
        h5io.write_atomic(self.path, payload, {"generation": int(mc3.gen), "mbgpu_version": __version__,
                                               "written_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
        self.last_written = mc3.gen
