"""The audit as one web page: :func:`write_report` writes ``out_dir/index.html`` from an audit's
result (``tjap audit RECORDS --topology FILE --report DIR``).

The page is for the site's administrator and opens from disk in any browser: its style is inline,
its plots are PNG images inside the page (matplotlib's Agg backend), its switch-tree drawings are
inline SVG; it loads nothing from anywhere and runs no script. It shows the records and options
read, the headline numbers, the records left out and why, the cost over time and by job size,
tables by size class, partition and week, the jobs with the most removable cost drawn on the
switch tree, and the jobs where Slurm's topology/tree choice (recomputed) differs from the nodes
recorded. It summarises, so it stays small for an audit of a million jobs: the per-job scatter
is one image of at most :data:`MAX_POINTS` points, every table is a summary or capped.

Every text that comes from the records (job ids, partitions, node names) is escaped.
"""

from __future__ import annotations

import base64
import html
import io
import math
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import numpy as np

from tjap.core.errors import InvalidInputError, is_int

#: The most jobs the scatter of cost over time draws; more are sampled evenly (the page says so).
MAX_POINTS = 50_000
#: The most jobs listed where slurm-tree differs from the recorded choice ("and N more" after).
MAX_DIFFERING = 50
#: Trees of up to this many nodes are drawn whole; larger ones only where the job's and the
#: optimum's nodes are (their leaf switches and the switches above them).
WHOLE_TREE_NODES = 128

# colour-blind safe (Okabe and Ito): the job's nodes, the optimum's, both, busy, idle
COLOURS = {
    "job": "#d55e00",
    "opt": "#0072b2",
    "both": "#cc79a7",
    "busy": "#8c8c8c",
    "idle": "#ffffff",
}
MEANINGS = {
    "job": "the job's nodes (as recorded)",
    "opt": "the optimum's nodes",
    "both": "in both",
    "busy": "busy with other jobs at its start",
    "idle": "idle",
}

STYLE = """
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, Helvetica, Arial,
       sans-serif; color: #1d1d1f; margin: 0; background: #f6f7f9; }
main { max-width: 1120px; margin: 0 auto; padding: 24px 28px 48px; background: #fff; }
h1 { font-size: 26px; margin: 0 0 4px; }
h2 { font-size: 20px; margin: 36px 0 8px; border-bottom: 1px solid #dde1e6; padding-bottom: 4px; }
h3 { font-size: 16px; margin: 20px 0 6px; }
p.sub { color: #555; margin: 0 0 16px; }
p.interrupted { background: #fff3cd; border: 1px solid #e0b000; padding: 8px 12px; margin: 0 0 16px; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; margin: 8px 0; }
dl.facts dt { color: #555; } dl.facts dd { margin: 0; overflow-wrap: anywhere; }
.cards { display: flex; flex-wrap: wrap; gap: 12px; margin: 16px 0; }
.card { flex: 1 1 160px; border: 1px solid #dde1e6; border-radius: 6px; padding: 10px 14px; }
.card b { display: block; font-size: 24px; } .card span { color: #555; font-size: 13px; }
p.lead { font-size: 16px; max-width: 60em; }
table { border-collapse: collapse; margin: 8px 0 16px; font-size: 14px; }
th, td { padding: 3px 10px; border-bottom: 1px solid #e6e8eb; text-align: right;
  vertical-align: top; } th { background: #f0f2f5; }
td.text, th.text { text-align: left; } td.hosts { text-align: left; overflow-wrap: anywhere;
  max-width: 26em; font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 13px; }
td:first-child, .nw { white-space: nowrap; }
.scroll { overflow-x: auto; max-width: 100%; }
img.plot { max-width: 100%; height: auto; display: block; margin: 8px 0; }
p.note { color: #555; font-size: 13px; }
.worst { display: flex; flex-wrap: wrap; gap: 16px; align-items: flex-start;
  border: 1px solid #e6e8eb; border-radius: 6px; padding: 10px; margin: 12px 0; }
.worst svg { flex: 0 1 auto; max-width: 100%; height: auto; }
.worst table { margin: 0; flex: 1 1 260px; }
.legend span { display: inline-block; margin-right: 16px; font-size: 13px; }
.legend i { display: inline-block; width: 11px; height: 11px; border: 1px solid #555;
  margin-right: 5px; vertical-align: -1px; }
"""


