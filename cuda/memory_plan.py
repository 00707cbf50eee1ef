"""Device memory planning for the CUDA likelihood backend: bytes per buffer before allocating.

`plan_instance` lists what one backend instance will allocate (partials, matrices, scale buffers,
tips, work arrays) in its precision; `check_fits` compares the total with the device's free memory
(`mem_get_info`) and raises a DeviceError that names the largest buffer, its size, the device and
what to change, before anything is allocated. Pure Python: testable without a GPU.
"""
from __future__ import annotations

from dataclasses import dataclass

from mbgpu.errors import DeviceError

RESERVE_BYTES = 256 << 20        # left free for the context, kernels and other allocations
PRECISION_BYTES = {"double": 8, "single": 4}


@dataclass(frozen=True)
class MemoryPlan:
    """Bytes per named buffer of one instance (ordered largest first by `largest`)."""

    buffers: dict
    precision: str

    @property
    def total(self) -> int:
        return int(sum(self.buffers.values()))

    def largest(self) -> tuple[str, int]:
        name = max(self.buffers, key=self.buffers.get)
        return name, int(self.buffers[name])


def real_bytes(precision: str) -> int:
    """Bytes of one partial/matrix entry in `precision` ('double' or 'single')."""
    try:
        return PRECISION_BYTES[precision]
    except KeyError:
        raise DeviceError("precision must be 'double' or 'single', not %r" % (precision,)) from None


def plan_instance(spec, precision: str = "double", tip_partial_tips: int = 0, root_jobs: int = 1) -> MemoryPlan:
    """Bytes of every device buffer of an instance with InstanceSpec `spec`."""
    r = real_bytes(precision)
    c, p, s = spec.n_categories, spec.n_patterns, spec.n_states
    buffers = {
        "partials": r * spec.n_partials * c * p * s,
        "tip_states": spec.n_tips * p,
        "tip_partials": r * tip_partial_tips * p * s,
        "transition_matrices": r * spec.n_matrices * c * s * s,
        "scale_buffers": 8 * spec.n_scale_buffers * p,
        "pattern_weights": 8 * p,
        "site_log_likelihoods": 8 * root_jobs * p,
        "invariant_site_table": 8 * p * s,
    }
    return MemoryPlan(buffers, precision)


def check_fits(plan: MemoryPlan, free_bytes: int, total_bytes: int, device: str, chains: int = 1) -> None:
    """Raise DeviceError (buffer, size, device, remedies) when `plan` does not fit in `free_bytes`."""
    need = plan.total
    if need + RESERVE_BYTES <= free_bytes:
        return
    name, size = plan.largest()
    remedies = []
    if plan.precision == "double":
        remedies.append("set beagleprecision=single (halves partials and matrices)")
    remedies.append("fewer chains per GPU%s" % (" (now %d)" % chains if chains > 1 else ""))
    remedies.append("more MPI ranks / GPUs so each holds fewer chains or patterns")
    raise DeviceError(
        "the likelihood buffers need %s on %s but only %s of %s are free: the largest is '%s' (%s, %s); "
        "remedies: %s" % (gib(need), device, gib(free_bytes), gib(total_bytes), name, gib(size),
                          plan.precision, "; ".join(remedies)))


def gib(n: int) -> str:
    """Bytes as GiB text with two decimals."""
    return "%.2f GiB" % (n / float(1 << 30))
