"""Packaging shim: installs engine/ as `engine`, cuda/ as `engine.cuda` and mpi/ as `engine.mpi`.

Metadata lives in setup.cfg; only the package list and directory mapping are computed here, so new
subpackages are picked up without editing a list.
"""
from setuptools import find_packages, setup


def _packages():
    pkgs = ["engine"] + ["engine." + p for p in find_packages("engine")]
    for folder in ("cuda", "mpi"):
        pkgs.append("engine." + folder)
        pkgs += ["engine.%s.%s" % (folder, p) for p in find_packages(folder)]
    return pkgs


setup(
    packages=_packages(),
    package_dir={"engine": "engine", "engine.cuda": "cuda", "engine.mpi": "mpi"},
)
