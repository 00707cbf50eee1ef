"""Checkpoints of an MCMC analysis: HDF5 files written atomically every `checkfreq` generations, at the
end of a run and on SIGTERM/SIGINT/SIGUSR1, and exact continuation with `mcmc append=yes`.

- state.py: `capture(mc3, sink)` / `restore(mc3, sink, state)`, the whole sampler as {path: array};
- chain_state.py: one chain (tree, values, scores, random stream, moves), caches rebuilt on restore;
- h5io.py: the HDF5 file (fletcher32 per dataset, sha256 of the payload, atomic rename, NAME.ckp.h5~);
- schema.py / validate.py: fingerprints of data and settings, checks before any file is touched;
- session.py: what `mcmc` calls; signals.py: the stop handlers.
See docs/checkpoints.md.
"""
