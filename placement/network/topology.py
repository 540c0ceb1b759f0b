"""Three-tier data-centre networks of seed 003: servers -> tier-1 (rack) -> tier-2 -> tier-3 switches.

Layout (Shabka & Zervas, Table 1 and Sec. 4.A; the counts the paper leaves open are derived so that
each tier has Table 1's oversubscription):

- a *rack* is ``servers_per_rack`` servers on one tier-1 switch; a *cluster* is ``racks_per_cluster``
  racks whose tier-1 switches all connect to the cluster's ``tier2_per_cluster`` tier-2 switches;
  every tier-2 switch connects to every one of the ``tier3_switches`` tier-3 switches.
- links carry channels: ``channels = (c1, c2, c3)`` per server-tier-1, tier-1-tier-2 and
  tier-2-tier-3 link. Table 1 with n in {8, 16, 32}: 1:16 -> (n, 2n, n/2); 1:8 -> (n, 4n, n);
  1:4 -> (n, 4n, 2n). The paper's topologies are named ``"n:1-o"``, e.g. ``"8:1-16"``.
- with 16 servers per rack, Table 1's tier-2 oversubscription needs 2 tier-2 switches per cluster
  (a rack's 16n server channels over 2 uplinks of 2n or 4n), and its tier-3 oversubscription needs
  as many tier-3 switches as racks per cluster: 2 for the 64-server topologies (2 clusters x 2 racks
  x 16), 16 for the 1024-server ones (4 clusters x 16 racks x 16), so both sizes keep the same
  oversubscription (the paper's "scaled up versions of each respective topology").

The network is a :class:`networkx.Graph`; the hot state lives in arrays indexed by link id. Link ids:
server s's link is ``s`` (tier 1), then the tier-2 links, then the tier-3 links.

Paths: every server pair is connected over its ``k`` (default 3) shortest simple paths by hop count.
A server has one link, so a server-to-server path is the two server links around a simple path
between their tier-1 switches; those switch paths are precomputed per pair of racks. Among paths
of equal length the choice is spread deterministically by rack pair (networkx alone would hand
every pair of racks the same few tier-3 switches and leave the others unused).
"""

from __future__ import annotations

import functools
import itertools
import re

import networkx as nx
import numpy as np

from tjap.core.errors import InvalidInputError, check_int, is_int
from tjap.core.renames import renamed

# the old names, kept for one release (they warn): tjap.core.renames
__getattr__ = renamed(__name__, {"Topology": "DataCentre"})

#: Bottom-to-top oversubscription -> (tier-2 channels / n, tier-3 channels / n), Table 1.
TABLE1 = {16: (2.0, 0.5), 8: (4.0, 1.0), 4: (4.0, 2.0)}
#: Channels per tier-1 link of the paper's topologies.
TIER1_CHANNELS = (8, 16, 32)
#: The paper's nine topologies, "channels per tier-1 link:1-oversubscription".
NAMES = tuple(f"{n}:1-{o}" for n in TIER1_CHANNELS for o in (16, 8, 4))
#: Server counts of the paper: (clusters, racks per cluster, servers per rack).
SIZES = {64: (2, 2, 16), 1024: (4, 16, 16)}
#: Distribution levels of a request's servers, from least to most spread.
SPREAD = ("server", "rack", "cluster", "global")


