"""The brute-force oracle of the seed-003 exact model, shared by its tests."""

from __future__ import annotations

import itertools


def fewest_channels(t, free_cpu, free_mem, free_ch, cpu, mem, fixed=()):
    """Fewest channels over every set of new servers that covers (cpu, mem) and every choice of
    one candidate path per pair of servers to connect (new-new, and new-``fixed`` for a request
    whose first servers are already chosen); None if no set can be connected. A depth-first search
    over the pairs that backtracks as soon as a link runs out."""
    fixed = list(fixed)
    usable = [v for v in range(t.num_servers) if v not in fixed and (free_cpu[v] or free_mem[v])]

    def assign(options, k, left, channels):
        if k == len(options):
            return channels
        found = None
        for path in options[k]:
            if all(left[x] >= 1 for x in path):
                for x in path:
                    left[x] -= 1
                got = assign(options, k + 1, left, channels + len(path))
                for x in path:
                    left[x] += 1
                if got is not None and (found is None or got < found):
                    found = got
        return found

    best = None
    for size in range(1, len(usable) + 1):
        for subset in itertools.combinations(usable, size):
            if sum(free_cpu[v] for v in subset) < cpu or sum(free_mem[v] for v in subset) < mem:
                continue
            pairs = [*itertools.combinations(subset, 2), *((u, v) for u in fixed for v in subset)]
            channels = assign([t.server_paths(u, v) for u, v in pairs], 0, free_ch.copy(), 0)
            if channels is not None and (best is None or channels < best):
                best = channels
    return best
