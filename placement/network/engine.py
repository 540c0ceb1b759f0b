"""The allocation engine of seed 003: free resources and free channels, one request at a time.

Rules (Shabka & Zervas Sec. 3.A, and the seed notes):

- A request [cpu, mem, holding] is served by choosing servers one at a time. Each chosen server
  contributes min(free, still needed) of each resource. Only servers that can contribute something
  still needed, and are not chosen yet, may be chosen (:meth:`Engine.mask`).
- Each newly chosen server must reach every server already chosen (in the order they were chosen)
  over one of the topology's k shortest paths whose links all have a free channel; one channel per
  link of that path is reserved. Which feasible candidate is used is the engine's ``routing``:
  ``"shortest"`` takes the first (fewest hops; the published code's default), ``"balanced"`` the
  one of least sum over its links of capacity / free channels, i.e. emptier links are cheaper
  (NALB and NULB's bandwidth-weighted routing; the published code weighted links by their free
  channels, which a shortest-path search minimises, so it preferred *fuller* links; we use the
  load-balancing sign the NALB paper intends). A policy may also name the candidate per pair.
- No feasible candidate for some pair: the request fails and everything it held (resources and
  channels) is released at once. Fully provisioned: accepted, and released ``holding`` ticks later.
- Time is counted in ticks, one per request arrival; :meth:`Engine.advance` releases expired
  requests. Channel reservation and its check are Numba kernels (:mod:`._kernels`).
"""

from __future__ import annotations

import enum
import heapq

import numpy as np

from tjap.core.errors import InvalidInputError, check_int
from tjap.placement.network import _kernels as kern
from tjap.placement.network.topology import DataCentre

ROUTINGS = {"shortest": kern.ROUTE_SHORTEST, "balanced": kern.ROUTE_BALANCED}


class Outcome(enum.IntEnum):
    """What one allocation step did to the current request."""

    PENDING = 0  # the server was added; the request still needs resources
    ACCEPTED = 1  # the request is fully provisioned
    FAILED = 2  # no path for some pair (or the policy gave up): everything released


