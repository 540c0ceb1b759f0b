"""The audit of a Kueue cluster as one web page: :func:`write_report` writes ``out_dir/index.html``
from :func:`tjap.k8s.audit.audit_cluster`'s result (``tjap k8s audit --report DIR``).

Like the Slurm audit's page (:mod:`tjap.slurm.audit_report`, whose style, tables, plots and tree
drawing it uses), it opens from disk, loads nothing and runs no script: the headline numbers,
the workloads not audited and why, Kueue's cost per workload against the optimum, the bound and
the floor, the workloads with the most removable cost drawn on the cluster's tree, every
workload where a re-implementation of Kueue chose other nodes than Kueue, and the table of all
audited workloads (capped at :data:`MAX_ROWS`). Every text from the cluster is escaped.
"""

from __future__ import annotations

from pathlib import Path

from tjap.slurm.audit_report import (
    COLOURS,
    MEANINGS,
    STYLE,
    _e,
    _footer,
    _number,
    _percent,
    _plt,
    _png,
    _table,
    switch_tree_svg,
    write_page,
)

#: The most workloads the page's full table lists ("and N more" after).
MAX_ROWS = 500
#: How many of the workloads with the most removable cost are drawn.
WORST = 5


def write_report(result, out_dir) -> Path:
    """Write the page of ``result`` (a :class:`~tjap.k8s.audit.KueueAudit`) to
    ``out_dir/index.html`` (the folder made when missing); returns its path."""
    return write_page(out_dir, lambda: report_html(result))


def _hostlist(names) -> str:
    from tjap.placement.tree.hostlist import compress_hostlist

    return compress_hostlist(list(names)) if names else ""


def report_html(result) -> str:
    """The page of :func:`write_report` as one HTML string."""
    from tjap.k8s.audit import PROFILES, REASONS

    data = result.to_dict()
    s, jobs, tree = data["summary"], data.get("jobs", []), result.tree
    parts = [
        "<h1>What Kueue's placements cost</h1>",
        f'<p class="sub">{data["cluster"]["nodes"]:,} nodes, levels '
        f"{_e(', '.join(data['cluster']['levels']))}; {data['options']['workloads']:,} "
        f"Workloads read, {s['jobs']:,} audited (of at least {data['options']['min_nodes']} "
        f"pods, placed by Kueue's topology-aware scheduling)</p>",
    ]
    if s["jobs"]:
        cards = [
            (_number(s["cost"]), "Kueue's placements (cost)"),
            (_number(s["optimum"]), "the optimum of each job at its admission"),
            (_percent(s["optimum_saving"]), "less with the optimum"),
            (f"{s['cheaper_than_kueue']:,} of {s['jobs']:,}", "jobs the optimum places cheaper"),
            (_number(s["bound"]), "the free-form bound"),
            (_number(s["floor"]), "the empty cluster's floor"),
        ] + [(_percent(s["fidelity"][p]), f"fidelity of {p}") for p in PROFILES]
        parts.append(
            '<div class="cards">'
            + "".join(f"<div class='card'><b>{v}</b><span>{_e(t)}</span></div>" for v, t in cards)
            + "</div>"
        )
        parts.append(
            '<p class="lead">Cost is the window objective of each job alone: the CH cost of its '
            "nodes, plus the preference term where it prefers a level. The free nodes at an "
            "admission are rebuilt from the Workloads' admission and finish times; fidelity is "
            "how often tjap's re-implementation of Kueue's algorithm, given those free nodes, "
            "chose the nodes Kueue chose.</p>"
        )
    skipped = data.get("skipped") or {}
    if skipped:
        parts.append("<h2>Not audited</h2>")
        parts.append(
            _table(
                ["reason", "workloads", "meaning"],
                [[_e(k), f"{v:,}", _e(REASONS.get(k, ""))] for k, v in sorted(skipped.items())],
                text_columns=(0, 2),
            )
        )
    if jobs:
        parts += [_cost_plot(jobs), _worst(jobs, tree), _differing(jobs, PROFILES), _all(jobs)]
    parts.append(_footer())
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        "<title>tjap k8s audit</title>"
        f"<style>{STYLE}</style></head>\n<body><main>\n"
        + "\n".join(parts)
        + "\n</main></body></html>\n"
    )


def _cost_plot(jobs) -> str:
    plt = _plt()
    fig, ax = plt.subplots(figsize=(9, 3.4))
    x = range(len(jobs))
    for key, label, style in (
        ("cost", "Kueue", "o"),
        ("optimum", "optimum", "s"),
        ("bound", "free-form bound", "^"),
        ("floor", "empty-cluster floor", "_"),
    ):
        ax.plot(x, [j[key] for j in jobs], style, ms=4, label=label, alpha=0.8)
    ax.set_xlabel("workload, in admission order")
    ax.set_ylabel("cost")
    ax.legend(frameon=False, fontsize=9, ncol=4)
    return "<h2>Cost per workload</h2>" + _png(fig)


