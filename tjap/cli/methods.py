"""``tjap methods``: every system's registered methods and policies, with what they need."""

from __future__ import annotations

from tjap.cli.common import add_common, print_json


def add_parser(sub) -> None:
    """Add ``methods`` to the ``tjap`` parser."""
    from tjap.registry import SYSTEMS

    p = sub.add_parser(
        "methods",
        help="list every system's methods and policies",
        description="List the registered methods of each system (tree: what "
        "`tjap solve --method` takes), their capabilities, and whether "
        "their dependencies are installed.",
    )
    p.add_argument("--system", choices=SYSTEMS, help="only this system (default: all)")
    add_common(p)
    p.set_defaults(run=run)


def _flags(m) -> str:
    flags = [
        name
        for name, on in (
            ("exact", m.exact),
            ("time-limited", m.time_limited),
            ("learned", m.learned),
            ("torch", m.needs_torch),
            ("constraints", m.constraints),
        )
        if on
    ]
    return ",".join(flags) or "-"


def run(args) -> int:
    from tjap.registry import SYSTEM_DESCRIPTIONS, SYSTEMS, entries

    systems = [args.system] if args.system else list(SYSTEMS)
    if args.json:
        print_json(
            {
                s: {
                    m.name: {
                        "description": m.description,
                        "exact": m.exact,
                        "time_limited": m.time_limited,
                        "learned": m.learned,
                        "needs_torch": m.needs_torch,
                        "constraints": m.constraints,
                        "available": m.is_available(),
                        "missing": m.missing(),
                    }
                    for m in entries(s)
                }
                for s in systems
            }
        )
        return 0
    for k, system in enumerate(systems):
        print(("\n" if k else "") + f"{system}: {SYSTEM_DESCRIPTIONS[system]}")
        for m in entries(system):
            note = "" if m.is_available() else f"  [needs: {', '.join(m.missing())}]"
            print(f"  {m.name:16s} {_flags(m):38s} {m.description}{note}")
    return 0
