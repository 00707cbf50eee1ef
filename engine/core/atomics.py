"""Sequentially consistent atomic operations on int64 array elements, for compiled code whose threads
hand chains to each other (mbgpu.core.handoff). numba has no CPU atomics: in compiled code these lower
to LLVM's atomic load, store, compare-and-swap and add, which also keep the compiler from holding a
value in a register or moving ordinary loads and stores across them. Called from Python (one thread,
as in tests that run a compiled function's py_func), they are the plain operations.
"""
from __future__ import annotations

from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, overload

_ORDER = "seq_cst"


def load(arr, idx):
    """arr[idx], read from memory."""
    return arr[idx]


def store(arr, idx, value):
    """arr[idx] = value, visible to every thread that loads it afterwards."""
    arr[idx] = value


def cas(arr, idx, expected, new):
    """If arr[idx] == expected, set it to new; True when this call made the change."""
    if arr[idx] != expected:
        return False
    arr[idx] = new
    return True


def _pointer(context, builder, aryty, ary, idx):
    array = context.make_array(aryty)(context, builder, ary)
    return cgutils.get_item_pointer(context, builder, aryty, array, [idx])


def _int64_array(arr, idx):
    return (isinstance(arr, types.Array) and arr.ndim == 1 and arr.dtype == types.int64
            and isinstance(idx, types.Integer))


@intrinsic
def _load(typingctx, arr, idx):
    if not _int64_array(arr, idx):
        return None

    def codegen(context, builder, sig, args):
        return builder.load_atomic(_pointer(context, builder, sig.args[0], args[0], args[1]), _ORDER, 8)
    return types.int64(arr, idx), codegen


@intrinsic
def _store(typingctx, arr, idx, value):
    if not _int64_array(arr, idx) or not isinstance(value, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        v = context.cast(builder, args[2], sig.args[2], types.int64)
        builder.store_atomic(v, _pointer(context, builder, sig.args[0], args[0], args[1]), _ORDER, 8)
        return context.get_dummy_value()
    return types.none(arr, idx, value), codegen


@intrinsic
def _cas(typingctx, arr, idx, expected, new):
    if not _int64_array(arr, idx) or not isinstance(expected, types.Integer) or not isinstance(new, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        e = context.cast(builder, args[2], sig.args[2], types.int64)
        n = context.cast(builder, args[3], sig.args[3], types.int64)
        pair = builder.cmpxchg(_pointer(context, builder, sig.args[0], args[0], args[1]), e, n, _ORDER, _ORDER)
        return builder.extract_value(pair, 1)
    return types.boolean(arr, idx, expected, new), codegen


@overload(load)
def _load_compiled(arr, idx):
    return lambda arr, idx: _load(arr, idx)


@overload(store)
def _store_compiled(arr, idx, value):
    return lambda arr, idx, value: _store(arr, idx, value)


@overload(cas)
def _cas_compiled(arr, idx, expected, new):
    return lambda arr, idx, expected, new: _cas(arr, idx, expected, new)
