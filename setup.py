"""Packaging: installs engine/ as `mbgpu`, cuda/ as `mbgpu.cuda` and mpi/ as `mbgpu.mpi`.

Metadata lives in setup.cfg; only the package list and directory mapping are computed here, so new
subpackages are picked up without editing a list. Nothing else is installed at top level.
"""
from setuptools import find_packages, setup


def _packages():
    pkgs = ["mbgpu"] + ["mbgpu." + p for p in find_packages("engine")]
    for folder in ("cuda", "mpi"):
        pkgs.append("mbgpu." + folder)
        pkgs += ["mbgpu.%s.%s" % (folder, p) for p in find_packages(folder)]
    return pkgs


setup(
    packages=_packages(),
    package_dir={"mbgpu": "engine", "mbgpu.cuda": "cuda", "mbgpu.mpi": "mpi"},
)
