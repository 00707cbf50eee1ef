"""MrBayes 3.2.7a oracle log likelihoods (../shared/data/oracles), independent of mbgpu's NEXUS reader.

Data matrices are read with dendropy (a few lines of our own for the mixed-datatype file), trees with
Tree.from_newick, and each case's model is hand-coded from its mrbayes block in CASES below.
"""
from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest

from mbgpu.likelihood import PartitionLikelihood, total_log_likelihood
from mbgpu.models import ModelSpec, build_model
from mbgpu.tree import Tree

dendropy = pytest.importorskip("dendropy")

DNA = "ACGT"
AA = "ARNDCQEGHILKMFPSTWYV"
GTR = dict(nst=6, revmat=(0.04, 0.47, 0.035, 0.035, 0.39, 0.03), statefreqs=(0.36, 0.32, 0.08, 0.24))
F = dict(statefreqs=(0.36, 0.32, 0.08, 0.24))


def dna(**kw):
    return ModelSpec(datatype="dna", **kw)


def aa(name, **kw):
    return ModelSpec(datatype="protein", aamodel=name, **kw)


def std(**kw):
    return ModelSpec(datatype="standard", **kw)


# name -> list of (datatype, columns (slice over the 0-based character axis), spec, rate multiplier)
ALL = slice(None)
CASES = {
    "primates_jc": [("dna", ALL, dna(nst=1), 1.0)],
    "primates_f81": [("dna", ALL, dna(nst=1, **F), 1.0)],
    "primates_k80": [("dna", ALL, dna(nst=2, kappa=4.0), 1.0)],
    "primates_hky": [("dna", ALL, dna(nst=2, kappa=4.0, **F), 1.0)],
    "primates_hky_g4": [("dna", ALL, dna(nst=2, kappa=4.0, rates="gamma", alpha=0.5, **F), 1.0)],
    "primates_gtr": [("dna", ALL, dna(**GTR), 1.0)],
    "primates_gtr_i": [("dna", ALL, dna(rates="propinv", pinvar=0.12, **GTR), 1.0)],
    "primates_gtr_g4": [("dna", ALL, dna(rates="gamma", alpha=0.5, **GTR), 1.0)],
    "primates_gtr_g8": [("dna", ALL, dna(rates="gamma", alpha=0.5, ngammacat=8, **GTR), 1.0)],
    "primates_gtr_i_g4": [("dna", ALL, dna(rates="invgamma", alpha=0.5, pinvar=0.12, **GTR), 1.0)],
    "primates_ambig_jc": [("dna", ALL, dna(nst=1), 1.0)],
    "primates_ambig_gtr_g4": [("dna", ALL, dna(rates="gamma", alpha=0.5, **GTR), 1.0)],
    "primates_ambig_gtr_i_g4": [("dna", ALL, dna(rates="invgamma", alpha=0.5, pinvar=0.12, **GTR), 1.0)],
    "sceloporus_hky_g4": [("dna", ALL, dna(nst=2, kappa=5.0, statefreqs=(0.3, 0.25, 0.15, 0.3),
                                           rates="gamma", alpha=0.4), 1.0)],
    "primates_codonpart": [
        ("dna", slice(0, None, 3), dna(nst=2, kappa=4.0, statefreqs=(0.3, 0.3, 0.2, 0.2),
                                       rates="gamma", alpha=0.3), 0.5),
        ("dna", slice(1, None, 3), dna(nst=1), 0.3),
        ("dna", slice(2, None, 3), dna(rates="invgamma", alpha=1.5, pinvar=0.05, **GTR), 2.2)],
    "cynmix_morph_mk": [("standard", ALL, std(), 1.0)],
    "cynmix_morph_mkv": [("standard", ALL, std(coding="variable"), 1.0)],
    "cynmix_morph_mkv_g4": [("standard", ALL, std(coding="variable", rates="gamma", alpha=0.8), 1.0)],
    "cynmix_mixed": [
        ("standard", slice(0, 166), std(coding="variable", rates="gamma", alpha=0.8), 1.5),
        ("dna", slice(166, None), dna(rates="invgamma", alpha=0.5, pinvar=0.2,
                                      **{**GTR, "statefreqs": (0.36, 0.32, 0.08, 0.24)}), 0.9)],
}
for _name in ("poisson", "jones", "dayhoff", "mtrev", "mtmam", "wag", "rtrev", "cprev", "vt", "blosum", "lg"):
    CASES["avian_" + _name] = [("protein", ALL, aa(_name), 1.0)]
CASES["avian_poisson_g4"] = [("protein", ALL, aa("poisson", rates="gamma", alpha=0.7), 1.0)]
CASES["avian_wag_g4"] = [("protein", ALL, aa("wag", rates="gamma", alpha=0.7), 1.0)]
CASES["avian_jones_g4"] = [("protein", ALL, aa("jones", rates="gamma", alpha=0.7), 1.0)]
CASES["avian_lg_i_g4"] = [("protein", ALL, aa("lg", rates="invgamma", alpha=0.7, pinvar=0.1), 1.0)]
CASES["avian_wag_i"] = [("protein", ALL, aa("wag", rates="propinv", pinvar=0.1), 1.0)]
CASES["avian_poisson_i"] = [("protein", ALL, aa("poisson", rates="propinv", pinvar=0.1), 1.0)]


