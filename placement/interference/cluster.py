"""Clusters of seed 001: a data-centre topology of GPU servers, each server one or two CPU sockets
with a GPU group behind each socket's PCIe switch.

Topologies (Sec. VI-A and VI-D; the choices the paper leaves open are ours and said here):

- ``fattree`` (k-ary, default k = 20): k pods, each with k/2 edge switches of k/2 servers, so
  k^3/4 servers (2000 for k = 20) and k pods = k schedulers. The k/2 aggregation switches of a pod
  are fused into one node (as the paper does); each edge switch has one link to it that bundles
  its k/2 physical uplinks (k/2 x 20 Gbps). The (k/2)^2 core switches each have one 40 Gbps link
  to every pod's fused aggregation node (in a fat-tree every core switch reaches each pod through
  exactly one aggregation switch). Link bandwidths per tier (the paper): server-edge 10,
  edge-aggregation 20, aggregation-core 40 Gbps. Between pods a flow takes the core switch chosen
  by hashing its two edge switches (ECMP).
- ``vl2`` (k aggregation switches, default 20): k/2 intermediate switches, k^2/4 ToR switches of
  20 servers (2000 servers for k = 20). Each ToR connects to one aggregation switch, k/4 ToRs per
  aggregation switch, and every aggregation switch to every intermediate one; a partition is one
  aggregation switch with its ToRs (the paper: 1 aggregation switch, 5 ToRs, 100 servers).
  Bandwidths 1, 10, 10 Gbps; the intermediate switch is chosen by hash as in the fat-tree.
- ``racks`` (k racks of n servers, default k = 2, n = 6: seed 001's Kubernetes testbed of 12
  servers, Sec. VII-A, with one scheduler per rack of 6 as there): each rack's servers hang off
  one top-of-rack switch, the racks off one spine; a partition is a rack. The testbed's servers
  have 50 Gbps NICs (g4dn.12xlarge); the ToR-spine link bundles n of them (non-blocking, our
  choice: the paper does not describe the EKS network). Nodes of a Kubernetes cluster drawn
  with one level of racks map onto it (:mod:`tjap.k8s.interference`).
- ``bcube`` (BCube_k with n-port switches, default k = 3, n = 6): n^(k+1) servers (1296), each with
  k + 1 ports, one to a switch of each level; server-centric routing corrects the address digits
  from the highest level down, relaying through servers. Port bandwidths per level 10, 20, 40, 40
  Gbps (the paper gives three values for four levels; levels 2 and 3 share the last). A partition is
  two BCube_1 (2 n^2 servers: 18 schedulers), or one BCube_1 when n^(k-1) is odd.

Server architectures (Sec. VI-A and VI-C): ``pcie`` (IBM Power8-like: 2 sockets of 8 cores, 2 GPUs
each), ``dgx1`` (2 sockets of 16 cores, 4 GPUs each), ``hetcpu`` (one socket of 16 cores with 4 GPUs,
one of 8 cores with 2 GPUs) and ``mixed`` (per partition 20 % servers of 1 socket of 8 cores with 2
GPUs, 40 % ``pcie``, 40 % ``dgx1``, interleaved by server index). PCIe links carry 128 Gbps between
a GPU group and its socket; sockets are joined by QPI at 300 Gbps.

Link ids: ``[0, G)`` the PCIe link of each GPU group, ``[G, G + S)`` the QPI link of each server,
then the network links. A worker-PS flow between groups a and b uses PCIe(a) [, QPI, ] PCIe(b) in
one server, or PCIe(a), the network path between their servers, PCIe(b) across servers
(:func:`tjap.placement.interference._kernels.fill_path`). The hot state lives in arrays; ``graph`` is the
same network as a :class:`networkx.Graph` (for drawing and for graph encoders).
"""

from __future__ import annotations

import functools

import networkx as nx
import numpy as np

from tjap.core.errors import InvalidInputError, check_int

