"""Choosing the likelihood backend the MrBayes way (`set usebeagle= beagledevice= beagleprecision=
beaglescaling=`), with the environment override MBGPU_BACKEND=cpu|gpu.

Default: the CUDA backend in double precision when pycuda and a CUDA device are present, otherwise
the compiled (numba) CPU backend, or the numpy reference where numba does not import; one line on
the console says which was chosen and why. `choose_backend(..., cpu="numpy")` picks the numpy
reference for the CPU (tests that compare with it). The CUDA module is imported only when chosen,
so this works on machines without pycuda (numba is a requirement of mbgpu: the sampler core is
compiled with it).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Callable, Mapping

from mbgpu.errors import CommandError
from mbgpu.likelihood.numpy_backend import NumpyBackend

SCALING = {"always": True, "dynamic": 4}     # PartitionLikelihood's `scaling`: every node / every 4th


@dataclass(frozen=True)
class BackendChoice:
    """A backend factory (InstanceSpec -> backend) with what was chosen; call it like the factory."""

    kind: str                      # "gpu" or "cpu"
    precision: str                 # "double" or "single"
    scaling: bool | int            # pass to PartitionLikelihood(scaling=...)
    reason: str
    make: Callable = field(repr=False, compare=False)
    cpu: str = "numpy"             # the CPU backend: "compiled" (numba) or "numpy"

    def __call__(self, spec):
        return self.make(spec)

    def describe(self) -> str:
        """The one line printed when the backend is chosen."""
        if self.kind == "gpu":
            return "Likelihood backend: CUDA GPU, %s precision (%s)" % (self.precision, self.reason)
        return "Likelihood backend: %s CPU, double precision (%s)" % (self.cpu, self.reason)


def _option(options: Mapping, key: str, default: str) -> str:
    value = options.get(key, default)
    return str(value if value is not None else default).strip().lower()


def _cuda_available() -> bool:
    try:
        from mbgpu.cuda.context import cuda_available
    except ImportError:
        return False
    return cuda_available()


def _gpu_factory(precision: str) -> Callable:
    from mbgpu.cuda.backend import backend_factory

    return backend_factory(precision=precision)


def decide(options: Mapping, env: Mapping, cuda_present: Callable[[], bool]) -> tuple[str, str, bool | int, str]:
    """(kind, precision, scaling, reason) from `set` options, the environment and device presence."""
    use = _option(options, "Usebeagle", "Yes")
    device = _option(options, "Beagledevice", "GPU")
    precision = "single" if _option(options, "Beagleprecision", "Double") == "single" else "double"
    scaling_name = _option(options, "Beaglescaling", "Dynamic")
    if scaling_name not in SCALING:
        raise CommandError("beaglescaling must be Always or Dynamic, not %r" % options.get("Beaglescaling"))
    scaling = SCALING[scaling_name]
    override = env.get("MBGPU_BACKEND", "").strip().lower()
    if override not in ("", "cpu", "gpu"):
        raise CommandError("MBGPU_BACKEND must be cpu or gpu, not %r" % env.get("MBGPU_BACKEND"))
    if override == "cpu":
        return "cpu", "double", scaling, "MBGPU_BACKEND=cpu"
    if override == "gpu":
        if not cuda_present():
            raise CommandError("MBGPU_BACKEND=gpu but no CUDA device with pycuda is available")
        return "gpu", precision, scaling, "MBGPU_BACKEND=gpu"
    if use == "no":
        return "cpu", "double", scaling, "usebeagle=no"
    if device == "cpu":
        return "cpu", "double", scaling, "beagledevice=cpu"
    if not cuda_present():
        return "cpu", "double", scaling, "no CUDA device or pycuda found"
    return "gpu", precision, scaling, "CUDA device found"


CPU_BACKENDS = ("auto", "compiled", "numpy")


def _cpu_factory(cpu: str) -> tuple[str, Callable]:
    """("compiled" or "numpy", factory): "auto" is the compiled backend where numba imports."""
    if cpu not in CPU_BACKENDS:
        raise ValueError("cpu backend must be one of %s, not %r" % (CPU_BACKENDS, cpu))
    if cpu == "numpy":
        return "numpy", NumpyBackend
    try:
        from mbgpu.likelihood.compiled_backend import CompiledBackend
    except ImportError:
        if cpu == "compiled":
            raise
        return "numpy", NumpyBackend
    return "compiled", CompiledBackend


def choose_backend(options: Mapping, console, env: Mapping | None = None,
                   cuda_present: Callable[[], bool] | None = None, *, cpu: str = "auto") -> BackendChoice:
    """The backend factory for a run; prints one line saying which backend was chosen.

    `cpu`: the backend used when the CPU is chosen: "auto" (compiled where numba imports, else
    numpy), "compiled" or "numpy" (the reference).
    """
    kind, precision, scaling, reason = decide(options, os.environ if env is None else env,
                                              cuda_present or _cuda_available)
    if kind == "gpu":
        cpu_name, make = "numpy", _gpu_factory(precision)
    else:
        cpu_name, make = _cpu_factory(cpu)
    choice = BackendChoice(kind, precision, scaling, reason, make, cpu_name)
    console.print(choice.describe())
    return choice