# ---------------------------------------------------------------------------- the page


def write_report(result, topology, out_dir) -> Path:
    """Write the audit's report page, ``out_dir/index.html``; returns its path.

    Parameters
    ----------
    result : AuditResult or dict
        What ``tjap.audit(...)`` returned, or its ``to_dict()`` (the JSON ``tjap audit --json``
        prints).
    topology : Topology
        The switch tree the audit ran on (the worst jobs are drawn on it).
    out_dir : str or Path
        The folder to write to; created (with its parents) when missing.

    Raises
    ------
    InvalidInputError
        ``out_dir`` is a file, or ``result`` is not an audit's result.
    """
    data = _as_dict(result)
    return write_page(out_dir, lambda: report_html(data, topology))


def write_page(out_dir, html_text) -> Path:
    """Write the page ``html_text()`` returns as ``out_dir/index.html`` (the folder made when
    missing; a file there is an :class:`InvalidInputError`), through ``index.html.partial`` so
    that a page cut short by a signal never looks whole; returns its path."""
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise InvalidInputError(
            f"report folder {str(out_dir)!r} is a file; give a folder (it is created when missing)"
        )
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "index.html"
    partial = out_dir / "index.html.partial"
    partial.write_text(html_text(), encoding="utf-8")
    partial.replace(path)
    return path


def report_html(result, topology) -> str:
    """The report page of :func:`write_report` as one HTML string."""
    data = _as_dict(result)
    summary = data["summary"]
    parts = [_header(data, topology), _headline(summary), _skipped_section(data.get("skipped", {}))]
    if summary.get("jobs"):
        parts += [
            _time_section(data),
            _size_section(summary),
            _tables_section(summary),
            _worst_section(summary.get("worst", []), topology),
            _differing_section(summary, data.get("jobs", [])),
        ]
    parts.append(_footer())
    if data.get("options", {}).get("slurm_rule") == "topology/block":  # a block cluster
        parts = [
            part.replace("topology/tree rule", "topology/block rule")
            .replace("slurm-tree", "slurm-block")
            .replace("Slurm-tree", "Slurm-block")
            for part in parts
        ]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>tjap audit: {_e(data['records'].get('source', ''))}</title>"
        f"<style>{STYLE}</style></head>\n<body><main>\n"
        + "\n".join(parts)
        + "\n</main></body></html>\n"
    )


def _as_dict(result) -> dict:
    if all(hasattr(result, name) for name in ("to_dict", "job", "jobs")):
        return _light(result)
    data = result.to_dict() if hasattr(result, "to_dict") else result
    if not isinstance(data, dict) or not {"records", "summary"} <= set(data):
        raise InvalidInputError(
            f"result must be tjap.audit(...)'s result or its to_dict(), got "
            f"{type(result).__name__}; give the audit's result (or the JSON `tjap audit --json` "
            "prints, read with json.load)"
        )
    return data


def _light(result) -> dict:
    """An :class:`~tjap.slurm.audit.AuditResult` as the page reads it, without writing out every job:
    the figures the scatter needs per job, and whole entries only for the differing jobs the page
    lists and for the first and last (in start order: the span of starts).  A million jobs take
    seconds, not minutes."""
    data = result.to_dict(jobs=False)
    j = result.jobs
    same = np.asarray(j["slurm_tree_same"], dtype=bool)
    listed = set(np.flatnonzero(~same)[:MAX_DIFFERING].tolist()) | {0, same.size - 1}
    columns = zip(
        j["start_s"].tolist(),
        j["cost"].tolist(),
        j["optimum"].tolist(),
        j["floor"].tolist(),
        same.tolist(),
    )
    data["jobs"] = [
        result.job(i)
        if i in listed
        else {"start_s": s, "cost": c, "optimum": o, "floor": f, "slurm_tree_same": t}
        for i, (s, c, o, f, t) in enumerate(columns)
    ]
    return data


