"""Writing and reading a checkpoint file: one HDF5 file, every value a dataset with a fletcher32
checksum, the sha256 of the whole payload as a root attribute, written atomically.

Atomic write: NAME.ckp.h5.tmp is written (the HDF5 file built in memory, then written with os.write, so
a failed write is an OutputWriteFailed, never a crash in HDF5) and fsynced; the current NAME.ckp.h5
becomes NAME.ckp.h5~ (hard link then rename, so NAME.ckp.h5 never disappears where links work); the
temporary file replaces NAME.ckp.h5; the directory is fsynced. A crash at any moment leaves a complete checkpoint
at NAME.ckp.h5 or, between two renames on file systems without hard links, at NAME.ckp.h5~.
"""
from __future__ import annotations

import hashlib
import io
import os

import numpy as np

from mbgpu.checkpoint.errors import CheckpointCorrupt
from mbgpu.checkpoint.schema import FORMAT, PREVIOUS, SCHEMA_VERSION, TEMPORARY
from mbgpu.output.write_failure import OutputWriteFailed, write_all

TEXT = "text"


def payload_digest(payload: dict) -> str:
    """sha256 over every (name, type, shape, bytes) in name order: what the reader verifies."""
    h = hashlib.sha256()
    for key in sorted(payload):
        v = payload[key]
        if isinstance(v, str):
            head, data = "%s\0text\0" % key, v.encode("utf-8")
        else:
            a = np.ascontiguousarray(v)
            head, data = "%s\0%s\0%r\0" % (key, a.dtype.str, a.shape), a.tobytes()
        h.update(head.encode("utf-8"))
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


ONE_CHUNK_MAX = 1 << 30     # bytes: an array up to this size is stored as one chunk


def _dataset(f, groups: dict, key: str, value) -> None:
    """Store `value` (an array, or text as utf-8 bytes) as dataset `key`, checksummed (fletcher32). Through
    h5py's low-level calls, one chunk per array and each group opened once: the high-level
    create_dataset costs ~0.3 ms an array, most of a checkpoint's time (they hold ~15 arrays a chain)."""
    import h5py

    text = isinstance(value, str)
    a = np.frombuffer(value.encode("utf-8"), dtype=np.uint8) if text else np.ascontiguousarray(value)
    if a.ndim == 0:
        raise AssertionError("store scalars as shape-(1,) arrays: %s" % key)
    folder, _, name = key.rpartition("/")
    group = groups.get(folder)
    if group is None:
        group = groups[folder] = f.require_group(folder) if folder else f
    if not a.size or a.nbytes > ONE_CHUNK_MAX:
        ds = group.create_dataset(name, data=a, chunks=True, fletcher32=True) if a.size else \
            group.create_dataset(name, shape=a.shape, dtype=a.dtype)
        if text:
            ds.attrs[TEXT] = 1
        return
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_chunk(a.shape)
    dcpl.set_fletcher32()
    dsid = h5py.h5d.create(group.id, name.encode("utf-8"), h5py.h5t.py_create(a.dtype),
                           h5py.h5s.create_simple(a.shape), dcpl=dcpl)
    dsid.write(h5py.h5s.ALL, h5py.h5s.ALL, a)
    if text:
        h5py.Dataset(dsid).attrs[TEXT] = 1


def write_file(path: str, payload: dict, summary: dict, shown: str | None = None) -> None:
    """Write `payload` to `path` (no renaming), fsynced; `summary` attributes are for people (h5dump);
    `shown`: the name an error gives (the checkpoint, for its temporary file).

    The HDF5 file is built in memory (about the payload's size again, for a moment) and written with plain
    os.write calls: HDF5 itself never writes to disk, so a full disk, a quota or `ulimit -f` is one
    OutputWriteFailed (the partial file removed) rather than an HDF5 file left half-closed, which
    crashed the interpreter at exit."""
    image = file_image(payload, summary)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
    except OSError as exc:
        raise OutputWriteFailed(shown or path, "the checkpoint", exc, len(image)) from None
    try:
        write_all(fd, image)
        os.fsync(fd)
    except OSError as exc:
        _discard(path)
        raise OutputWriteFailed(shown or path, "the checkpoint", exc, len(image)) from None
    finally:
        os.close(fd)


