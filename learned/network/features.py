"""What the learned allocator sees (seed 003): one row of features per node of the topology
(servers, then tier-1, tier-2 and tier-3 switches, in the DataCentre's node-id order) and one last
row of request and global features, filled by one Numba kernel from the engine's arrays. The
gymnasium environment and the ``gnn`` server policy both call :meth:`FeatureBuilder.observe`, so
training and inference see the same numbers.

Everything is local or a ratio, so the same weights read a 64- or a 1024-server topology
(size-agnostic). Resources are over one server's capacity (the paper normalises them by the
request; we keep both what a server has and what it would give now); channels as the fraction free
and, so that one model can serve the nine channel counts, as free channels / 32.

Ours, not the paper's: ``connectable`` (1 where the server is allowed by the engine's mask *and*
the engine's routing would connect it to every server already chosen right now: a one-step
look-ahead through the path kernel; the action mask itself stays the engine's) and the rack /
cluster flags of the chosen servers (the 3-layer GNN cannot see 4 hops, server - rack - tier-2 -
rack - server).
"""

from __future__ import annotations

import math

import numpy as np

from tjap.core.errors import InvalidInputError
from tjap.core.jit import njit
from tjap.placement.network import _kernels as kern
from tjap.placement.network.engine import ROUTINGS, Engine
from tjap.placement.network.requests import holding_max
from tjap.placement.network.topology import DataCentre

NODE_FEATURES = (
    "is_server",
    "is_tier1",
    "is_tier2",
    "is_tier3",
    "free_cpu",
    "free_mem",
    "give_cpu",
    "give_mem",
    "up_free_frac",
    "up_free_abs",
    "down_free_frac",
    "down_free_abs",
    "chosen",
    "connectable",
    "rack_has_chosen",
    "cluster_has_chosen",
)
GLOBAL_FEATURES = (
    "need_cpu",
    "need_mem",
    "request_cpu",
    "request_mem",
    "holding",
    "util_cpu",
    "util_mem",
    "chosen_count",
    "servers_needed",
    "util_tier1",
    "util_tier2",
    "util_tier3",
    "channels_tier1",
    "channels_tier2",
    "channels_tier3",
    "connectable_share",
)
WIDTH = len(NODE_FEATURES)
assert len(GLOBAL_FEATURES) == WIDTH
#: Column of the chosen flag (the network's mean-of-chosen embedding reads it).
CHOSEN = NODE_FEATURES.index("chosen")
#: Channel scale of the absolute features and request scale (the paper: up to 8 servers).
CHANNEL_SCALE, REQUEST_SERVERS = 32.0, 8.0


def feature_spec() -> dict:
    """The feature layout, stored with trained weights (a change of layout changes its hash)."""
    return {
        "node_features": list(NODE_FEATURES),
        "global_features": list(GLOBAL_FEATURES),
        "layout": "(nodes + 1) x width: node rows in topology node-id order, then one "
        "request/global row",
        "channel_scale": CHANNEL_SCALE,
        "request_servers": REQUEST_SERVERS,
        "version": 1,
    }


class FeatureBuilder:
    """Builds observations for one topology (static parts precomputed once)."""

    def __init__(self, topology: DataCentre, *, max_servers: int = 8, load: float = 0.95):
        if not isinstance(topology, DataCentre):
            raise InvalidInputError(
                "topology must be a tjap.placement.network.DataCentre, "
                f"got {type(topology).__name__}"
            )
        t = topology
        self.topology = t
        self.num_nodes = t.graph.number_of_nodes()
        self.h_max = holding_max(t, max_servers, load)
        tier = np.array([t.graph.nodes[v]["tier"] for v in range(self.num_nodes)], np.int64)
        self.node_tier = tier
        # lower and upper end of every link (ends are stored lower tier first)
        ends = np.asarray(t.link_ends)
        swap = tier[ends[:, 0]] > tier[ends[:, 1]]
        self.link_lower = np.where(swap, ends[:, 1], ends[:, 0]).astype(np.int64)
        self.link_upper = np.where(swap, ends[:, 0], ends[:, 1]).astype(np.int64)
        # rack of tier-1 switches, cluster of tier-1 and tier-2 switches (-1 elsewhere)
        rack = np.full(self.num_nodes, -1, np.int64)
        cluster = np.full(self.num_nodes, -1, np.int64)
        rack[: t.num_servers] = t.rack_of
        cluster[: t.num_servers] = t.cluster_of
        for r, node in enumerate(t.tier1_nodes):
            rack[node], cluster[node] = r, r // t.racks_per_cluster
        for i, node in enumerate(t.tier2_nodes):
            cluster[node] = i // t.tier2_per_cluster
        self.node_rack, self.node_cluster = rack, cluster
        self.capacity = np.ascontiguousarray(t.link_capacity, dtype=np.float64)
        self.tier_capacity = t.tier_capacity().astype(np.float64)
        self._scratch_links = np.empty(t.num_servers * (t.rack_paths.shape[3] + 2), np.int64)
        self._scratch_paths = np.empty(t.num_servers, np.int64)

    @property
    def shape(self) -> tuple[int, int]:
        return self.num_nodes + 1, WIDTH

    def observe(self, engine: Engine, out: np.ndarray | None = None) -> np.ndarray:
        """The observation of ``engine``'s current state, float32 of :attr:`shape` (written into
        ``out`` when given). Without a request being served, the request row is zero."""
        t = self.topology
        if engine.topology is not t and engine.topology.num_servers != t.num_servers:
            raise InvalidInputError("the engine runs another topology than this FeatureBuilder's")
        if out is None:
            out = np.empty(self.shape, np.float32)
        if engine.request is None:
            req_cpu = req_mem = holding = 0
        else:
            req_cpu, req_mem, holding = engine.request
        chosen = np.asarray(engine.chosen, np.int64)
        _fill(
            out,
            engine.free_cpu,
            engine.free_mem,
            engine.need_cpu,
            engine.need_mem,
            req_cpu,
            req_mem,
            holding / self.h_max,
            engine.free_channels,
            self.capacity,
            self.tier_capacity,
            t.link_tier,
            self.link_lower,
            self.link_upper,
            self.node_tier,
            self.node_rack,
            self.node_cluster,
            t.num_servers,
            t.num_racks,
            t.clusters,
            float(t.server_cpu),
            float(t.server_mem),
            chosen,
            engine.mask(),
            t.rack_of,
            t.rack_paths,
            t.rack_path_len,
            t.rack_path_count,
            ROUTINGS[engine.routing],
            self._scratch_links,
            self._scratch_paths,
            float(t.channels[0]),
            float(t.channels[1]),
            float(t.channels[2]),
        )
        return out