# ---------------------------------------------------------------------------- formatting


def _e(value) -> str:
    """``value`` as escaped HTML text."""
    return html.escape(str(value), quote=True)


def _number(x) -> str:
    """A cost or count for people: thousands separated, about three significant digits."""
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "–"
    if is_int(x):
        return f"{int(x):,}"
    x = float(x)
    if x == int(x) and abs(x) < 1e15:
        return f"{int(x):,}"
    if abs(x) >= 100:
        return f"{x:,.0f}"
    return f"{x:.3g}"


def _percent(share) -> str:
    """A share (0.123) as "12.3 %"; "–" when there is none."""
    return "–" if share is None else f"{100 * float(share):.1f} %"


def _above_floor(group: dict, key: str = "cost") -> str:
    """How much ``group[key]`` lies above the floor, in per cent of the floor."""
    floor, value = group.get("floor"), group.get(key)
    if not floor or value is None:
        return "–"
    return f"{100 * (value / floor - 1):.1f} %"


def _when(iso) -> str:
    """An ISO time as "2026-11-02 08:14" (the text itself when it does not read as one)."""
    try:
        return datetime.fromisoformat(str(iso)).strftime("%Y-%m-%d %H:%M")
    except ValueError:
        return str(iso)


def _hosts(text, limit: int = 400) -> str:
    """A hostlist, escaped, shortened to ``limit`` characters."""
    if text is None:
        return "–"
    text = str(text)
    return _e(text if len(text) <= limit else text[:limit] + "…")


LEFT = ' class="text"'


