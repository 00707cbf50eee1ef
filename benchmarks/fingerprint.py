"""Fixed-seed fingerprint of the sampler's results, to show that a host-side change computes the same:
run it on the old and the new tree and compare the folders (`cmp` each file; the .ckp.h5 files differ
in HDF5 metadata only and are not compared).

It writes (1) the .p/.t/.mcmc files of a primates GTR+I+G run on the numpy backend with MrBayes' default
moves (seed 7, 600 generations, 2 runs x 4 chains) and (2) for the DNA and protein sets of
benchmarks/host_overhead.py (null device, 300 generations) their .p/.t files and one sha256 over every
flush blob packed for the GPU and every ParsSPR tree program with its weights (`digest`). ParsSPR's costs
on the null device are a fixed function of the candidate index, so the choice follows the program.

    PYTHONPATH=$(python3 benchmarks/source_tree.py OLD) python3 OLD/benchmarks/fingerprint.py /tmp/fp-old
    # (an old tree needs this file copied in)
    python3 benchmarks/fingerprint.py /tmp/fp-new
    for f in /tmp/fp-old/*; do case $f in *.h5) ;; *) cmp $f /tmp/fp-new/${f##*/};; esac; done
"""
from __future__ import annotations

import contextlib
import glob
import hashlib
import io
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

import host_overhead as ho  # noqa: E402
from mbgpu.cuda import batch as cuda_batch  # noqa: E402
from mbgpu.cuda import parsimony as cuda_parsimony  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PRIMATES_BLOCK = ("begin mrbayes;\n set autoclose=yes nowarn=yes seed=7 swapseed=9;\n lset nst=6 rates=invgamma;\n"
                  " mcmc ngen=600 nchains=4 nruns=2 samplefreq=10 printfreq=100 diagnfreq=200 filename=prim;\nend;\n")


def hashing_null_device(digest) -> None:
    """The harness' null device, hashing every packed flush and every ParsSPR program."""
    def batch_launch(self, matrix_groups, ops, counts, scale_jobs, root_calls, tag=""):
        packed = cuda_batch.pack_flush(matrix_groups, ops, scale_jobs, root_calls, self.spec.n_states,
                                       self.spec.n_categories)
        digest.update(packed.blob.tobytes())
        digest.update(repr((packed.sizes, list(counts))).encode())
        return len(root_calls)

    def missed_weights(self, planes, adj, anchor, s, xs, ys, w, n_tips, rooted=None):
        prog = cuda_parsimony.tree_program(adj, anchor, s, n_tips, xs, ys, rooted)
        digest.update(prog.tobytes())
        digest.update(np.asarray(w, dtype=np.int64).tobytes())
        return (np.arange(len(xs)) * 7 % 11).astype(np.float64)

    ho.NullBackend.batch_launch = batch_launch
    ho.NullParsimony.missed_weights = missed_weights
    ho.install_null_device()


def primates_run(out_dir: str) -> None:
    from mbgpu.cli import main

    folder = tempfile.mkdtemp(prefix="fingerprint_")
    with open(os.path.join(ROOT, "configs", "examples", "primates.nex"), encoding="ascii") as f:
        data = f.read().split("begin mrbayes;")[0]
    with open(os.path.join(folder, "d.nex"), "w", encoding="ascii") as f:
        f.write(data + PRIMATES_BLOCK)
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            main(["d.nex"])
    finally:
        os.chdir(cwd)
    for path in glob.glob(os.path.join(folder, "prim*")):
        shutil.copy(path, out_dir)


def main(argv=None) -> int:
    out_dir = (argv or sys.argv[1:] or ["fingerprint"])[0]
    os.makedirs(out_dir, exist_ok=True)
    primates_run(out_dir)                 # before the null device is installed: the real numpy backend
    digest = hashlib.sha256()
    hashing_null_device(digest)
    for case in ("dna", "protein"):
        folder = tempfile.mkdtemp(prefix="fingerprint_")
        ho.run_case(case, 300, folder, False, True)
        for path in glob.glob(os.path.join(folder, case + "*")):
            if not path.endswith(".nex"):
                shutil.copy(path, out_dir)
    with open(os.path.join(out_dir, "digest"), "w", encoding="ascii") as f:
        f.write(digest.hexdigest() + "\n")
    print("fingerprint in %s: digest %s" % (out_dir, digest.hexdigest()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
