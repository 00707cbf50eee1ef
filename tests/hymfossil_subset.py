"""Small data sets cut out of MrBayes' hymfossil.nex (Ronquist et al. 2012) at test time: chosen taxa's rows,
the morphology characters variable among them, and optionally one gene's columns, written as a NEXUS data
block MrBayes and mbgpu both read (polymorphisms kept as `{01}`). The full set needs ~10^7 generations per
run; these subsets mix in ~10^5 so posteriors can be compared with MrBayes'."""
from __future__ import annotations

import re
from pathlib import Path

N_MORPH = 353
# the genes' columns in the full matrix (hymfossil.nex's charsets, 1-based inclusive)
GENES = {"12S": (354, 556), "16S": (557, 778), "18S": (779, 1669), "28S": (1670, 2221)}


def read_rows(hymfossil: str) -> dict:
    """{taxon: its 5449 cells in order} from the interleaved matrix (morphology block first)."""
    text = Path(hymfossil).read_text(encoding="ascii")
    start = text.index("Matrix")
    rows: dict = {}
    for line in text[start:text.index(";", start)].splitlines()[1:]:
        parts = line.split()
        if parts and not parts[0].startswith("["):
            rows.setdefault(parts[0], []).extend(_cells("".join(parts[1:])))
    return rows


def subset(hymfossil: str, taxa, gene: str | None = None) -> str:
    """A NEXUS data block of `taxa`: morphology characters observed in two states or more among them (as
    standard data), then `gene`'s columns (DNA, datatype=mixed) when given."""
    rows = read_rows(hymfossil)
    cells = [rows[t] for t in taxa]
    keep = [j for j in range(N_MORPH)
            if len({c for r in cells for c in r[j] if c.isdigit() and len(r[j]) == 1}) >= 2]
    dna = range(GENES[gene][0] - 1, GENES[gene][1]) if gene else range(0)
    if gene:
        fmt = "datatype=mixed(standard:1-%d,dna:%d-%d) gap=- missing=?" % (len(keep), len(keep) + 1,
                                                                          len(keep) + len(dna))
    else:
        fmt = "datatype=standard symbols=\"0123456\" gap=- missing=?"
    out = ["#NEXUS", "begin data;", "  dimensions ntax=%d nchar=%d;" % (len(taxa), len(keep) + len(dna)),
           "  format %s;" % fmt, "  matrix"]
    out += ["    %-16s %s%s" % (t, "".join(_write(r[j]) for j in keep), "".join(r[j] for j in dna))
            for t, r in zip(taxa, cells)]
    return "\n".join(out + ["  ;", "end;", ""])


def n_morphology(text: str) -> int:
    """The number of morphology characters of a subset written by `subset` with a gene."""
    return int(re.search(r"standard:1-(\d+)", text).group(1))


def _cells(s: str) -> list[str]:
    """One row's characters: single symbols, and {0,1} / (1,2) sets as their digits."""
    return [m.group(0) if len(m.group(0)) == 1 else re.sub(r"\D", "", m.group(0))
            for m in re.finditer(r"\{[^}]*\}|\([^)]*\)|\S", s)]


def _write(cell: str) -> str:
    return cell if len(cell) == 1 else "{" + cell + "}"