def _table(head: list[str], rows: list[list[str]], text_columns=(0,), hosts_columns=()) -> str:
    """An HTML table of already escaped cells; ``text_columns`` align left."""

    def cls(i):
        return (
            ' class="hosts"'
            if i in hosts_columns
            else (' class="text"' if i in text_columns else "")
        )

    out = ['<div class="scroll"><table><thead><tr>']
    left = set(text_columns) | set(hosts_columns)
    out += [f"<th{LEFT if i in left else ''}>{h}</th>" for i, h in enumerate(head)]
    out.append("</tr></thead><tbody>")
    for row in rows:
        out.append("<tr>" + "".join(f"<td{cls(i)}>{c}</td>" for i, c in enumerate(row)) + "</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


# ---------------------------------------------------------------------------- sections


def _header(data: dict, topology) -> str:
    records, topo = data["records"], data.get("topology", {})
    options, jobs = data.get("options", {}), data.get("jobs", [])
    facts = [
        (
            "Records",
            f"{_e(records.get('source', '?'))} ({_e(records.get('format', '?'))}, "
            f"{_number(records.get('allocations'))} allocations read)",
        ),
        ("Time zone", _e(records.get("timezone", "?"))),
        ("Jobs' starts", _span(jobs)),
        (
            "Topology",
            f"{_e(topo.get('source', ''))} — "
            f"{_number(topo.get('nodes', topology.num_nodes))} nodes, "
            f"{_number(topo.get('switches', topology.num_switches))} switches, "
            f"{_number(topo.get('levels', topology.num_levels))} levels",
        ),
        ("Options", _options(options)),
    ]
    rows = "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in facts)
    stopped = (
        '<p class="interrupted"><strong>Interrupted</strong>: the audit was stopped (Ctrl-C or '
        "SIGTERM) before every job was measured; the figures below are those of the "
        f"{_number(len(jobs) or data.get('summary', {}).get('jobs'))} jobs audited before.</p>"
        if data.get("interrupted")
        else ""
    )
    return (
        f"<h1>Placement audit{' (interrupted)' if data.get('interrupted') else ''}</h1>{stopped}"
        '<p class="sub">The nodes Slurm gave each multi-node job, '
        "against the cheapest nodes idle at its start (the optimum) and the cheapest nodes "
        f'of the empty cluster (the floor).</p><dl class="facts">{rows}</dl>'
    )


def _span(jobs: list) -> str:
    starts = [j for j in jobs if j.get("start_s") is not None]
    if not starts:
        return "–"
    first = min(starts, key=lambda j: j["start_s"])
    last = max(starts, key=lambda j: j["start_s"])
    days = (last["start_s"] - first["start_s"]) / 86400
    return (
        f"{_e(_when(first.get('start', '')))} to {_e(_when(last.get('start', '')))} "
        f"({days:,.1f} days)"
    )


def _options(options: dict) -> str:
    words = [
        f"from {_e(options.get('from') or 'the first record')}",
        f"to {_e(options.get('to') or 'the last record')}",
        f"partition {_e(options.get('partition') or 'all')}",
        f"jobs of at least {_number(options.get('min_nodes', 2))} nodes",
        f"cost convention {_e(options.get('convention', 'paper'))}",
        f"Slurm {_e(options.get('slurm', '22.05'))}'s topology/tree rule"
        if options.get("slurm_rule", "topology/tree") == "topology/tree"
        else "Slurm's topology/block rule",
    ]
    return ", ".join(words)


def _headline(summary: dict) -> str:
    jobs = summary.get("jobs", 0)
    if not jobs:
        return (
            '<h2>Headline</h2><p class="lead">No job was audited: no multi-node job of '
            "the records fell inside the options (see the records left out below).</p>"
        )
    ratio = summary.get("excess_ratio")
    excess = "–" if ratio is None else f"{100 * (ratio - 1):.1f} %"
    differing = len(summary.get("differing_jobs", []))
    differ = f"{differing:,} job differs" if differing == 1 else f"{differing:,} jobs differ"
    cards = [
        (f"{jobs:,}", "jobs audited"),
        (excess, "cost above the floor"),
        (_percent(summary.get("removable_share")), "of that excess the optimum removes"),
        (_percent(summary.get("bound_share")), "the free-form bound removes"),
        (_percent(summary.get("fidelity")), f"slurm-tree equals the record ({differ})"),
    ]
    boxes = "".join(f'<div class="card"><b>{v}</b><span>{_e(k)}</span></div>' for v, k in cards)
    removable = summary.get("removable_share")
    words = [
        f"{jobs:,} multi-node jobs were audited. The nodes Slurm gave them cost "
        f"{excess} more, summed over the jobs, than the floor (the cheapest nodes of the "
        "empty cluster, which no scheduler can beat)."
    ]
    if removable is None:
        words.append("There was no excess to remove.")
    else:
        words.append(
            f"Placing each job on the cheapest run of consecutive idle nodes at its "
            f"start (the optimum) would have removed {_percent(removable)} of that "
            f"excess; the cheapest idle set of any shape (the bound) "
            f"{_percent(summary.get('bound_share'))}. The rest is the price of the "
            "nodes that were busy."
        )
    if summary.get("fidelity") is not None:
        words.append(
            f"Slurm's topology/tree rule, recomputed on the rebuilt idle nodes, gives "
            f"the recorded nodes for {_percent(summary['fidelity'])} of "
            f"{summary.get('fidelity_jobs', jobs):,} jobs; {differ} (listed at the "
            "end)."
        )
    return f'<h2>Headline</h2><div class="cards">{boxes}</div><p class="lead">{" ".join(words)}</p>'


def _reason_meanings() -> dict:
    """The records' reasons and their meanings (the accounting reader's ``REASONS``)."""
    try:
        from tjap.placement.slurm.accounting import REASONS
    except ImportError:
        return {}
    return dict(REASONS)


def _skipped_section(skipped: dict) -> str:
    if not skipped:
        return "<h2>Records left out</h2><p>None: every record was an audited job.</p>"
    meanings = _reason_meanings()
    rows = [
        [_e(reason), _number(count), _e(meanings.get(reason, ""))]
        for reason, count in sorted(skipped.items(), key=lambda kv: (-kv[1], kv[0]))
    ]
    return "<h2>Records left out</h2><p>Records that are not audited jobs, by reason.</p>" + _table(
        ["Reason", "Records", "Meaning"], rows, text_columns=(0, 2)
    )


def _group_rows(groups: list[dict]) -> list[list[str]]:
    return [
        [
            _e(g.get("group", "")),
            _number(g.get("jobs")),
            _above_floor(g),
            _above_floor(g, "slurm_tree"),
            _above_floor(g, "optimum"),
            _above_floor(g, "bound"),
            _percent(g.get("removable_share")),
            _percent(g.get("fidelity")),
            _number(g.get("cost")),
            _number(g.get("optimum")),
            _number(g.get("floor")),
        ]
        for g in groups
    ]


GROUP_HEAD = [
    "{}",
    "Jobs",
    "Cost above floor",
    "Slurm-tree above floor",
    "Optimum above floor",
    "Bound above floor",
    "Optimum removes",
    "Fidelity",
    "Cost",
    "Optimum",
    "Floor",
]


def _tables_section(summary: dict) -> str:
    out = [
        "<h2>By size, partition and week</h2><p>Costs summed over the jobs of each group; "
        "“above floor” is the sum's excess over the floor's, “optimum removes” the share of "
        "the excess the optimum removes, “fidelity” the share of jobs where slurm-tree gives "
        "the recorded nodes.</p>"
    ]
    for key, title, first in (
        ("by_size", "By job size (nodes)", "Size"),
        ("by_partition", "By partition", "Partition"),
        ("by_week", "By week", "Week"),
    ):
        groups = summary.get(key) or []
        if groups:
            head = [first] + GROUP_HEAD[1:]
            out.append(f"<h3>{title}</h3>" + _table(head, _group_rows(groups)))
    return "".join(out)


def _worst_section(worst: list, topology) -> str:
    if not worst:
        return ""
    legend = "".join(
        f'<span><i style="background:{COLOURS[k]}"></i>{_e(MEANINGS[k])}</span>' for k in COLOURS
    )
    out = [
        f"<h2>The {len(worst)} jobs with the most removable cost</h2><p>Each drawn on the "
        "switch tree at its start"
        + (
            ": only the switches that hold its or the optimum's nodes, and those above them"
            if topology.num_nodes > WHOLE_TREE_NODES
            else ""
        )
        + f'.</p><p class="legend">{legend}</p>'
    ]
    for job in worst:
        svg = switch_tree_svg(
            topology, job.get("nodes") or "", job.get("optimum_nodes") or "", job.get("busy") or ""
        )
        saved = (job["cost"] - job["optimum"]) / job["cost"] if job.get("cost") else None
        facts = [
            ("Job", _e(job.get("job_id", ""))),
            ("Partition", _e(job.get("partition", ""))),
            ("Start", _e(_when(job.get("start", "")))),
            ("Nodes", f"{_number(job.get('size'))} of {_number(job.get('idle'))} idle"),
            ("Cost", _number(job.get("cost"))),
            ("Optimum", f"{_number(job.get('optimum'))} ({_percent(saved)} less)"),
            (
                "Slurm-tree",
                "would not place it"
                if job.get("slurm_tree") is None
                else _number(job["slurm_tree"]),
            ),
            ("Bound", _number(job.get("bound"))),
            ("Floor", _number(job.get("floor"))),
            ("Recorded nodes", _hosts(job.get("nodes"))),
            ("Optimum's nodes", _hosts(job.get("optimum_nodes"))),
        ]
        rows = "".join(
            f'<tr><td class="text">{k}</td>'
            f'<td class="{"hosts" if k.endswith("nodes") else "text"}">{v}</td></tr>'
            for k, v in facts
        )
        out.append(f'<div class="worst">{svg}<table>{rows}</table></div>')
    return "".join(out)


def _differing_section(summary: dict, jobs: list) -> str:
    ids = summary.get("differing_jobs") or []
    if not ids:
        return ""
    differing: dict[object, dict] = {}
    for job in jobs:
        if job.get("slurm_tree_same") is not True:
            differing.setdefault(job.get("job_id"), job)
    rows = []
    for job_id in ids[:MAX_DIFFERING]:
        job = differing.get(job_id, {})
        tree = job.get("slurm_tree_nodes")
        rows.append(
            [
                _e(job_id),
                _e(job.get("partition", "")),
                f'<span class="nw">{_e(_when(job.get("start", "–")))}</span>',
                _hosts(job.get("nodes")),
                _hosts(tree) if tree is not None or not job else "would not place it",
                _number(job.get("cost")),
                _number(job.get("slurm_tree")),
            ]
        )
    more = len(ids) - MAX_DIFFERING
    return (
        f"<h2>Where slurm-tree differs from the record ({len(ids):,} jobs)</h2><p>Slurm's "
        "topology/tree rule, recomputed on the rebuilt idle nodes, would have chosen other "
        "nodes than the ones recorded: another selection rule or plugin, reservations, "
        "features or nodes drained at the time the records do not show.</p>"
        + _table(
            [
                "Job",
                "Partition",
                "Start",
                "Recorded nodes",
                "Slurm-tree's nodes",
                "Cost",
                "Slurm-tree",
            ],
            rows,
            text_columns=(0, 1, 2),
            hosts_columns=(3, 4),
        )
        + (f"<p>… and {more:,} more.</p>" if more > 0 else "")
    )


def _footer() -> str:
    from tjap import __version__

    return (
        f'<p class="note">Written by tjap {_e(__version__)} on '
        f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC.</p>"
    )


# ---------------------------------------------------------------------------- plots


def _png(fig) -> str:
    """The figure as an <img> with a PNG data: URI (the figure is closed)."""
    from tjap.core.report import pyplot

    plt = pyplot()
    buffer = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buffer, format="png", dpi=100)
    plt.close(fig)
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    return f'<img class="plot" alt="plot" src="data:image/png;base64,{data}">'


