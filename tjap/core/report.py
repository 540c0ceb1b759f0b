"""Reporting every floor may use: plain-text tables, CSV files and matplotlib figures (Agg).

>>> print(format_table([{"method": "dp", "cost": 1.5}], [("method", ""), ("cost", ".2f")]))
method  cost
------  ----
    dp  1.50
"""

from __future__ import annotations

import csv
from pathlib import Path


def write_csv(path: Path, rows: list[dict]) -> Path:
    """Write ``rows`` (dicts; the header is the union of their keys, first-seen order) to ``path``,
    creating its folder; returns the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        fields = list(dict.fromkeys(key for row in rows for key in row))  # union, first-seen order
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    return path


def format_table(rows: list[dict], columns: list[tuple[str, str]]) -> str:
    """Plain-text table; ``columns`` are (key, format spec) pairs, e.g. ("mean_s", ".4f")."""

    def cell(row, key, spec):
        value = row.get(key)
        if value is None or value == "":
            return "-"
        return format(value, spec) if spec and not isinstance(value, str) else str(value)

    body = [[cell(r, k, s) for k, s in columns] for r in rows]
    head = [k for k, _ in columns]
    widths = [max(len(h), *(len(b[i]) for b in body)) for i, h in enumerate(head)]
    lines = [
        "  ".join(h.rjust(w) for h, w in zip(head, widths)),
        "  ".join("-" * w for w in widths),
    ]
    lines += ["  ".join(c.rjust(w) for c, w in zip(b, widths)) for b in body]
    return "\n".join(lines)


def pyplot():
    """matplotlib.pyplot on the Agg backend (no screen needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig, path) -> Path:
    """Lay out, write (PNG, 120 dpi, creating the folder) and close a figure; returns its path."""
    import matplotlib.pyplot as plt

    path = Path(path)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