# ---------------------------------------------------------------------------- reading the files
def read_cells(path) -> tuple[list[str], list[list[frozenset[str]]]]:
    """Taxon labels (with underscores) and, per taxon, the set of symbols each cell allows."""
    if "mixed" in path.read_text()[:2000].lower():
        return read_mixed_cells(path)
    ds = dendropy.DataSet.get(path=str(path), schema="nexus")
    matrix = ds.char_matrices[0]
    names, rows = [], []
    for taxon in matrix.taxon_namespace:
        names.append(taxon.label.replace(" ", "_"))
        rows.append([frozenset(s.symbol for s in cell.fundamental_states) for cell in matrix[taxon]])
    return names, rows


def read_mixed_cells(path) -> tuple[list[str], list[list[frozenset[str]]]]:
    """The interleaved mixed-datatype matrix of cynmix_mixed.nex (dendropy cannot read it)."""
    text = path.read_text()
    body = re.search(r"matrix(.*?);", text, re.S | re.I).group(1)
    seqs: dict[str, str] = {}
    for line in body.splitlines():
        parts = line.split()
        if len(parts) == 2:
            seqs[parts[0]] = seqs.get(parts[0], "") + parts[1]
    rows = []
    for seq in seqs.values():
        cells = re.findall(r"\{[^}]*\}|\([^)]*\)|.", seq)
        rows.append([frozenset(c.strip("{}()")) for c in cells])
    return list(seqs), rows


def _vector(cell: frozenset[str], alphabet: str) -> np.ndarray:
    """1 for every allowed state; a gap, '?' or any unknown symbol allows all states."""
    expand = {"N": DNA, "X": AA if len(alphabet) == 20 else DNA, "R": "AG", "Y": "CT", "M": "AC",
              "K": "GT", "S": "CG", "W": "AT", "B": "CGT", "D": "AGT", "H": "ACT", "V": "ACG"}
    if "-" in cell or "?" in cell:
        return np.ones(len(alphabet))
    symbols = set()
    for s in cell:
        s = s.upper()
        if len(alphabet) == 4 and s in expand and s not in alphabet:
            symbols.update(expand[s])
        elif len(alphabet) == 20 and s == "B":
            symbols.update("DN")
        elif len(alphabet) == 20 and s == "Z":
            symbols.update("EQ")
        elif s in alphabet:
            symbols.add(s)
    vec = np.array([1.0 if a in symbols else 0.0 for a in alphabet])
    return vec if vec.any() else np.ones(len(alphabet))


def molecular_partials(rows, columns, alphabet) -> np.ndarray:
    return np.array([[_vector(c, alphabet) for c in row[columns]] for row in rows])


def standard_groups(rows, columns) -> dict[int, np.ndarray]:
    """Tip partials per state count k = highest observed state + 1 (min 2), as MrBayes groups them."""
    sub = [row[columns] for row in rows]
    n_char = len(sub[0])
    groups: dict[int, list[np.ndarray]] = {}
    for j in range(n_char):
        digits = [int(s) for row in sub if "-" not in row[j] for s in row[j] if s.isdigit()]
        k = max(2, max(digits, default=0) + 1)
        col = np.array([_vector(row[j], "0123456789"[:k]) for row in sub])
        groups.setdefault(k, []).append(col)
    return {k: np.stack(cols, axis=1) for k, cols in groups.items()}


def compress(tip_partials: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unique site patterns and their counts."""
    t, n, s = tip_partials.shape
    flat = tip_partials.transpose(1, 0, 2).reshape(n, t * s)
    uniq, counts = np.unique(flat, axis=0, return_counts=True)
    return uniq.reshape(-1, t, s).transpose(1, 0, 2), counts.astype(np.float64)


def read_tree(path, names) -> Tree:
    newick = re.search(r"tree\s+fixedtree\s*=\s*(.*?;)", path.read_text(), re.S | re.I).group(1)
    return Tree.from_newick(newick, {n: i for i, n in enumerate(names)})


def build_partitions(path, parts) -> tuple[list[PartitionLikelihood], Tree]:
    names, rows = read_cells(path)
    tree = read_tree(path, names)
    out = []
    for datatype, columns, spec, multiplier in parts:
        if datatype == "standard":
            for k, tp in sorted(standard_groups(rows, columns).items()):
                pats, w = compress(tp)
                model = build_model(dataclasses.replace(spec, n_states=k))
                out.append(PartitionLikelihood(pats, w, model, rate_multiplier=multiplier))
        else:
            pats, w = compress(molecular_partials(rows, columns, DNA if datatype == "dna" else AA))
            out.append(PartitionLikelihood(pats, w, build_model(spec), rate_multiplier=multiplier))
    return out, tree


@pytest.mark.parametrize("name", sorted(CASES))
def test_oracle_log_likelihood(shared_data, name):
    path = shared_data / "oracles" / (name + ".nex")
    expected = float((shared_data / "oracles" / (name + ".lnl")).read_text().split()[0])
    partitions, tree = build_partitions(path, CASES[name])
    got = total_log_likelihood(partitions, tree)
    # The issue asks for 1e-6. We assert 1e-8: observed differences are <= 1.7e-10 (rounding), which
    # exact-quantile gamma (differences up to ~5e-7 for +G) could not meet, so this also checks that
    # the discrete gamma is MrBayes' own.
    assert got == pytest.approx(expected, abs=1e-8, rel=0), (name, got, expected, got - expected)


def test_every_oracle_case_is_covered(shared_data):
    names = {p.stem for p in (shared_data / "oracles").glob("*.nex")}
    assert names - set(CASES) == {"replicase_codon_m0"}, "codon models are not part of this issue"