def _worst(jobs, tree) -> str:
    gaps = sorted(range(len(jobs)), key=lambda i: (-(jobs[i]["cost"] - jobs[i]["optimum"]), i))
    top = [i for i in gaps[:WORST] if jobs[i]["cost"] - jobs[i]["optimum"] > 1e-9]
    if not top:
        return "<h2>The costliest choices</h2><p>Kueue's choice was optimal for every workload.</p>"
    meanings = {**MEANINGS, "job": "Kueue's nodes", "busy": "busy with other workloads then"}
    legend = (
        '<p class="legend">'
        + "".join(
            f'<span><i style="background:{COLOURS[k]}"></i>{_e(meanings[k])}</span>'
            for k in COLOURS
        )
        + "</p>"
    )
    out = ["<h2>The costliest choices</h2>", legend]
    for i in top:
        j = jobs[i]
        svg = switch_tree_svg(
            tree, _hostlist(j["nodes"]), _hostlist(j["optimum_nodes"]), _hostlist(j["busy"])
        )
        facts = _table(
            ["", ""],
            [
                ["workload", _e(j["workload"])],
                ["admitted", _e(j["admitted"])],
                ["pods", f"{j['size']:,}"],
                ["request", _e(_request(j["request"]))],
                ["Kueue's cost", _number(j["cost"])],
                ["optimum", _number(j["optimum"])],
                ["Kueue's nodes", _e(_hostlist(j["nodes"]))],
                ["optimum's nodes", _e(_hostlist(j["optimum_nodes"]))],
            ],
            text_columns=(0, 1),
        )
        out.append(f'<div class="worst">{svg}{facts}</div>')
    return "\n".join(out)


def _request(job: dict) -> str:
    parts = []
    if "within" in job:
        parts.append(f"required {job['within']}")
    if "prefer" in job:
        parts.append(f"preferred {job['prefer']}")
    if "segment" in job:
        parts.append(f"slices of {job['segment']} in {job['segment_level']}")
    return ", ".join(parts) or "unconstrained"


def _differing(jobs, profiles) -> str:
    out = [
        "<h2>Where a re-implementation chose other nodes</h2>",
        '<p class="note">Kubernetes records admissions and finishes to the second: "the same in '
        "another order of its second\" means the re-implementation chooses Kueue's nodes when "
        "a workload admitted (or finished) in that same second is taken as running at its "
        "admission.</p>",
    ]
    for p in profiles:
        rows = [j for j in jobs if not j[p]["same"]]
        if not rows:
            out.append(f"<p>{_e(p)}: the same nodes as Kueue on every workload.</p>")
            continue
        out.append(f"<h3>{_e(p)}: {len(rows):,} of {len(jobs):,}</h3>")
        out.append(
            _table(
                [
                    "workload",
                    "Kueue's nodes",
                    f"{p}'s nodes",
                    "Kueue's cost",
                    f"{p}'s cost",
                    "the same in another order of its second",
                ],  # fmt: skip
                [
                    [
                        _e(j["workload"]),
                        _e(_hostlist(j["nodes"])),
                        _e(_hostlist(j[p]["nodes"])),
                        _number(j["cost"]),
                        _number(j[p]["cost"]),
                        "yes" if j[p]["same_in_another_order"] else "no",
                    ]  # fmt: skip
                    for j in rows[:MAX_ROWS]
                ],
                text_columns=(0,),
                hosts_columns=(1, 2),
            )
        )
    return "\n".join(out)


def _all(jobs) -> str:
    rows = [
        [
            _e(j["workload"]),
            _e(j["admitted"][11:19]),
            f"{j['size']:,}",
            _e(_request(j["request"])),
            _number(j["cost"]),
            _number(j["optimum"]),
            _number(j["bound"]),
            _number(j["floor"]),
            *("yes" if j[p]["same"] else "no" for p in ("kueue-bestfit", "kueue-leastfree")),
        ]  # fmt: skip
        for j in jobs[:MAX_ROWS]
    ]
    more = f"<p class='note'>and {len(jobs) - MAX_ROWS:,} more</p>" if len(jobs) > MAX_ROWS else ""
    return (
        "<h2>Every audited workload</h2>"
        + _table(
            [
                "workload",
                "admitted (UTC)",
                "pods",
                "request",
                "cost",
                "optimum",
                "bound",
                "floor",
                "bestfit same",
                "leastfree same",
            ],  # fmt: skip
            rows,
            text_columns=(0, 1, 3),
        )
        + more
    )
