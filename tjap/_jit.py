"""The one jit policy of the project: every Numba kernel is compiled with these options."""

import numba

#: Decorator for every kernel: compiled once, cached on disk, callable without the GIL.
njit = numba.njit(cache=True, nogil=True)
