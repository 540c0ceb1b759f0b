"""Slurm's ``topology/block`` clusters as trees: base blocks, and the aggregated blocks above them.

A ``topology/block`` configuration lists base blocks (``BlockName=b1 Nodes=n[1-18]``: an NVLink
domain, such as one NVL72 rack) and, optionally, ``BlockSizes=18,36,72``: the base block size
in nodes, then the sizes of the larger blocks Slurm plans with. Slurm pairs neighbouring blocks
into larger ones: an aggregated block of a size is an aligned run of consecutive base blocks (in
the order the file lists them), 2, 4, 8 ... of them. tjap reads that as a tree of the same kind
as a switch tree (:class:`~tjap.placement.tree.topology.Topology`): each base block is a leaf
switch over its nodes, each aggregated block a switch over the blocks (or smaller aggregates) it
joins, so every window method and every cost runs on it unchanged.

The rules, as Slurm's block plugin applies them (read from its documentation and source):

- The base block size is the first ``BlockSizes`` value, or without ``BlockSizes`` the node count
  of the first block; every block must hold at least that many nodes.
- Each further ``BlockSizes`` value must be the base size times a power of two (at most 2^15);
  without ``BlockSizes``, blocks of 1, 2, 4 and 8 base blocks are planned.
- Sizes (counted in base blocks) are kept in increasing order up to the first that holds every
  block; larger ones are ignored.
- An aggregate of ``s`` base blocks starts at every multiple of ``s`` in the block order. At the
  end of the order, where fewer than ``s`` blocks remain, the aggregate is still formed when the
  next smaller size does not already hold what remains, and left out when it does.
- Several aggregates (or blocks) at the top are joined under the implicit root, as several
  top-level switches are.

An aggregated block is named after its first and last base block, ``FIRST..LAST``.
"""

from __future__ import annotations

from tjap.core.errors import InvalidInputError

#: Block sizes (in base blocks) Slurm plans with when the configuration gives no ``BlockSizes``.
DEFAULT_BLOCK_LEVELS = (1, 2, 4, 8)
#: The largest aggregate, in base blocks (2^15).
MAX_BLOCK_FACTOR = 2**15


def parse_block_sizes(value: str, where: str, *, yaml: bool = False) -> list[int]:
    """``BlockSizes=18,36,72`` -> [18, 36, 72], checked: positive integers, each the first one
    times a power of two (at most 2^15), increasing. ``yaml``: the sizes come from a
    ``topology.yaml``'s ``block_sizes:`` list, and the messages write them that way."""
    parts = [part.strip() for part in value.split(",")]

    def written(sizes) -> str:  # the sizes as the file writes them
        if yaml:
            return f"block_sizes: [{', '.join(map(str, sizes))}]"
        return f"BlockSizes={','.join(map(str, sizes))}"

    given = (f"[{', '.join(parts)}]" if yaml else f"BlockSizes={value}")[:80]
    if not value.strip():
        raise InvalidInputError(
            f"{where}: {given} lists no size; give the base block size in nodes, then the "
            f"larger ones, e.g. {written([18, 36, 72])}"
        )
    sizes = []
    for part in parts:
        if not (part.isascii() and part.isdigit()) or part.strip("0") == "":
            raise InvalidInputError(
                f"{where}: {given} holds {part[:40]!r}, not a positive "
                f"number of nodes; write e.g. {written([18, 36, 72])}"
            )
        if len(part.lstrip("0")) > 18:
            raise InvalidInputError(
                f"{where}: {given} holds a size of {len(part.lstrip('0'))} digits, more nodes "
                f"than any cluster; write e.g. {written([18, 36, 72])}"
            )
        sizes.append(int(part))
    base = sizes[0]
    for size in sizes[1:]:
        factor, rest = divmod(size, base)  # integers: no float overflow on huge sizes
        if rest or factor < 1 or factor > MAX_BLOCK_FACTOR or factor & (factor - 1):
            raise InvalidInputError(
                f"{where}: {given}: {size} is not the base block size {base} times a "
                f"power of two (2 to {MAX_BLOCK_FACTOR}); write e.g. "
                f"{written([base, 2 * base, 4 * base])}"
            )
    if sizes != sorted(set(sizes)):
        raise InvalidInputError(
            f"{where}: {given} must increase and list each size "
            f"once; write e.g. {written([base, 2 * base, 4 * base])}"
        )
    return sizes


