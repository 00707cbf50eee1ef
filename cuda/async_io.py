"""Asynchronous host<->device traffic for the batched sampler (`asynchronous=True` of
mbgpu.cuda.backend.backend_factory, CudaBackend and GpuParsimony; choose_backend turns it on for runs):
page-locked staging buffers, and one event per flush tag so a flush's results can be waited for on their own.

With synchronous copies on the legacy default stream, uploading group g+1's flush waits for group g's
kernels and reading group g's sums waits for every flush queued after it, so the host cannot decide for
one group while the device computes the next. Here a flush is uploaded from page-locked memory
(cuMemcpyHtoDAsync returns at once), its root sums are copied back right behind its own root kernel
and an event is recorded after that copy: `wait(tag)` waits for that flush alone.

A staging buffer is reused only after the event of its tag has completed (`stage` waits for it), so a
copy in flight is never overwritten; a buffer that must grow is replaced only on an idle context.
pycuda is imported inside functions only.
"""
from __future__ import annotations

import numpy as np


class HostStaging:
    """Named page-locked buffers (grown on demand) and one completion event per tag. Use inside the
    device's context."""

    def __init__(self):
        self._buffers: dict[str, np.ndarray] = {}
        self._events: dict[str, object] = {}

    def buffer(self, name: str, nbytes: int) -> np.ndarray:
        """A page-locked uint8 array of at least `nbytes` (a larger one replaces it on an idle context)."""
        import pycuda.driver as drv

        buf = self._buffers.get(name)
        if buf is None or buf.nbytes < nbytes:
            if buf is not None:
                drv.Context.synchronize()          # no copy may still use the buffer being replaced
            size = max(int(nbytes), 4096, 2 * (buf.nbytes if buf is not None else 0))
            buf = self._buffers[name] = drv.pagelocked_empty(size, np.uint8)
        return buf

    def wait(self, tag: str) -> None:
        """Wait until the work recorded under `tag` (if any) has completed."""
        event = self._events.get(tag)
        if event is not None:
            event.synchronize()

    def record(self, tag: str, stream=None) -> None:
        """Mark the end of the work queued so far on `stream` (the default stream) as `tag`."""
        import pycuda.driver as drv

        event = self._events.get(tag)
        if event is None:
            event = self._events[tag] = drv.Event(drv.event_flags.DISABLE_TIMING)
        event.record(stream)

    def upload(self, name: str, device_ptr, array: np.ndarray, stream=None) -> None:
        """Copy `array` to `device_ptr` through the page-locked buffer `name`, asynchronously."""
        import pycuda.driver as drv

        data = np.ascontiguousarray(array).view(np.uint8).ravel()
        if not data.size:
            return
        staging = self.buffer(name, data.size)[:data.size]
        staging[:] = data
        drv.memcpy_htod_async(device_ptr, staging, stream)

    def download(self, name: str, device_ptr, nbytes: int, stream=None) -> np.ndarray:
        """Queue a copy of `nbytes` from `device_ptr` into the page-locked buffer `name`; the returned
        uint8 view holds the data once the stream has reached this point (wait for an event after it)."""
        import pycuda.driver as drv

        out = self.buffer(name, nbytes)[:nbytes]
        drv.memcpy_dtoh_async(out, device_ptr, stream)
        return out