class Engine:
    """Hot state of one data centre: free CPU, memory and channels, the request being served and
    the accepted requests still holding resources.

    Policies read (never write) ``free_cpu``, ``free_mem``, ``free_channels``, ``need_cpu``,
    ``need_mem``, ``chosen`` and ``topology``; ``last_paths`` is the candidate path index per
    earlier server that the last successful :meth:`step` used (kept after the request ends, so a
    dry run on a copy can be replayed with :meth:`step`'s ``paths``).

    >>> from tjap.placement.network import paper_topology
    >>> engine = Engine(paper_topology("8:1-16"))
    >>> engine.begin(cpu=40, mem=20, holding=5)
    >>> engine.step(0), engine.step(1), engine.step(2)   # 16 + 16 + 8 CPU
    (<Outcome.PENDING: 0>, <Outcome.PENDING: 0>, <Outcome.ACCEPTED: 1>)
    """

    def __init__(self, topology: DataCentre, routing: str = "shortest"):
        if not isinstance(topology, DataCentre):
            raise InvalidInputError(
                "topology must be a tjap.placement.network.DataCentre, "
                f"got {type(topology).__name__}"
            )
        if routing not in ROUTINGS:
            raise InvalidInputError(
                f"routing must be one of {', '.join(ROUTINGS)}, got {routing!r}"
            )
        self.topology = topology
        self.routing = routing
        t = topology
        self._tier_capacity = t.tier_capacity().astype(float)
        self._capacity = np.ascontiguousarray(t.link_capacity, dtype=np.float64)
        self._scratch_links = np.empty(t.num_servers * (t.rack_paths.shape[3] + 2), np.int64)
        self._scratch_paths = np.empty(t.num_servers, np.int64)  # placeholder for `given`
        self._paths_out = np.empty(t.num_servers, np.int64)
        self.reset()

    # -- state -----------------------------------------------------------------------------------
    def reset(self) -> None:
        """Empty data centre at tick 0, no request."""
        t = self.topology
        self.free_cpu = np.full(t.num_servers, t.server_cpu, np.int64)
        self.free_mem = np.full(t.num_servers, t.server_mem, np.int64)
        self.free_channels = t.link_capacity.copy()
        self.now = 0
        self._active = []  # heap of (end tick, sequence, servers, cpu, mem, links)
        self._seq = 0
        self.last_paths = np.empty(0, np.int64)
        self._clear_request()

    def _clear_request(self) -> None:
        self.request = None
        self.need_cpu = self.need_mem = 0
        self.chosen: list[int] = []
        self._chosen_flag = np.zeros(self.topology.num_servers, bool)
        self._chosen_arr = np.empty(self.topology.num_servers, np.int64)
        self._took_cpu: list[int] = []
        self._took_mem: list[int] = []
        self._links: list[np.ndarray] = []
        self.paths: list[np.ndarray] = []  # per chosen server: candidate index per earlier server

    @property
    def active_requests(self) -> int:
        return len(self._active)

    def fits(self, cpu: int, mem: int) -> bool:
        """Whether the data centre has the raw resources (ignoring the network) for a request."""
        return int(self.free_cpu.sum()) >= cpu and int(self.free_mem.sum()) >= mem

    def advance(self, ticks: int = 1) -> None:
        """Move time on by ``ticks`` and release every accepted request whose holding time is over."""
        if self.request is not None:
            raise InvalidInputError(
                "finish the current request (step until accepted or failed, "
                "or abort) before advancing time"
            )
        self.now += int(ticks)
        while self._active and self._active[0][0] <= self.now:
            _, _, servers, cpu, mem, links = heapq.heappop(self._active)
            self._give_back(servers, cpu, mem, links)

    def _give_back(self, servers, cpu, mem, links) -> None:
        np.add.at(self.free_cpu, servers, cpu)
        np.add.at(self.free_mem, servers, mem)
        kern.release(self.free_channels, links, len(links))

    # -- one request -----------------------------------------------------------------------------
    def arrive(self, cpu: int, mem: int, holding: int, *, first: bool = False) -> None:
        """The next request of a stream arrives: time moves on one tick (not for the stream's
        first request), then on while the data centre lacks the raw CPU or memory for it, and the
        request begins (:meth:`begin`)."""
        total_cpu, total_mem = self.topology.capacity
        if cpu > total_cpu or mem > total_mem:
            raise InvalidInputError(
                f"request ({cpu} CPU, {mem} memory) exceeds the data centre "
                f"({total_cpu}, {total_mem}); generate requests for this topology"
            )
        if not first:
            self.advance(1)
        while not self.fits(cpu, mem):
            self.advance(1)
        self.begin(cpu, mem, holding)

    def begin(self, cpu: int, mem: int, holding: int) -> None:
        """Start serving a request of ``cpu`` and ``mem`` units for ``holding`` ticks."""
        if self.request is not None:
            raise InvalidInputError("a request is already being served; step it to the end first")
        for name, value in (("cpu", cpu), ("mem", mem), ("holding", holding)):
            check_int(f"request {name}", value, 1)
        if not self.fits(cpu, mem):
            raise InvalidInputError(
                f"request ({cpu} CPU, {mem} memory) exceeds the free resources "
                f"({int(self.free_cpu.sum())}, {int(self.free_mem.sum())}); "
                "advance time until it fits"
            )
        self.request = (int(cpu), int(mem), int(holding))
        self.need_cpu, self.need_mem = int(cpu), int(mem)

    def mask(self) -> np.ndarray:
        """Servers that may be chosen next: not chosen yet, and able to contribute."""
        can = ((self.free_cpu > 0) & (self.need_cpu > 0)) | (
            (self.free_mem > 0) & (self.need_mem > 0)
        )
        return can & ~self._chosen_flag

    def step(self, server: int, paths=None) -> Outcome:
        """Add ``server`` to the current request.

        ``paths`` (optional) names, for each server already chosen (in order), the candidate path
        index to use (0 .. k-1); by default the engine's routing rule picks it.
        """
        if self.request is None:
            raise InvalidInputError("no request is being served; call begin() first")
        t = self.topology
        server = check_int("server", server, 0, t.num_servers - 1)
        if not self.mask()[server]:
            raise InvalidInputError(
                f"server {server} cannot be chosen: it is already chosen or "
                "has nothing the request still needs (see Engine.mask)"
            )
        n = len(self.chosen)
        routing = ROUTINGS[self.routing]
        given = self._scratch_paths
        if paths is not None:
            paths = np.asarray(paths, dtype=np.int64).ravel()
            if len(paths) != n:
                raise InvalidInputError(
                    f"paths must name one candidate per server already chosen "
                    f"({n}), got {len(paths)}"
                )
            routing, given = kern.ROUTE_GIVEN, np.ascontiguousarray(paths)
        count = 0
        if n:
            count = kern.connect(
                server,
                self._chosen_arr,
                n,
                t.rack_of,
                t.rack_paths,
                t.rack_path_len,
                t.rack_path_count,
                self._capacity,
                self.free_channels,
                routing,
                given,
                self._scratch_links,
                self._paths_out,
            )
            if count < 0:
                return self.abort()
            self._links.append(self._scratch_links[:count].copy())
            self.last_paths = self._paths_out[:n].copy()
        else:
            self.last_paths = np.empty(0, np.int64)
        self.paths.append(self.last_paths)
        cpu = min(int(self.free_cpu[server]), self.need_cpu)
        mem = min(int(self.free_mem[server]), self.need_mem)
        self.free_cpu[server] -= cpu
        self.free_mem[server] -= mem
        self.need_cpu -= cpu
        self.need_mem -= mem
        self._chosen_arr[n] = server
        self._chosen_flag[server] = True
        self.chosen.append(server)
        self._took_cpu.append(cpu)
        self._took_mem.append(mem)
        if self.need_cpu == 0 and self.need_mem == 0:
            links = np.concatenate(self._links) if self._links else np.empty(0, np.int64)
            heapq.heappush(
                self._active,
                (
                    self.now + self.request[2],
                    self._seq,
                    np.array(self.chosen, np.int64),
                    np.array(self._took_cpu, np.int64),
                    np.array(self._took_mem, np.int64),
                    links,
                ),
            )
            self._seq += 1
            self._clear_request()
            return Outcome.ACCEPTED
        return Outcome.PENDING

    def abort(self) -> Outcome:
        """Fail the current request: release everything it holds."""
        if self.request is None:
            raise InvalidInputError("no request is being served")
        links = np.concatenate(self._links) if self._links else np.empty(0, np.int64)
        self._give_back(
            np.array(self.chosen, np.int64),
            np.array(self._took_cpu, np.int64),
            np.array(self._took_mem, np.int64),
            links,
        )
        self._clear_request()
        return Outcome.FAILED

    # -- measures --------------------------------------------------------------------------------
    def utilisation(self) -> dict:
        """Fractions in use now: CPU, memory and channels of each tier."""
        t = self.topology
        used = np.bincount(
            t.link_tier - 1, weights=t.link_capacity - self.free_channels, minlength=3
        )
        net = used / self._tier_capacity
        cpu, mem = t.capacity
        return {
            "cpu": 1.0 - self.free_cpu.sum() / cpu,
            "mem": 1.0 - self.free_mem.sum() / mem,
            "tier1": float(net[0]),
            "tier2": float(net[1]),
            "tier3": float(net[2]),
        }

    def held(self) -> dict:
        """CPU, memory (per server) and channels (per link) held by the accepted requests and the
        current one; with the free arrays they add up to the capacities (the tests check it)."""
        t = self.topology
        cpu, mem = np.zeros(t.num_servers, np.int64), np.zeros(t.num_servers, np.int64)
        channels = np.zeros(t.num_links, np.int64)
        for _, _, servers, took_cpu, took_mem, links in self._active:
            np.add.at(cpu, servers, took_cpu)
            np.add.at(mem, servers, took_mem)
            np.add.at(channels, links, 1)
        np.add.at(cpu, np.array(self.chosen, np.int64), np.array(self._took_cpu, np.int64))
        np.add.at(mem, np.array(self.chosen, np.int64), np.array(self._took_mem, np.int64))
        for links in self._links:
            np.add.at(channels, links, 1)
        return {"cpu": cpu, "mem": mem, "channels": channels}