@njit
def _fill(
    out,
    free_cpu,
    free_mem,
    need_cpu,
    need_mem,
    req_cpu,
    req_mem,
    holding_frac,
    free_channels,
    capacity,
    tier_capacity,
    link_tier,
    link_lower,
    link_upper,
    node_tier,
    node_rack,
    node_cluster,
    num_servers,
    num_racks,
    num_clusters,
    server_cpu,
    server_mem,
    chosen,
    mask,
    rack_of,
    rack_paths,
    rack_path_len,
    rack_path_count,
    routing,
    scratch_links,
    scratch_paths,
    c1,
    c2,
    c3,
):
    num_nodes = out.shape[0] - 1
    out[:] = 0.0
    # link aggregates: mean free fraction / free channels of each node's up- and down-links
    up_frac = np.zeros(num_nodes)
    up_abs = np.zeros(num_nodes)
    up_n = np.zeros(num_nodes)
    down_frac = np.zeros(num_nodes)
    down_abs = np.zeros(num_nodes)
    down_n = np.zeros(num_nodes)
    used_tier = np.zeros(3)
    for link in range(free_channels.shape[0]):
        free = free_channels[link]
        frac = free / capacity[link]
        lo, hi = link_lower[link], link_upper[link]
        up_frac[lo] += frac
        up_abs[lo] += free
        up_n[lo] += 1
        down_frac[hi] += frac
        down_abs[hi] += free
        down_n[hi] += 1
        used_tier[link_tier[link] - 1] += capacity[link] - free
    # rack / cluster of the chosen servers
    n_chosen = chosen.shape[0]
    rack_chosen = np.zeros(num_racks, np.bool_)
    cluster_chosen = np.zeros(num_clusters, np.bool_)
    for i in range(n_chosen):
        rack_chosen[node_rack[chosen[i]]] = True
        cluster_chosen[node_cluster[chosen[i]]] = True
    # one-step look-ahead: can each allowed server be connected to the chosen ones now?
    free = free_channels.copy()
    allowed = 0
    reachable = 0
    for v in range(num_servers):
        if not mask[v]:
            continue
        allowed += 1
        ok = True
        if n_chosen > 0:
            count = kern.connect(
                v,
                chosen,
                n_chosen,
                rack_of,
                rack_paths,
                rack_path_len,
                rack_path_count,
                capacity,
                free,
                routing,
                scratch_paths,
                scratch_links,
                scratch_paths,
            )
            if count < 0:
                ok = False
            else:
                kern.release(free, scratch_links, count)
        if ok:
            out[v, 13] = 1.0
            reachable += 1
    total_cpu = 0.0
    total_mem = 0.0
    for v in range(num_nodes):
        tier = node_tier[v]
        out[v, tier] = 1.0
        if tier == 0:
            out[v, 4] = free_cpu[v] / server_cpu
            out[v, 5] = free_mem[v] / server_mem
            out[v, 6] = min(free_cpu[v], need_cpu) / server_cpu
            out[v, 7] = min(free_mem[v], need_mem) / server_mem
            total_cpu += free_cpu[v]
            total_mem += free_mem[v]
        if up_n[v] > 0:
            out[v, 8] = up_frac[v] / up_n[v]
            out[v, 9] = up_abs[v] / up_n[v] / 32.0
        if down_n[v] > 0:
            out[v, 10] = down_frac[v] / down_n[v]
            out[v, 11] = down_abs[v] / down_n[v] / 32.0
        if node_rack[v] >= 0 and rack_chosen[node_rack[v]]:
            out[v, 14] = 1.0
        if node_cluster[v] >= 0 and tier < 3 and cluster_chosen[node_cluster[v]]:
            out[v, 15] = 1.0
    for i in range(n_chosen):
        out[chosen[i], 12] = 1.0
    g = out[num_nodes]
    g[0] = need_cpu / (8.0 * server_cpu)
    g[1] = need_mem / (8.0 * server_mem)
    g[2] = req_cpu / (8.0 * server_cpu)
    g[3] = req_mem / (8.0 * server_mem)
    g[4] = holding_frac
    g[5] = 1.0 - total_cpu / (num_servers * server_cpu)
    g[6] = 1.0 - total_mem / (num_servers * server_mem)
    g[7] = n_chosen / 8.0
    g[8] = math.ceil(max(need_cpu / server_cpu, need_mem / server_mem)) / 8.0
    for t in range(3):
        g[9 + t] = used_tier[t] / tier_capacity[t]
    g[12] = c1 / 32.0
    g[13] = c2 / 128.0
    g[14] = c3 / 64.0
    g[15] = reachable / allowed if allowed > 0 else 0.0
    return out