def _zone(name):
    try:
        from zoneinfo import ZoneInfo

        return ZoneInfo(str(name))
    except (ValueError, KeyError, ImportError, OSError):  # unknown zone name: show UTC
        return timezone.utc


def _week_middle(group: str) -> datetime | None:
    """The middle of ISO week "2026-W47" (Thursday noon), or None."""
    try:
        year, week = str(group).split("-W")
        return datetime.combine(
            date.fromisocalendar(int(year), int(week), 4), datetime.min.time()
        ) + timedelta(hours=12)
    except ValueError:
        return None


def _time_section(data: dict) -> str:
    jobs = [j for j in data.get("jobs", []) if j.get("floor") and j.get("start_s") is not None]
    if not jobs:
        return ""
    plt = _plt()
    sampled = len(jobs) > MAX_POINTS
    if sampled:
        jobs = [jobs[int(i)] for i in np.linspace(0, len(jobs) - 1, MAX_POINTS)]
    zone = _zone(data["records"].get("timezone", "UTC"))
    when = [datetime.fromtimestamp(j["start_s"], zone).replace(tzinfo=None) for j in jobs]
    ratio = np.array([j["cost"] / j["floor"] for j in jobs])
    best = np.array([j["optimum"] / j["floor"] for j in jobs])
    fig, ax = plt.subplots(figsize=(11, 4.2))
    size = 12 if len(jobs) < 2000 else 4
    ax.scatter(
        when,
        ratio,
        s=size,
        alpha=0.45,
        color=COLOURS["job"],
        linewidths=0,
        label="each job, as placed",
    )
    ax.scatter(
        when,
        best,
        s=size * 0.6,
        alpha=0.35,
        color=COLOURS["opt"],
        linewidths=0,
        label="each job, the optimum",
    )
    weeks: list[tuple[datetime, dict]] = []
    for g in data["summary"].get("by_week") or []:
        middle = _week_middle(g["group"])
        if middle is not None and g.get("floor"):
            weeks.append((middle, g))
    weeks.sort(key=lambda wg: wg[0])
    if weeks:  # each week's point inside the jobs' time span
        first, last = min(when), max(when)
        x = [min(max(w, first), last) for w, _ in weeks]
        ax.plot(
            x,
            [g["cost"] / g["floor"] for _, g in weeks],
            "-o",
            color="#8a2f00",
            linewidth=2,
            label="weekly, as placed",
        )
        ax.plot(
            x,
            [g["optimum"] / g["floor"] for _, g in weeks],
            "--s",
            color="#003d66",
            linewidth=2,
            label="weekly, the optimum",
        )
    ax.axhline(1.0, color="#333", linewidth=0.8)
    ax.set_ylabel("cost / floor")
    ax.grid(alpha=0.3)
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), fontsize=9, ncol=4, frameon=False)
    fig.autofmt_xdate()
    note = (
        (
            f'<p class="note">{MAX_POINTS:,} of {len(data["jobs"]):,} jobs drawn, sampled '
            "evenly; the weekly lines use every job.</p>"
        )
        if sampled
        else ""
    )
    return (
        "<h2>Cost over time</h2><p>Each job's cost divided by its floor (1 is the best any "
        "scheduler can do on the empty cluster), and each week's sums.</p>" + _png(fig) + note
    )


