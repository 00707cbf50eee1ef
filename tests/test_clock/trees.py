"""The start trees of docs/plans/clocks.md §0 (primates, 12 taxa, branch lengths in substitution units)
as the arrays of mbgpu.clock.rooted, and small builders of the prior functions' arguments."""
from __future__ import annotations

import re

import numpy as np

from mbgpu.clock.distributions import age_distribution
from mbgpu.clock.rooted import depths_of
from mbgpu.tree import Tree

from tests.conftest import TEST_DATA

DATA = TEST_DATA / "primates.nex"
TAXA = ["Tarsius_syrichta", "Lemur_catta", "Homo_sapiens", "Pan", "Gorilla", "Pongo", "Hylobates",
        "Macaca_fuscata", "M_mulatta", "M_fascicularis", "M_sylvanus", "Saimiri_sciureus"]
APES = ["Homo_sapiens", "Pan", "Gorilla", "Pongo", "Hylobates"]

T1 = ("((((((((Homo_sapiens:0.05,Pan:0.05):0.02,Gorilla:0.07):0.05,Pongo:0.12):0.06,Hylobates:0.18):0.04,"
      "(((Macaca_fuscata:0.03,M_mulatta:0.03):0.03,M_fascicularis:0.06):0.04,M_sylvanus:0.1):0.12):0.18,"
      "Saimiri_sciureus:0.4):0.15,Lemur_catta:0.55):0.1,Tarsius_syrichta:0.65);")
T2 = ("(((((Homo_sapiens:0.1,Gorilla:0.1):0.1,(Pan:0.15,Pongo:0.15):0.05):0.15,((Hylobates:0.12,"
      "Macaca_fuscata:0.12):0.13,(M_mulatta:0.11,(M_fascicularis:0.05,M_sylvanus:0.05):0.06):0.14):0.1):0.15,"
      "(Saimiri_sciureus:0.3,Lemur_catta:0.3):0.2):0.3,Tarsius_syrichta:0.8);")
T4 = T1.replace("Lemur_catta:0.55", "Lemur_catta:0.5").replace("Tarsius_syrichta:0.65", "Tarsius_syrichta:0.55")
T5 = T2.replace("Lemur_catta:0.3", "Lemur_catta:0.25").replace("Tarsius_syrichta:0.8", "Tarsius_syrichta:0.6")


def doubled(newick: str) -> str:
    """T3: every branch length of the tree doubled."""
    return re.sub(r":([0-9.]+)", lambda m: ":%r" % (2 * float(m.group(1))), newick)


T3 = doubled(T1)
TREES = {"T1": T1, "T2": T2, "T3": T3, "T4": T4, "T5": T5}


def arrays(newick: str, dated_tips=(0, 1)):
    """(parent, depth, n_tips) of a rooted newick tree over TAXA (tips 0..11 in data order); tips
    `dated_tips` (Tarsius, Lemur: the tip-dated cases) keep their depths, other tips are at 0."""
    tree = Tree.from_newick(newick, {name: i for i, name in enumerate(TAXA)})
    return tree.parent, depths_of(tree, dated_tips), tree.n_tips


def mrca(parent: np.ndarray, names) -> int:
    """The most recent common ancestor node of the named tips."""
    paths = []
    for name in names:
        v, path = TAXA.index(name), []
        while v >= 0:
            path.append(v)
            v = parent[v]
        paths.append(path)
    common = set(paths[0]).intersection(*paths[1:])
    return next(v for v in paths[0] if v in common)


def age_prior(family: str, *params):
    """(kind, params[3]) of a treeagepr / calibration distribution, the tree priors' age arguments."""
    dist = age_distribution(family, params)
    return dist.kind, np.array(dist.params + (0.0,) * (3 - len(dist.params)))


def flags(n_nodes: int, nodes=()) -> np.ndarray:
    """A boolean node mask, True at `nodes`."""
    out = np.zeros(n_nodes, dtype=bool)
    out[list(nodes)] = True
    return out
