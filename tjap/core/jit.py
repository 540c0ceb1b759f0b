"""The one jit policy of the project: every Numba kernel is compiled with these options."""

import numba
import numba.extending

#: Decorator for every kernel: compiled once, cached on disk, callable without the GIL.
njit = numba.njit(cache=True, nogil=True)

#: The same policy for small kernels called from hot loops: inlined at the Numba IR level into
#: their callers, so a call costs no argument marshalling or reference counting of its arrays.
njit_inline = numba.njit(cache=True, nogil=True, inline="always")


@numba.extending.intrinsic
def popcount(typingctx, x):
    """Number of set bits of an integer (LLVM's ctpop), for compiled code, as an int64: mixing a
    uint64 count with int64 arithmetic would make Numba compute in float64."""
    if not isinstance(x, numba.types.Integer):
        return None
    bitwidth: int = x.bitwidth  # type: ignore[attr-defined]  # numba's scalars.pyi omits it
    if bitwidth > 64:
        return None

    def codegen(context, builder, signature, args):
        count = builder.ctpop(args[0])
        if bitwidth < 64:
            count = builder.zext(count, context.get_value_type(numba.types.int64))
        return count

    return numba.types.int64(x), codegen
