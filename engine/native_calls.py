"""C functions called by address from numba-compiled code (libcuda's launches, MPI's allreduce): the
address is an argument, not a constant, so numba's on-disk cache stays valid across processes."""
from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.extending import intrinsic


def i64_call(n_args: int):
    """An intrinsic calling the C function at an int64 address with n_args int64 arguments (pointers,
    handles, sizes; a C int argument reads the low half of its register on x86-64 and aarch64),
    returning its int32 result."""

    @intrinsic
    def call(typingctx, addr, args):
        if not isinstance(args, types.BaseTuple) or len(args) != n_args:
            return None
        sig = types.int32(addr, args)

        def codegen(context, builder, signature, llargs):
            i64 = ir.IntType(64)
            fnty = ir.FunctionType(ir.IntType(32), [i64] * n_args)
            fn = builder.inttoptr(context.cast(builder, llargs[0], signature.args[0], types.int64), fnty.as_pointer())
            vals = [builder.extract_value(llargs[1], i) for i in range(n_args)]
            return builder.call(fn, [context.cast(builder, v, t, types.int64)
                                     for v, t in zip(vals, signature.args[1])])
        return sig, codegen
    return call


call6 = i64_call(6)
