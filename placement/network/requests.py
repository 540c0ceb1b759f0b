"""Request streams of seed 003: each request is [cpu, memory, holding time], one arrival per tick.

CPU and memory are drawn independently and uniformly from 1 .. ``max_servers`` full servers' worth
(the paper: up to 8 servers of 16 units, so 1..128 units). Holding times (in ticks, i.e. future
request arrivals) are uniform integers 1 .. h_max, with h_max chosen so that the offered load
``mean holding time x mean request / data-centre capacity`` is as close as integers allow to
``load`` (the paper: 95 %): with mean request r = (1 + R) / 2 units and capacity C, the target mean
holding time is H = load * C / r and h_max = round(2H - 1). The exact offered load is reported by
:attr:`Requests.offered_load` (94.5 % on 64 servers, 95.1 % on 1024).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tjap.core.errors import InvalidInputError, check_int, check_number
from tjap.placement.network.topology import DataCentre


@dataclass(frozen=True)
class Requests:
    """A stream of requests (arrays of equal length, in arrival order)."""

    cpu: np.ndarray
    mem: np.ndarray
    holding: np.ndarray
    seed: int = 0
    offered_load: float = float("nan")

    def __post_init__(self):
        arrays = {}
        for name in ("cpu", "mem", "holding"):
            a = np.asarray(getattr(self, name))
            if a.ndim != 1 or not (np.issubdtype(a.dtype, np.integer) or a.size == 0):
                raise InvalidInputError(f"requests {name} must be a 1-d array of integers")
            if a.size and a.min() < 1:
                raise InvalidInputError(f"requests {name} must be >= 1, got {int(a.min())}")
            arrays[name] = a.astype(np.int64)
            arrays[name].setflags(write=False)
            object.__setattr__(self, name, arrays[name])
        if not len(self.cpu) == len(self.mem) == len(self.holding):
            raise InvalidInputError("requests cpu, mem and holding must have the same length")

    def __len__(self) -> int:
        return len(self.cpu)

    @classmethod
    def generate(
        cls,
        topology: DataCentre,
        count: int,
        seed: int = 0,
        *,
        max_servers: int = 8,
        load: float = 0.95,
    ) -> "Requests":
        """``count`` requests for ``topology``, deterministic in ``seed`` (see the module doc)."""
        check_int("count (requests per episode)", count, 1)
        check_int(
            "max_servers",
            max_servers,
            1,
            topology.num_servers,
            must=f"an integer in [1, {topology.num_servers}] (request size in full servers)",
        )
        check_number("load", load, 0, 10, low_open=True)
        rng = np.random.default_rng(int(seed))
        top_cpu, top_mem = max_servers * topology.server_cpu, max_servers * topology.server_mem
        cpu = rng.integers(1, top_cpu + 1, size=count)
        mem = rng.integers(1, top_mem + 1, size=count)
        h_max = holding_max(topology, max_servers, load)
        holding = rng.integers(1, h_max + 1, size=count)
        total_cpu, total_mem = topology.capacity
        mean_h = (1 + h_max) / 2
        offered = mean_h * ((1 + top_cpu) / 2 / total_cpu + (1 + top_mem) / 2 / total_mem) / 2
        return cls(cpu, mem, holding, seed=int(seed), offered_load=float(offered))


def holding_max(topology: DataCentre, max_servers: int = 8, load: float = 0.95) -> int:
    """Largest holding time h_max of U{1..h_max} giving offered ``load`` (mean of CPU and memory)."""
    total_cpu, total_mem = topology.capacity
    per_tick = (
        (1 + max_servers * topology.server_cpu) / 2 / total_cpu
        + (1 + max_servers * topology.server_mem) / 2 / total_mem
    ) / 2
    return max(1, int(round(2 * load / per_tick - 1)))