class DataCentre:
    """A three-tier network of servers with CPU and memory, and links with channels.

    Parameters
    ----------
    clusters, racks_per_cluster, servers_per_rack, tier2_per_cluster, tier3_switches : int
        Counts of the layout (see the module docstring).
    channels : (int, int, int)
        Channels per link at tiers 1, 2 and 3.
    server_cpu, server_mem : int
        Capacity of every server (the paper: 16 and 16).
    k : int
        Candidate paths per server pair (the paper: 3).
    name : str
        A label, e.g. ``"8:1-16"``.

    Notes
    -----
    Attributes (read-only arrays): ``rack_of``, ``cluster_of`` (per server), ``link_tier``,
    ``link_capacity``, ``link_ends`` (per link), ``rack_paths[ra, rb, j, :rack_path_len[ra, rb, j]]``
    (link ids of the j-th tier-1-to-tier-1 path, shortest first) and ``rack_path_count[ra, rb]``.
    """

    def __init__(
        self,
        *,
        clusters: int,
        racks_per_cluster: int,
        servers_per_rack: int,
        tier2_per_cluster: int,
        tier3_switches: int,
        channels,
        server_cpu: int = 16,
        server_mem: int = 16,
        k: int = 3,
        name: str = "custom",
    ):
        counts = dict(
            clusters=clusters,
            racks_per_cluster=racks_per_cluster,
            servers_per_rack=servers_per_rack,
            tier2_per_cluster=tier2_per_cluster,
            tier3_switches=tier3_switches,
            server_cpu=server_cpu,
            server_mem=server_mem,
            k=k,
        )
        for field, value in counts.items():
            check_int(f"topology {field}", value, 1)
        try:
            channels = tuple(channels)
        except TypeError:
            channels = ()
        if len(channels) != 3 or not all(is_int(c) and c >= 1 for c in channels):
            raise InvalidInputError(
                f"channels must be 3 positive integers (tier 1, 2, 3), got {channels!r}"
            )
        self.name = str(name)
        self.clusters, self.racks_per_cluster = int(clusters), int(racks_per_cluster)
        self.servers_per_rack = int(servers_per_rack)
        self.tier2_per_cluster, self.tier3_switches = int(tier2_per_cluster), int(tier3_switches)
        self.channels = tuple(int(c) for c in channels)
        self.server_cpu, self.server_mem, self.k = int(server_cpu), int(server_mem), int(k)
        self.num_racks = self.clusters * self.racks_per_cluster
        self.num_servers = self.num_racks * self.servers_per_rack
        self._build()

    # -- construction ----------------------------------------------------------------------------
    def _build(self) -> None:
        n, r, t2 = self.num_servers, self.num_racks, self.tier2_per_cluster
        tier1 = [n + i for i in range(r)]  # node ids of the switches
        tier2 = [n + r + i for i in range(self.clusters * t2)]
        tier3 = [n + r + self.clusters * t2 + i for i in range(self.tier3_switches)]
        g = nx.Graph()
        for s in range(n):
            g.add_node(s, kind="server", tier=0)
        for tier, nodes in ((1, tier1), (2, tier2), (3, tier3)):
            g.add_nodes_from(nodes, kind="switch", tier=tier)
        ends, tiers = [], []

        def link(a, b, tier):
            g.add_edge(a, b, link=len(ends), tier=tier, channels=self.channels[tier - 1])
            ends.append((a, b))
            tiers.append(tier)

        for s in range(n):
            link(s, tier1[s // self.servers_per_rack], 1)
        for rack in range(r):
            cluster = rack // self.racks_per_cluster
            for x in range(t2):
                link(tier1[rack], tier2[cluster * t2 + x], 2)
        for a in tier2:
            for b in tier3:
                link(a, b, 3)
        self.graph = g
        self.tier1_nodes, self.tier2_nodes, self.tier3_nodes = tier1, tier2, tier3
        self.link_ends = _frozen(np.array(ends, dtype=np.int64))
        self.link_tier = _frozen(np.array(tiers, dtype=np.int64))
        self.link_capacity = _frozen(
            np.array([self.channels[t - 1] for t in tiers], dtype=np.int64)
        )
        self.num_links = len(ends)
        servers = np.arange(n)
        self.rack_of = _frozen(servers // self.servers_per_rack)
        self.cluster_of = _frozen(self.rack_of // self.racks_per_cluster)
        self._paths()

    def _paths(self) -> None:
        """The k shortest tier-1-to-tier-1 paths of every rack pair, as link ids."""
        switches = self.graph.subgraph(self.tier1_nodes + self.tier2_nodes + self.tier3_nodes)
        r, k = self.num_racks, self.k
        found = {}
        for a in range(r):
            for b in range(a + 1, r):
                found[a, b] = _k_shortest(
                    switches, self.tier1_nodes[a], self.tier1_nodes[b], k, offset=a + b
                )
        longest = max((len(p) - 1 for ps in found.values() for p in ps), default=0)
        paths = np.full((r, r, k, max(longest, 1)), -1, dtype=np.int64)
        length = np.zeros((r, r, k), dtype=np.int64)
        count = np.ones((r, r), dtype=np.int64)  # same rack: one path, no switch links
        for (a, b), ps in found.items():
            count[a, b] = count[b, a] = len(ps)
            for j, p in enumerate(ps):
                ids = [self.graph.edges[u, v]["link"] for u, v in zip(p, p[1:])]
                paths[a, b, j, : len(ids)] = ids
                paths[b, a, j, : len(ids)] = ids[::-1]
                length[a, b, j] = length[b, a, j] = len(ids)
        self.rack_paths, self.rack_path_len = _frozen(paths), _frozen(length)
        self.rack_path_count = _frozen(count)

    # -- queries ---------------------------------------------------------------------------------
    @property
    def capacity(self) -> tuple[int, int]:
        """Total (CPU, memory) of the data centre."""
        return self.num_servers * self.server_cpu, self.num_servers * self.server_mem

    def tier_capacity(self) -> np.ndarray:
        """Total channels of each tier (index 0 = tier 1)."""
        return np.array([self.link_capacity[self.link_tier == t].sum() for t in (1, 2, 3)])

    def server_paths(self, u: int, v: int) -> list[list[int]]:
        """Link ids of the candidate paths between servers ``u`` and ``v``, shortest first."""
        self._check_server(u)
        self._check_server(v)
        if u == v:
            raise InvalidInputError(f"a path needs two different servers, got {u} twice")
        a, b = self.rack_of[u], self.rack_of[v]
        return [
            [u, *self.rack_paths[a, b, j, : self.rack_path_len[a, b, j]].tolist(), v]
            for j in range(self.rack_path_count[a, b])
        ]

    def spread(self, servers) -> int:
        """How distributed ``servers`` are: 0 one server, 1 one rack, 2 one cluster, 3 several
        clusters (names in :data:`SPREAD`)."""
        servers = np.asarray(list(servers), dtype=np.int64)
        if len(np.unique(servers)) <= 1:
            return 0
        if len(np.unique(self.rack_of[servers])) == 1:
            return 1
        return 2 if len(np.unique(self.cluster_of[servers])) == 1 else 3

    def _check_server(self, s) -> None:
        check_int("server", s, 0, self.num_servers - 1)

    def describe(self) -> dict:
        return {
            "name": self.name,
            "servers": self.num_servers,
            "clusters": self.clusters,
            "racks_per_cluster": self.racks_per_cluster,
            "servers_per_rack": self.servers_per_rack,
            "tier2_per_cluster": self.tier2_per_cluster,
            "tier3_switches": self.tier3_switches,
            "channels": list(self.channels),
            "links": self.num_links,
            "k": self.k,
        }

    def __repr__(self) -> str:
        return (
            f"DataCentre({self.name!r}, {self.num_servers} servers, {self.num_racks} racks, "
            f"channels {self.channels})"
        )


def _frozen(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


def _k_shortest(g: nx.Graph, a: int, b: int, k: int, offset: int) -> list[list[int]]:
    """The k shortest simple paths from ``a`` to ``b`` by hop count. When the shortest length has
    more than k paths, k of them evenly spaced (in sorted order) from a start set by ``offset``."""
    shortest = sorted(nx.all_shortest_paths(g, a, b))
    if len(shortest) >= k:
        step = len(shortest) / k
        return [shortest[(offset + int(i * step)) % len(shortest)] for i in range(k)]
    paths = list(shortest)
    for p in itertools.islice(nx.shortest_simple_paths(g, a, b), k + len(shortest)):
        if len(paths) == k:
            break
        if p not in paths:
            paths.append(p)
    return paths


def parse_name(name: str) -> tuple[int, int]:
    """``"8:1-16"`` -> (8, 16): channels per tier-1 link and bottom-top oversubscription."""
    m = re.fullmatch(r"\s*(\d+)\s*:\s*1\s*-\s*(\d+)\s*", str(name))
    if not m or int(m.group(2)) not in TABLE1 or int(m.group(1)) < 2:
        raise InvalidInputError(
            f"unknown topology {name!r}; use 'n:1-o' with o in 16, 8, 4 and "
            f"an even n >= 2, e.g. one of the paper's {', '.join(NAMES)}"
        )
    n, o = int(m.group(1)), int(m.group(2))
    if n % 2:
        raise InvalidInputError(
            f"topology {name!r}: n must be even (tier-3 links carry n/2 channels at 1:16), got {n}"
        )
    return n, o


@functools.lru_cache(maxsize=32)
def paper_topology(name: str = "8:1-16", servers: int = 64) -> DataCentre:
    """One of the paper's topologies: ``name`` as ``"8:1-16"``, ``servers`` 64 or 1024 (cached).

    >>> paper_topology("16:1-8", 64).channels
    (16, 64, 16)
    """
    n, o = parse_name(name)
    if servers not in SIZES:
        raise InvalidInputError(
            f"servers must be one of {', '.join(map(str, SIZES))} (the paper's "
            f"two sizes), got {servers!r}"
        )
    clusters, racks, per_rack = SIZES[servers]
    c2, c3 = TABLE1[o]
    return DataCentre(
        clusters=clusters,
        racks_per_cluster=racks,
        servers_per_rack=per_rack,
        tier2_per_cluster=2,
        tier3_switches=racks,
        channels=(n, int(c2 * n), int(c3 * n)),
        name=f"{n}:1-{o}",
    )