def _size_section(summary: dict) -> str:
    groups = [g for g in summary.get("by_size") or [] if g.get("floor")]
    if not groups:
        return ""
    plt = _plt()
    series = [
        ("cost", "as placed", COLOURS["job"]),
        ("slurm_tree", "slurm-tree", "#e69f00"),
        ("optimum", "optimum", COLOURS["opt"]),
        ("bound", "bound", "#009e73"),
    ]
    fig, ax = plt.subplots(figsize=(11, 3.8))
    x = np.arange(len(groups))
    width = 0.8 / len(series)
    for k, (key, label, colour) in enumerate(series):
        values = [
            100 * (g[key] / g["floor"] - 1) if g.get(key) is not None else np.nan for g in groups
        ]
        ax.bar(x + (k - (len(series) - 1) / 2) * width, values, width, label=label, color=colour)
    ax.set_xticks(x, [f"{g['group']}\n({g.get('jobs', 0):,} jobs)" for g in groups])
    ax.set_xlabel("job size (nodes)")
    ax.set_ylabel("% above the floor")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), fontsize=9, ncol=4, frameon=False)
    return (
        "<h2>By job size</h2><p>How far each choice lies above the floor, per size class: "
        "the nodes recorded, slurm-tree's, the optimum's and the bound's.</p>" + _png(fig)
    )


