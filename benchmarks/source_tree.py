"""Import a source tree's own code without installing it: a folder holding `mbgpu/` made of links to the
tree's engine/ entries plus `cuda` and `mpi`, the layout `pip install` gives. For A/B runs between two
checkouts (host_ab.py, fingerprint.py): PYTHONPATH=$(python3 benchmarks/source_tree.py TREE).

A tree older than the `mbgpu` package (it imported `engine`) gets `engine/` linked as it is, too.
"""
from __future__ import annotations

import os
import sys
import tempfile


def import_path(tree: str) -> str:
    """A new folder to put first on PYTHONPATH so that `import mbgpu` is `tree`'s code."""
    tree = os.path.abspath(tree)
    out = tempfile.mkdtemp(prefix="mbgpu-src-")
    pkg = os.path.join(out, "mbgpu")
    os.mkdir(pkg)
    engine = os.path.join(tree, "engine")
    for name in os.listdir(engine):
        os.symlink(os.path.join(engine, name), os.path.join(pkg, name))
    for sub in ("cuda", "mpi"):
        if not os.path.exists(os.path.join(pkg, sub)):
            os.symlink(os.path.join(tree, sub), os.path.join(pkg, sub))
    os.symlink(engine, os.path.join(out, "engine"))
    return out


if __name__ == "__main__":
    print(import_path(sys.argv[1]))