TOPOLOGIES = ("fattree", "vl2", "bcube", "racks")
ARCHS = ("pcie", "dgx1", "hetcpu", "mixed")
#: Default size parameter k per topology (BCube and racks also take n).
DEFAULT_K = {"fattree": 20, "vl2": 20, "bcube": 3, "racks": 2}
#: The partition a cluster-scope scheduler places on: the whole cluster.
CLUSTER = -1
PCIE_GBPS = 128.0
QPI_GBPS = 300.0
#: Network bandwidth per tier (Gbps), bottom tier first.
TIER_GBPS = {
    "fattree": (10.0, 20.0, 40.0),
    "vl2": (1.0, 10.0, 10.0),
    "bcube": (10.0, 20.0, 40.0),
    "racks": (50.0, 50.0),  # per server NIC; the rack uplink bundles n of them
}
#: Server types: sockets as (physical cores, GPUs).
SERVER_TYPES = {
    "pcie": ((8, 2), (8, 2)),
    "dgx1": ((16, 4), (16, 4)),
    "hetcpu": ((16, 4), (8, 2)),
    "small": ((8, 2),),
}
#: Path kinds of the kernels: tree topologies route through a ToR-pair table, BCube by digits.
KIND_TREE, KIND_BCUBE = 0, 1


def _frozen(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    a.setflags(write=False)
    return a


def _two_tier_routes(group_of_tor: np.ndarray, up_base: int, top_base: int, tops: int) -> tuple:
    """``(paths, length)`` between ToRs of a two-tier tree: ToRs of one group meet at their
    group switch (up link ``up_base + tor`` each way); ToRs of two groups cross one of the
    ``tops`` top switches, picked by a fixed hash of the pair (links ``top_base + group * tops
    + top``). ``paths[a, b]`` holds the link ids (-1 padded), ``length[a, b]`` their count."""
    n = len(group_of_tor)
    paths = np.full((n, n, 4), -1, np.int64)
    length = np.zeros((n, n), np.int64)
    for a in range(n):
        for b in range(n):
            if a == b:
                continue
            ga, gb = group_of_tor[a], group_of_tor[b]
            if ga == gb:
                route = [up_base + a, up_base + b]
            else:
                c = (min(a, b) * 7 + max(a, b)) % tops
                route = [
                    up_base + a,
                    top_base + ga * tops + c,
                    top_base + gb * tops + c,
                    up_base + b,
                ]
            paths[a, b, : len(route)] = route
            length[a, b] = len(route)
    return paths, length


class Cluster:
    """Servers, GPU groups, links and partitions of one cluster (build with :func:`make_cluster`).

    Arrays (read-only), per GPU group g: ``group_server``, ``group_gpus``, ``group_cores``
    (physical cores of the socket), ``group_partition``; per server s: ``server_partition``,
    ``server_first_group``, ``server_groups`` (1 or 2); per link: ``link_gbps``, ``link_tier``
    (0 PCIe, 1 QPI, 2.. network tiers bottom-up). Partition p's groups are
    ``partition_groups[p]``. Path data: ``kind``, ``server_tor``, ``nic_link``, ``tor_path``,
    ``tor_path_len`` (trees), ``bcube_n``, ``bcube_levels``, ``port_base`` (BCube).
    """

    def __init__(self, topology: str, k: int, arch: str, n: int = 6):
        if topology not in TOPOLOGIES:
            raise InvalidInputError(
                f"unknown topology {topology!r}; choose one of {', '.join(TOPOLOGIES)}"
            )
        if arch not in ARCHS:
            raise InvalidInputError(
                f"unknown server architecture {arch!r}; choose one of {', '.join(ARCHS)}"
            )
        for name, value in (("k", k), ("n", n)):
            check_int(f"{topology} {name}", value)
        self.topology, self.k, self.arch = topology, int(k), arch
        self.n = int(n) if topology in ("bcube", "racks") else 0
        self.name = f"{topology}-k{self.k}" + (f"-n{self.n}" if self.n else "") + f"-{arch}"
        builder = {
            "fattree": self._fattree,
            "vl2": self._vl2,
            "bcube": self._bcube,
            "racks": self._racks,
        }[topology]
        partition, net_gbps, net_tier, edges = builder()
        self._servers(partition)
        self._links(net_gbps, net_tier, edges)

    # -- topologies: each returns server partitions, network link bandwidths/tiers, link ends --
    def _fattree(self):
        k = self.k
        if k < 2 or k % 2 or k > 64:
            raise InvalidInputError(f"fattree k must be an even integer in [2, 64], got {k}")
        half = k // 2
        pods, edges_per_pod, per_edge, cores = k, half, half, half * half
        num_servers = pods * edges_per_pod * per_edge
        tor_of = np.arange(num_servers) // per_edge
        pod_of_tor = np.arange(pods * edges_per_pod) // edges_per_pod
        t1, t2, t3 = TIER_GBPS["fattree"]
        # network link ids (relative): server-edge s; edge-agg(pod) e; agg(pod)-core (p, c)
        n_tor = pods * edges_per_pod
        up_base, core_base = num_servers, num_servers + n_tor
        gbps = [t1] * num_servers + [t2 * half] * n_tor + [t3] * (pods * cores)
        tier = [2] * num_servers + [3] * n_tor + [4] * (pods * cores)
        # node names for the graph: servers s, ("edge", e), ("agg", p), ("core", c)
        ends = [(("server", s), ("edge", int(tor_of[s]))) for s in range(num_servers)]
        ends += [(("edge", e), ("agg", int(pod_of_tor[e]))) for e in range(n_tor)]
        ends += [(("agg", p), ("core", c)) for p in range(pods) for c in range(cores)]
        self._tree(tor_of, *_two_tier_routes(pod_of_tor, up_base, core_base, cores))
        return tor_of // edges_per_pod, gbps, tier, ends

    def _vl2(self):
        k = self.k
        if k < 4 or k % 4 or k > 64:
            raise InvalidInputError(
                f"vl2 k (aggregation switches) must be a multiple of 4 in [4, 64], got {k}"
            )
        aggs, inters, tors, per_tor = k, k // 2, k * k // 4, 20
        tors_per_agg = tors // aggs
        num_servers = tors * per_tor
        tor_of = np.arange(num_servers) // per_tor
        agg_of_tor = np.arange(tors) // tors_per_agg
        t1, t2, t3 = TIER_GBPS["vl2"]
        up_base, int_base = num_servers, num_servers + tors
        gbps = [t1] * num_servers + [t2] * tors + [t3] * (aggs * inters)
        tier = [2] * num_servers + [3] * tors + [4] * (aggs * inters)
        ends = [(("server", s), ("tor", int(tor_of[s]))) for s in range(num_servers)]
        ends += [(("tor", t), ("agg", int(agg_of_tor[t]))) for t in range(tors)]
        ends += [(("agg", a), ("int", i)) for a in range(aggs) for i in range(inters)]
        self._tree(tor_of, *_two_tier_routes(agg_of_tor, up_base, int_base, inters))
        return agg_of_tor[tor_of], gbps, tier, ends

    def _racks(self):
        k, n = self.k, self.n
        if not 1 <= k <= 256 or not 1 <= n <= 256:
            raise InvalidInputError(
                f"racks needs 1 <= k (racks) <= 256 and 1 <= n (servers per rack) <= 256, "
                f"got k={k}, n={n}"
            )
        num_servers = k * n
        tor_of = np.arange(num_servers) // n
        t1, t2 = TIER_GBPS["racks"]
        up_base = num_servers
        gbps = [t1] * num_servers + [t2 * n] * k
        tier = [2] * num_servers + [3] * k
        ends = [(("server", s), ("tor", int(tor_of[s]))) for s in range(num_servers)]
        ends += [(("tor", t), ("spine", 0)) for t in range(k)]
        # every ToR under one spine: ToR pairs meet there (their two uplinks), no top tier
        self._tree(tor_of, *_two_tier_routes(np.zeros(k, np.int64), up_base, up_base + k, 1))
        return tor_of, gbps, tier, ends

    def _bcube(self):
        k, n = self.k, self.n
        if not 1 <= k <= 4 or not 2 <= n <= 16 or n ** (k + 1) > 20000:
            raise InvalidInputError(
                f"bcube needs 1 <= k <= 4, 2 <= n <= 16 and at most 20000 servers, got k={k}, n={n}"
            )
        levels = k + 1
        num_servers = n**levels
        per_partition = 2 * n * n if (n ** (k - 1)) % 2 == 0 else n * n
        gbps_by_level = [TIER_GBPS["bcube"][min(level, 2)] for level in range(levels)]
        gbps = [gbps_by_level[level] for _ in range(num_servers) for level in range(levels)]
        tier = [2 + level for _ in range(num_servers) for level in range(levels)]
        ends = []
        for s in range(num_servers):
            for level in range(levels):
                digits = s // n ** (level + 1) * n**level + s % n**level  # s without digit
                ends.append((("server", s), ("switch", level, digits)))
        self.kind = KIND_BCUBE
        self.bcube_n, self.bcube_levels = n, levels
        self.server_tor = _frozen(np.zeros(num_servers, np.int64))
        self.tor_path = _frozen(np.full((1, 1, 1), -1, np.int64))
        self.tor_path_len = _frozen(np.zeros((1, 1), np.int64))
        self._nic_offset = None
        return np.arange(num_servers) // per_partition, gbps, tier, ends

    def _tree(self, tor_of, paths, length):
        self.kind = KIND_TREE
        self.bcube_n, self.bcube_levels = 0, 0
        self.server_tor = _frozen(tor_of.astype(np.int64))
        self._tor_paths_rel, self.tor_path_len = paths, _frozen(length)

    # -- servers and groups --------------------------------------------------------------------
    def _servers(self, partition: np.ndarray) -> None:
        partition = np.asarray(partition, np.int64)
        self.num_servers = len(partition)
        self.num_partitions = int(partition.max()) + 1
        index_in_partition = np.zeros(self.num_servers, np.int64)
        for p in range(self.num_partitions):
            members = np.flatnonzero(partition == p)
            index_in_partition[members] = np.arange(len(members))
        if self.arch == "mixed":
            kinds = np.array(["small", "pcie", "pcie", "dgx1", "dgx1"])[index_in_partition % 5]
        else:
            kinds = np.full(self.num_servers, self.arch)
        group_server, gpus, cores, first, count = [], [], [], [], []
        for s, kind in enumerate(kinds):
            first.append(len(group_server))
            count.append(len(SERVER_TYPES[kind]))
            for socket_cores, socket_gpus in SERVER_TYPES[kind]:
                group_server.append(s)
                cores.append(socket_cores)
                gpus.append(socket_gpus)
        self.server_partition = _frozen(partition)
        self.server_kind = _frozen(kinds)
        self.server_first_group = _frozen(np.array(first, np.int64))
        self.server_groups = _frozen(np.array(count, np.int64))
        self.group_server = _frozen(np.array(group_server, np.int64))
        self.group_gpus = _frozen(np.array(gpus, np.int64))
        self.group_cores = _frozen(np.array(cores, np.float64))
        self.group_partition = _frozen(partition[self.group_server])
        self.num_groups = len(group_server)
        self.partition_groups = tuple(
            _frozen(np.flatnonzero(self.group_partition == p)) for p in range(self.num_partitions)
        )

    def _links(self, net_gbps, net_tier, ends) -> None:
        g, s = self.num_groups, self.num_servers
        self.net_base = g + s
        self.link_gbps = _frozen(
            np.concatenate(
                [np.full(g, PCIE_GBPS), np.full(s, QPI_GBPS), np.asarray(net_gbps, float)]
            )
        )
        self.link_tier = _frozen(
            np.concatenate(
                [np.zeros(g, np.int64), np.ones(s, np.int64), np.asarray(net_tier, np.int64)]
            )
        )
        self.num_links = len(self.link_gbps)
        if self.kind == KIND_TREE:
            rel = self._tor_paths_rel
            self.tor_path = _frozen(np.where(rel >= 0, rel + self.net_base, -1))
            self.nic_link = _frozen(self.net_base + np.arange(s, dtype=np.int64))
            self.port_base = 0
            del self._tor_paths_rel
        else:
            self.nic_link = _frozen(np.zeros(s, np.int64))
            self.port_base = self.net_base
        self._net_ends = ends

    # -- queries ---------------------------------------------------------------------------------
    @functools.cached_property
    def graph(self) -> nx.Graph:
        """The network with servers expanded into sockets: nodes ("group", g), ("server", s) for
        the QPI hub, switches; edges carry ``link``, ``gbps`` and ``tier``."""
        graph = nx.Graph()
        for gid in range(self.num_groups):
            graph.add_edge(
                ("group", gid),
                ("server", int(self.group_server[gid])),
                link=gid,
                gbps=PCIE_GBPS,
                tier=0,
            )
        for i, (a, b) in enumerate(self._net_ends):
            link = self.net_base + i
            graph.add_edge(
                a, b, link=link, gbps=float(self.link_gbps[link]), tier=int(self.link_tier[link])
            )
        return graph

    def path(self, group_a: int, group_b: int) -> np.ndarray:
        """Link ids of the worker-PS path between two GPU groups."""
        from tjap.placement.interference import _kernels as kern

        for g in (group_a, group_b):
            check_int("group", g, 0, self.num_groups - 1)
        out = np.empty(self.max_path_len, np.int64)
        count = kern.fill_path(int(group_a), int(group_b), *self.path_arrays(), out)
        return out[:count].copy()

    @property
    def max_path_len(self) -> int:
        """Most links a group-to-group path can have."""
        if self.kind == KIND_TREE:
            return 4 + self.tor_path.shape[2]
        return 2 + 2 * self.bcube_levels

    def path_arrays(self) -> tuple:
        """The arguments :func:`~tjap.placement.interference._kernels.fill_path` takes after the two
        groups (one tuple, in order)."""
        return (
            self.group_server,
            self.num_groups,
            self.kind,
            self.server_tor,
            self.nic_link,
            self.tor_path,
            self.tor_path_len,
            self.bcube_n,
            self.bcube_levels,
            self.port_base,
        )

    @property
    def total_gpus(self) -> int:
        return int(self.group_gpus.sum())

    def describe(self) -> dict:
        return {
            "name": self.name,
            "topology": self.topology,
            "k": self.k,
            "arch": self.arch,
            "servers": self.num_servers,
            "gpu_groups": self.num_groups,
            "gpus": self.total_gpus,
            "partitions": self.num_partitions,
            "links": self.num_links,
        }

    def __repr__(self) -> str:
        return (
            f"Cluster({self.name!r}, {self.num_servers} servers, {self.total_gpus} GPUs, "
            f"{self.num_partitions} partitions)"
        )


@functools.lru_cache(maxsize=16)
def make_cluster(
    topology: str = "fattree", k: int | None = None, arch: str = "pcie", n: int = 6
) -> Cluster:
    """A cluster (cached): ``topology`` in :data:`TOPOLOGIES`, size ``k`` (default per topology:
    fattree 20, vl2 20, bcube 3, racks 2), ``arch`` in :data:`ARCHS`, BCube switch ports ``n``
    (racks: servers per rack).

    >>> make_cluster().describe()["servers"]
    2000
    """
    if topology not in TOPOLOGIES:
        raise InvalidInputError(
            f"unknown topology {topology!r}; choose one of {', '.join(TOPOLOGIES)}"
        )
    return Cluster(topology, DEFAULT_K[topology] if k is None else k, arch, n)
