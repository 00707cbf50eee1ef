"""Choosing the likelihood backend the MrBayes way (`set usebeagle= beagledevice= beagleprecision=
beaglescaling=`), with mbgpu's own `set backend=auto|cpu|gpu` (or `mbgpu --backend=`) overriding them.

Default: the CUDA backend in double precision when pycuda and a CUDA device are present, otherwise
the compiled (numba) CPU backend, or the numpy reference where numba does not import; one line on
the console says which was chosen and why. `choose_backend(..., cpu="numpy")` picks the numpy
reference for the CPU (tests that compare with it). `beagleprecision=single` holds on the CPU too: the
compiled core keeps float32 partials and matrices (sums and logarithms stay float64), as BEAGLE's CPU
plugin does in single precision. The CUDA module is imported only when chosen,
so this works on machines without pycuda (numba is a requirement of mbgpu: the sampler core is
compiled with it).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping

import numpy as np

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
        backend = self.make(spec)
        if self.kind == "cpu":      # the compiled core's copy of the buffers (the host backend stays double)
            backend.core_dtype = np.float32 if self.precision == "single" else np.float64
        return backend

    def describe(self) -> str:
        """The one line printed when the backend is chosen."""
        if self.kind == "gpu":
            return "Likelihood backend: CUDA GPU, %s precision (%s)" % (self.precision, self.reason)
        return "Likelihood backend: %s CPU, %s precision (%s)" % (self.cpu, self.precision, self.reason)


def _option(options: Mapping, key: str, default: str) -> str:
    value = options.get(key, default)
    return str(value if value is not None else default).strip().lower()


def _cuda_available() -> bool:
    try:
        from mbgpu.cuda.context import cuda_available
    except ImportError:
        return False
    return cuda_available()


def _gpu_factory(precision: str, device: int | None = None, asynchronous: bool = False) -> Callable:
    """The CUDA factory: on `device` (under MPI, the rank's), or, when none is named, on device 0 with
    every visible GPU available to an instance too large for one (mbgpu.cuda.split)."""
    from mbgpu.cuda.backend import backend_factory
    from mbgpu.cuda.context import list_devices

    devices = None if device is not None else [d.index for d in list_devices()]
    return backend_factory(precision=precision, device=device, asynchronous=asynchronous, devices=devices)


# Below this much work per node update (data_work) the compiled CPU core runs a generation faster than
# the GPU (launch and transfer latency dominate); measured on an H100 machine against its 16 host cores
# (docs/performance.md, "Which backend: CPU or GPU"). `set backend=gpu` uses the GPU anyway.
GPU_MIN_WORK = 12_000


def data_work(sets) -> int:
    """Patterns x states^2 summed over every pattern set of the data (mbgpu.analysis's per-division lists):
    what one node update of one rate category costs, the measure the CPU/GPU choice compares."""
    return int(sum(p.n_patterns * p.n_states ** 2 for group in sets for p in group))


def decide(options: Mapping, cuda_present: Callable[[], bool],
           work: int | None = None) -> tuple[str, str, bool | int, str]:
    """(kind, precision, scaling, reason) from `set` options and device presence; `set backend=cpu|gpu`
    overrides usebeagle/beagledevice, `backend=auto` (the default) leaves the choice to them and, given
    the data's `work` (data_work), to its size: a GPU is used only where it is the faster one."""
    use = _option(options, "Usebeagle", "Yes")
    device = _option(options, "Beagledevice", "GPU")
    precision = "single" if _option(options, "Beagleprecision", "Double") == "single" else "double"
    scaling_name = _option(options, "Beaglescaling", "Dynamic")
    if scaling_name not in SCALING:
        raise CommandError("beaglescaling must be Always or Dynamic, not %r" % options.get("Beaglescaling"))
    scaling = SCALING[scaling_name]
    override = _option(options, "Backend", "Auto")
    if override not in ("auto", "cpu", "gpu"):
        raise CommandError("backend must be auto, cpu or gpu, not %r" % options.get("Backend"))
    if override == "cpu":
        return "cpu", precision, scaling, "backend=cpu"
    if override == "gpu":
        if not cuda_present():
            raise CommandError("backend=gpu but no CUDA device with pycuda is available")
        return "gpu", precision, scaling, "backend=gpu"
    if use == "no":
        return "cpu", "double", scaling, "usebeagle=no"
    if device == "cpu":
        return "cpu", precision, scaling, "beagledevice=cpu"
    if not cuda_present():
        return "cpu", precision, scaling, "no CUDA device or pycuda found"
    if work is not None and work < GPU_MIN_WORK:
        return "cpu", precision, scaling, ("a CUDA device was found, but the data is too small for it to be "
                                          "faster: %d patterns x states^2 < %d; set backend=gpu to use it"
                                          % (work, GPU_MIN_WORK))
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


def choose_backend(options: Mapping, console, cuda_present: Callable[[], bool] | None = None, *,
                   cpu: str = "auto", device: int | None = None, asynchronous: bool = True,
                   work: int | None = None) -> BackendChoice:
    """The backend factory for a run; prints one line saying which backend was chosen.

    `cpu`: the backend used when the CPU is chosen: "auto" (compiled where numba imports, else
    numpy), "compiled" or "numpy" (the reference). When the GPU is chosen: `device`, the CUDA device
    index (None: device 0; under MPI mbgpu.mpi.devices picks one per rank), and `asynchronous`,
    page-locked asynchronous flushes (mbgpu.cuda.async_io; on by default: the core's two groups of chains
    then overlap host and device work, DNA 64x50k 620 -> 676 gen/s on an H100, docs/performance.md).
    `work`: the data's size (data_work), for backend=auto's choice by size.
    """
    kind, precision, scaling, reason = decide(options, cuda_present or _cuda_available, work)
    if kind == "gpu":
        cpu_name, make = "numpy", _gpu_factory(precision, device, asynchronous)
        if hasattr(make, "device"):                   # mbgpu.cuda.backend's factory: it says when it splits
            make.note = console.print
    else:
        cpu_name, make = _cpu_factory(cpu)
    choice = BackendChoice(kind, precision, scaling, reason, make, cpu_name)
    console.print(choice.describe())
    return choice