def _plt():
    from tjap.core.report import pyplot

    return pyplot()


# ---------------------------------------------------------------------------- the tree drawing


def _indices(topology, hostlist: str) -> set[int]:
    """The topology's indices of a hostlist's nodes (names it does not know are left out)."""
    from tjap.placement.tree.hostlist import expand_hostlist

    if not hostlist:
        return set()
    found = set()
    for name in expand_hostlist(str(hostlist), limit=max(10**6, topology.num_nodes)):
        try:
            found.add(topology.node_index(name))
        except InvalidInputError:
            pass
    return found


def switch_tree_svg(topology, nodes: str, optimum_nodes: str = "", busy: str = "") -> str:
    """An inline SVG of the switch tree marking one job's nodes, the optimum's, the busy and the
    idle ones.

    Trees of up to :data:`WHOLE_TREE_NODES` nodes are drawn whole; larger ones only with the
    leaf switches that hold the job's or the optimum's nodes and the switches above them (a
    switch's label says how many of its child switches are not drawn), so that a tree of ten
    thousand nodes still gives a small drawing. Each node is a square whose class is ``job``,
    ``opt``, ``both``, ``busy`` or ``idle`` and whose tooltip is its name.

    Parameters
    ----------
    topology : Topology
        The switch tree.
    nodes : str
        The job's nodes, a hostlist.
    optimum_nodes : str
        The optimum's nodes, a hostlist.
    busy : str
        The nodes busy with other jobs at the job's start, a hostlist.
    """
    job, best = _indices(topology, nodes), _indices(topology, optimum_nodes)
    busy_set = _indices(topology, busy)
    parent = topology.switch_parent
    if topology.num_nodes <= WHOLE_TREE_NODES or not job | best:
        drawn = set(range(topology.num_switches))
    else:
        drawn = set()
        for v in job | best:
            s = int(topology.node_leaf[v])
            while s >= 0 and s not in drawn:
                drawn.add(s)
                s = int(parent[s])
    kids: dict[int, list[int]] = {s: [] for s in drawn}
    all_kids = np.bincount(parent[1:], minlength=topology.num_switches)
    for s in sorted(drawn):  # pre-order: children in the tree's order
        if parent[s] >= 0:
            kids[int(parent[s])].append(s)
    members = {}
    for s in drawn:
        if not all_kids[s]:
            members[s] = np.flatnonzero(topology.node_leaf == s)

    def state(v):
        if v in job:
            return "both" if v in best else "job"
        return "opt" if v in best else ("busy" if v in busy_set else "idle")

    cell, level_h, box_h, gap = 10, 56, 18, 14

    def label_of(s):
        name = topology.switch_names[s]
        hidden = int(all_kids[s]) - len(kids[s])
        return (name if len(name) <= 14 else name[:13] + "…") + (f" +{hidden}" if hidden else "")

    def columns(s):
        n = len(members[s])
        return min(n, max(4, min(16, math.ceil(math.sqrt(n)))))

    widths: dict[int, float] = {}
    for s in sorted(drawn, reverse=True):  # children before their parents
        label_w = max(7 * len(label_of(s)) + 8, 30)
        inner = (
            columns(s) * cell
            if s in members
            else sum(widths[c] for c in kids[s]) + gap * (len(kids[s]) - 1)
        )
        widths[s] = max(label_w, inner)

    place, shapes = {}, []

    def layout(s, x):  # s's subtree takes widths[s] from x
        place[s] = x + widths[s] / 2
        if s not in members:
            span = sum(widths[c] for c in kids[s]) + gap * (len(kids[s]) - 1)
            x += (widths[s] - span) / 2
            for c in kids[s]:
                layout(c, x)
                x += widths[c] + gap

    layout(0, 0)
    right = widths[0]
    depth = topology.switch_depth
    bottom = 0
    for s in sorted(drawn):
        cx, y = place[s], int(depth[s]) * level_h
        name, label = topology.switch_names[s], label_of(s)
        hidden = int(all_kids[s]) - len(kids[s])
        title = f"{name}: {hidden} child switches not drawn" if hidden else name
        w = max(7 * len(label) + 8, 30)
        shapes.append(
            f'<g><title>{_e(title)}</title><rect x="{cx - w / 2:.1f}" y="{y}" '
            f'width="{w}" height="{box_h}" rx="3" fill="#eef1f5" stroke="#556"/>'
            f'<text x="{cx:.1f}" y="{y + 13}" text-anchor="middle">{_e(label)}</text>'
            "</g>"
        )
        if parent[s] >= 0:
            p = int(parent[s])
            shapes.insert(
                0,
                f'<line x1="{place[p]:.1f}" y1="{int(depth[p]) * level_h + box_h}" '
                f'x2="{cx:.1f}" y2="{y}" stroke="#99a"/>',
            )
        if s in members:
            cols = columns(s)
            left = cx - cols * cell / 2
            for k, node in enumerate(members[s]):
                kind = state(int(node))
                nx, ny = left + (k % cols) * cell, y + box_h + 6 + (k // cols) * cell
                shapes.append(
                    f'<rect class="{kind}" x="{nx:.1f}" y="{ny}" width="{cell - 2}" '
                    f'height="{cell - 2}" fill="{COLOURS[kind]}" stroke="#555" '
                    f'stroke-width="0.6"><title>{_e(topology.node_names[node])}</title>'
                    "</rect>"
                )
                bottom = max(bottom, ny + cell)
    width, height = right + 8, max(bottom, box_h) + 4
    return (
        f'<svg role="img" viewBox="-4 -2 {width:.0f} '
        f'{height:.0f}" width="{width:.0f}" height="{height:.0f}" font-size="11" '
        f'font-family="system-ui, sans-serif">' + "".join(shapes) + "</svg>"
    )