def block_levels(num_blocks: int, sizes: list[int] | None) -> list[int]:
    """The aggregate sizes Slurm plans with, in base blocks, increasing (the first is 1, the base
    block itself), up to the first that holds all ``num_blocks`` blocks."""
    factors = (
        list(DEFAULT_BLOCK_LEVELS)
        if sizes is None
        else sorted({size // sizes[0] for size in sizes})
    )
    levels = []
    for factor in factors:
        levels.append(factor)
        if factor >= num_blocks:
            break
    return levels


def aggregates(num_blocks: int, levels: list[int]) -> list[tuple[int, int, int]]:
    """The aggregated blocks as ``(level, first, stop)``: level ``j >= 1`` of ``levels`` joins
    base blocks ``first`` to ``stop - 1``; in level order, then block order."""
    found = []
    for j in range(1, len(levels)):
        size, smaller = levels[j], levels[j - 1]
        for first in range(0, num_blocks, size):
            remaining = num_blocks - first
            if size > remaining and smaller >= remaining:
                continue  # the next smaller size already holds what remains
            found.append((j, first, min(first + size, num_blocks)))
    return found


def block_specs(
    blocks: list, sizes: list[int] | None, where: str = "BlockSizes"
) -> tuple[list, int]:
    """Switch definitions ``(name, nodes or None, switches or None, where)`` of the tree of a
    ``topology/block`` configuration, and its base block size in nodes (the first
    ``BlockSizes`` value, else the first block's size): ``blocks`` lists ``(name, nodes,
    where)`` in the file's order, ``sizes`` the ``BlockSizes`` values (None: not given)."""
    seen: dict[str, str] = {}
    for name, _, line in blocks:
        if name in seen:
            raise InvalidInputError(
                f"{line}: block {name!r} is already defined ({seen[name]}); define each block once"
            )
        seen[name] = line
    base = sizes[0] if sizes else len(blocks[0][1])
    for name, nodes, line in blocks:
        if len(nodes) < base:
            raise InvalidInputError(
                f"{line}: block {name!r} has {len(nodes)} nodes, fewer than the base block size "
                f"{base}; give every block at least {base} nodes"
                + (
                    " or lower the first BlockSizes value"
                    if sizes
                    else " (without BlockSizes the first block's size is the base size)"
                )
            )
    levels = block_levels(len(blocks), sizes)
    groups = aggregates(len(blocks), levels)
    names = {name for name, _, _ in blocks}
    # children: each aggregate holds the largest units below it that start inside it
    unit_of = {}  # (first block) -> the current top unit starting there, with its stop
    for b, (name, _, _) in enumerate(blocks):
        unit_of[b] = (name, b + 1)
    children = {}
    for _level, first, stop in sorted(groups):
        name = f"{blocks[first][0]}..{blocks[stop - 1][0]}"
        if name in names:
            raise InvalidInputError(
                f"{where}: the aggregated block {name!r} has the name of "
                "another block; rename the block"
            )
        names.add(name)
        kids, b = [], first
        while b < stop:
            unit, unit_stop = unit_of[b]
            kids.append(unit)
            b = unit_stop
        children[name] = (kids, f"{where} (the blocks {blocks[first][0]} to {blocks[stop - 1][0]})")
        unit_of[first] = (name, stop)
    # definitions depth first from the top units, in block order (the tree keeps the blocks' order)
    block_of = {name: (list(nodes), line) for name, nodes, line in blocks}
    tops, b = [], 0
    while b < len(blocks):
        unit, b = unit_of[b]
        tops.append(unit)
    specs, stack = [], list(reversed(tops))
    while stack:
        name = stack.pop()
        if name in children:
            kids, line = children[name]
            specs.append((name, None, kids, line))
            stack.extend(reversed(kids))
        else:
            nodes, line = block_of[name]
            specs.append((name, nodes, None, line))
    return specs, base