def file_image(payload: dict, summary: dict) -> memoryview:
    """The bytes of the HDF5 checkpoint file of `payload`, built in memory (h5py over a BytesIO: one copy
    of the payload, no second one to hand it over)."""
    import h5py

    buffer = io.BytesIO()
    with h5py.File(buffer, "w", libver=("v110", "latest")) as f:
        f.attrs["format"] = FORMAT
        f.attrs["schema_version"] = SCHEMA_VERSION
        f.attrs["payload_sha256"] = payload_digest(payload)
        for k, v in summary.items():
            f.attrs[k] = v
        groups: dict = {}
        for key in sorted(payload):
            _dataset(f, groups, key, payload[key])
    return buffer.getbuffer()


def _discard(path: str) -> None:
    """Remove a partly written file (a failed removal leaves a .tmp file that nothing reads)."""
    try:
        os.remove(path)
    except OSError:
        pass


def write_atomic(path: str, payload: dict, summary: dict) -> None:
    """Write the checkpoint `path`, keeping the previous one as `path~` (see the module docstring). A failed
    write (OutputWriteFailed) leaves the previous checkpoints as they were."""
    tmp, prev = path + TEMPORARY, path + PREVIOUS
    write_file(tmp, payload, summary, shown=path)
    if os.path.exists(path):
        try:
            os.link(path, prev + TEMPORARY)
            os.replace(prev + TEMPORARY, prev)
        except OSError:  # no hard links here: rename (NAME.ckp.h5 is briefly absent)
            os.replace(path, prev)
    os.replace(tmp, path)
    sync_directory(os.path.dirname(os.path.abspath(path)))


def sync_directory(folder: str) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def read_file(path: str) -> dict:
    """The verified payload of a checkpoint; CheckpointCorrupt says what is wrong with the file."""
    import h5py

    if not os.path.isfile(path):
        raise CheckpointCorrupt("checkpoint '%s' is not a file" % path)
    try:
        fh = h5py.File(path, "r")
    except OSError as exc:
        raise CheckpointCorrupt(_open_problem(path, exc)) from None
    try:
        with fh as f:
            if f.attrs.get("format") != FORMAT:
                raise CheckpointCorrupt("'%s' is not an mbgpu checkpoint (no format attribute '%s')" % (path, FORMAT))
            version = int(f.attrs.get("schema_version", -1))
            if version != SCHEMA_VERSION:
                raise CheckpointCorrupt("checkpoint '%s' has schema version %d; this mbgpu reads version %d"
                                        % (path, version, SCHEMA_VERSION))
            expected = str(f.attrs.get("payload_sha256", ""))
            payload = _read_all(f, path)
    except CheckpointCorrupt:
        raise
    except (OSError, KeyError, ValueError, RuntimeError, TypeError) as exc:
        raise CheckpointCorrupt("checkpoint '%s' is damaged: %s" % (path, _short(exc))) from None
    if payload_digest(payload) != expected:
        raise CheckpointCorrupt("checkpoint '%s' is damaged: its sha256 checksum does not match its contents" % path)
    return payload


def _read_all(f, path: str) -> dict:
    import h5py

    names: list[str] = []
    f.visit(names.append)
    out = {}
    for name in names:
        obj = f[name]
        if not isinstance(obj, h5py.Dataset):
            continue
        try:
            data = obj[()]
        except (OSError, ValueError) as exc:
            raise CheckpointCorrupt("checkpoint '%s' is damaged: dataset '%s' fails its checksum (%s)"
                                    % (path, name, _short(exc))) from None
        out[name] = bytes(np.asarray(data, dtype=np.uint8)).decode("utf-8", "replace") \
            if obj.attrs.get(TEXT) else np.asarray(data)
    return out


def _open_problem(path: str, exc: OSError) -> str:
    text = str(exc)
    size = os.path.getsize(path)
    if "truncated" in text.lower():
        return "checkpoint '%s' is truncated (%d bytes; the file ends early)" % (path, size)
    if "signature" in text.lower() or size < 8:
        return "'%s' is not an HDF5 checkpoint (no HDF5 signature; %d bytes)" % (path, size)
    return "checkpoint '%s' cannot be opened: %s" % (path, _short(exc))


def _short(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:160] or type(exc).__name__
