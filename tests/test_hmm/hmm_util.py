"""Helpers of the SSV tests: oracle tables, random models and sequences, pyhmmer scoring."""
import io
from pathlib import Path

import numpy as np
from mbgpu.hmm.alphabet import BACKGROUND
from mbgpu.hmm.fasta import pack
from mbgpu.hmm.hmmfile import read_hmms

MODELS = ("globins4", "fn3", "Pkinase", "SMC_N")
TABLES = ("globins4_vs_globins45", "globins4_vs_rand200k", "Pkinase_vs_rand200k",
          "fn3_vs_HG003687", "Pkinase_vs_HG003687", "SMC_N_vs_HG003687")
DB_FILES = {"globins45": "globins45.fa", "rand200k": "rand200k.fa", "HG003687": "HG003687_proteome.faa"}


def load_table(path: Path) -> list[dict]:
    """An oracle table as a list of dicts keyed by the header names."""
    lines = path.read_text().splitlines()
    head = lines[0].lstrip("#").split("\t")
    return [dict(zip(head, line.split("\t"))) for line in lines[1:]]


def random_hmm_file(tmp_path: Path, M: int, seed: int) -> Path:
    """A pyhmmer-sampled model of length M written as HMMER3 ASCII (no STATS lines)."""
    from pyhmmer.easel import Alphabet, Randomness
    from pyhmmer.plan7 import HMM

    hmm = HMM.sample(Alphabet.amino(), M, Randomness(seed))
    buf = io.BytesIO()
    hmm.write(buf)
    path = tmp_path / ("rand_M%d_s%d.hmm" % (M, seed))
    path.write_bytes(buf.getvalue())
    return path


def random_sequences(rng: np.random.Generator, n: int, lmax: int, hmm_path: Path | None = None,
                     degenerate: bool = True) -> list[np.ndarray]:
    """Background sequences, some with X/B/Z/U/O/* codes and some carrying the model's consensus."""
    seqs = []
    cons = None
    if hmm_path is not None:
        cons = read_hmms(hmm_path)[0].mat.argmax(axis=1).astype(np.uint8)
    for i in range(n):
        L = int(rng.integers(1, lmax + 1))
        s = rng.choice(20, size=L, p=BACKGROUND / BACKGROUND.sum()).astype(np.uint8)
        if degenerate and i % 3 == 0:
            pos = rng.integers(0, L, size=max(1, L // 20))
            s[pos] = rng.choice([21, 22, 23, 24, 25, 26, 27, 20], size=len(pos))
        if cons is not None and i % 4 == 1:
            a = int(rng.integers(0, len(cons)))
            b = int(rng.integers(a, len(cons))) + 1
            seg = cons[a:b][:L]
            at = int(rng.integers(0, L - len(seg) + 1))
            s[at:at + len(seg)] = seg
        seqs.append(s)
    return seqs


def to_pyhmmer(seqs: list[np.ndarray]):
    """pyhmmer DigitalSequence objects for our digital codes."""
    from pyhmmer.easel import Alphabet, DigitalSequence

    abc = Alphabet.amino()
    return [DigitalSequence(abc, name=b"s%d" % i, sequence=s) for i, s in enumerate(seqs)]


def pyhmmer_scores(hmm_path: Path, seqs: list[np.ndarray]):
    """(ssv, msv, om) from pyhmmer with the length model reset per sequence; None ssv -> nan."""
    from pyhmmer.easel import Alphabet
    from pyhmmer.plan7 import Background, HMMFile, Profile

    abc = Alphabet.amino()
    with HMMFile(str(hmm_path)) as fh:
        hmm = next(iter(fh))
    bg = Background(abc)
    gm = Profile(hmm.M, abc)
    gm.configure(hmm, bg, L=400)
    om = gm.to_optimized()
    ssv, msv = [], []
    for ds in to_pyhmmer(seqs):
        om.L = len(ds)
        r = om.ssv_filter(ds)
        ssv.append(np.nan if r is None else r)
        msv.append(om.msv_filter(ds))
    return np.array(ssv, dtype=np.float32), np.array(msv, dtype=np.float32), om


def packed(seqs):
    return pack(seqs, ["s%d" % i for i in range(len(seqs))])
