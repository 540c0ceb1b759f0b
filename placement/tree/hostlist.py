"""Hostlist expressions, the compact way schedulers write lists of names: ``c101-[001-016]``,
``gpu[01-09],n[1-3,7]``, ``r[1-2]n[1-3]``.

Syntax read by :func:`expand_hostlist`:

- names are separated by commas outside brackets;
- a bracket group ``[...]`` holds comma-separated numbers ``7`` and ranges ``1-3`` (low end first);
- a range keeps the zero padding of its low end: ``[08-10]`` gives ``08 09 10``, ``[8-10]`` gives
  ``8 9 10``; a single number is kept as written;
- a name may hold several bracket groups; they expand as a product, the leftmost group varying
  slowest: ``r[1-2]n[1-2]`` is ``r1n1 r1n2 r2n1 r2n2``;
- the order of the expression is kept, duplicates included.

:func:`compress_hostlist` writes a list of names back as one expression, keeping their order, so
that ``expand_hostlist(compress_hostlist(names)) == names``.
"""

from __future__ import annotations

import re

from tjap.core.errors import InvalidInputError

#: The most names one expression may expand to (a guard against ``n[0-999999999]``).
MAX_NAMES = 10_000_000

#: The most digits of a number in a range (``int`` reads at most 4300).
_MAX_DIGITS = 100

_SPECIAL = set("[],")
_ITEM = re.compile(r"^([0-9]+)(?:-([0-9]+))?$")
_LAST_NUMBER = re.compile(r"^(.*?)([0-9]+)([^0-9]*)$")
#: A hostlist's top-level commas (outside brackets), and one ``prefix[ranges]suffix`` piece.
_TOP_COMMA = re.compile(r",(?![^\[]*\])")
_PIECE = re.compile(r"([^\[\],]*)\[([0-9,\-]+)\]([^\[\],]*)")


def _bad(text: str, why: str, fix: str) -> InvalidInputError:
    shown = repr(text)
    shown = shown if len(shown) <= 120 else shown[:110] + "...'"
    return InvalidInputError(f"hostlist {shown}: {why}; {fix}")


def _split_top_level(text: str) -> list[str]:
    """Split on the commas outside brackets (bracket balance is checked by the caller)."""
    pieces, depth, start = [], 0, 0
    for i, char in enumerate(text):
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
        elif char == "," and depth == 0:
            pieces.append(text[start:i])
            start = i + 1
    pieces.append(text[start:])
    return pieces


def _too_many(text: str, limit: int, fix: str) -> InvalidInputError:
    return _bad(text, f"expands to more than {limit:,} names", fix)


def _bracket_values(
    text: str, body: str, limit: int = MAX_NAMES, fix: str = "split the list", outer: int = 1
) -> list[str]:
    """The names' number strings of one bracket group's content ``body``, refused before they are
    made if ``outer`` names times them exceed ``limit``."""
    if not body:
        raise _bad(text, "empty range []", "put numbers or ranges inside, e.g. n[1-4]")
    values: list[str] = []
    for item in body.split(","):
        match = _ITEM.match(item)
        if not match:
            if not item:
                raise _bad(text, f"empty item in [{body}]", "remove the extra comma")
            raise _bad(
                text,
                f"{item!r} in [{body}] is not a number or a range of numbers",
                "write numbers like 7 or ranges like 1-3",
            )
        low, high = match.group(1), match.group(2)
        if high is None:
            values.append(low)
            if outer * len(values) > limit:
                raise _too_many(text, limit, fix)
            continue
        if len(low) > _MAX_DIGITS or len(high) > _MAX_DIGITS:
            raise _bad(
                text,
                f"range [{low:.20}...] has a number of more than {_MAX_DIGITS} digits",
                "use shorter numbers",
            )
        lo, hi = int(low), int(high)
        if hi < lo:
            raise _bad(
                text, f"range {low}-{high} is reversed", f"write the low end first: [{high}-{low}]"
            )
        if outer * (len(values) + hi - lo + 1) > limit:
            raise _too_many(text, limit, fix)
        width = len(low)
        values.extend(str(v).zfill(width) for v in range(lo, hi + 1))
    return values


def _expand_name(
    text: str, piece: str, limit: int = MAX_NAMES, fix: str = "split the list"
) -> list[str]:
    """Every name of one comma-free piece such as ``r[1-2]n[01-03]`` (at most ``limit``)."""
    if not piece:
        raise _bad(text, "empty name", "remove the extra comma")
    names = [""]
    position = 0
    while position < len(piece):
        start = piece.find("[", position)
        stray = piece.find("]", position, None if start < 0 else start)
        if stray >= 0:
            raise _bad(text, f"']' without '[' in {piece!r}", "balance the brackets")
        if start < 0:
            names = [n + piece[position:] for n in names]
            break
        end = piece.find("]", start)
        if end < 0:
            raise _bad(text, f"unclosed '[' in {piece!r}", "close the bracket with ']'")
        body = piece[start + 1 : end]
        if "[" in body:
            raise _bad(text, f"nested '[' in {piece!r}", "brackets do not nest")
        values = _bracket_values(text, body, limit, fix, len(names))
        if len(names) * len(values) > limit:
            raise _too_many(text, limit, fix)
        literal = piece[position:start]
        names = [n + literal + v for n in names for v in values]
        position = end + 1
    return names


def expand_hostlist(text: str, limit: int = MAX_NAMES, fix: str = "split the list") -> list[str]:
    """Every name of a hostlist expression, in the expression's order.

    Parameters
    ----------
    text : str
        A hostlist expression such as ``"c101-[001-016],gpu[01-09],n[1-3,7]"``. Surrounding
        whitespace is ignored; whitespace inside is not allowed.
    limit : int, default :data:`MAX_NAMES`
        The most names it may expand to: a larger expression is refused before its names are
        made (``fix`` is the advice the error ends with).

    Returns
    -------
    list of str

    Raises
    ------
    InvalidInputError
        One line naming the expression and the fix: an unclosed or stray bracket, an empty or
        reversed range, a non-numeric range, an empty name.

    Examples
    --------
    >>> expand_hostlist("gpu[08-10],n[1-2,7]")
    ['gpu08', 'gpu09', 'gpu10', 'n1', 'n2', 'n7']
    >>> expand_hostlist("r[1-2]n[1-2]")
    ['r1n1', 'r1n2', 'r2n1', 'r2n2']
    """
    if not isinstance(text, str):
        raise InvalidInputError(f"a hostlist must be a string, got {type(text).__name__}")
    stripped = text.strip()
    if not stripped:
        raise _bad(text, "empty hostlist", "give at least one name")
    if any(c.isspace() for c in stripped):
        raise _bad(text, "contains whitespace", "separate names with commas, not spaces")
    names: list[str] = []
    for piece in _split_top_level(stripped):
        names.extend(_expand_name(text, piece, limit, fix))
        if len(names) > limit:
            raise _too_many(text, limit, fix)
    return names


def _check_name(name) -> str:
    if not isinstance(name, str):
        raise InvalidInputError(f"a host name must be a string, got {name!r}")
    if not name or _SPECIAL & set(name) or any(c.isspace() for c in name):
        raise InvalidInputError(
            f"host name {name!r} cannot be written in a hostlist; names must be non-empty, "
            "without whitespace, commas or brackets"
        )
    return name


def compress_hostlist(names) -> str:
    """One hostlist expression for ``names``, keeping their order (and any duplicates).

    Neighbouring names that differ only in their last number (same text before and after it,
    compatible zero padding) share one bracket group.

    Parameters
    ----------
    names : iterable of str
        Non-empty names without whitespace, commas or brackets; at least one.

    Returns
    -------
    str
        An expression ``e`` with ``expand_hostlist(e) == list(names)``.

    Examples
    --------
    >>> compress_hostlist(["n01", "n02", "n03", "n07", "gpu9", "gpu10", "login"])
    'n[01-03,07],gpu[9-10],login'
    """
    if isinstance(names, str):
        raise InvalidInputError(
            "compress_hostlist takes a list of names, got a string; wrap it in a list"
        )
    names = [_check_name(n) for n in names]
    if not names:
        raise InvalidInputError("compress_hostlist needs at least one name, got none")
    return _compress(names, [split_name(n) for n in names])


def split_name(name: str):
    """``(prefix, digits, suffix, number)`` of a name's last number, or None for a name written
    as it is (no number, or one too long to read).

    >>> split_name("gpu010x")
    ('gpu', '010', 'x', 10)
    """
    match = _LAST_NUMBER.match(name)
    if match is None or len(match.group(2)) > _MAX_DIGITS:
        return None
    prefix, digits, suffix = match.groups()
    return prefix, digits, suffix, int(digits)


def _compress(names, splits) -> str:
    """:func:`compress_hostlist` of checked ``names`` given their :func:`split_name`.

    A group is open while names share its prefix and suffix and their numbers read back with
    its padding (``str(number).zfill(width) == digits``: as long as the group's first, or
    longer without a leading zero); consecutive numbers extend the open range."""
    parts: list[str] = []
    items: list[str] = []  # the open group's closed ranges
    prefix = suffix = None  # the open group's (None: none open)
    width = last = 0
    low = high = ""
    for name, split in zip(names, splits):
        if split is not None:
            p, digits, x, number = split
            if (
                p == prefix
                and x == suffix
                and (len(digits) == width or (len(digits) > width and digits[0] != "0"))
            ):
                if number == last + 1:
                    high, last = digits, number
                    continue
                items.append(low if high == low else f"{low}-{high}")
                low = high = digits
                last = number
                continue
        if prefix is not None:  # close the open group
            items.append(low if high == low else f"{low}-{high}")
            parts.append(
                f"{prefix}{items[0]}{suffix}"
                if len(items) == 1 and "-" not in items[0]
                else f"{prefix}[{','.join(items)}]{suffix}"
            )
            items, prefix = [], None
        if split is None:  # written as it is
            parts.append(name)
            continue
        prefix, low, suffix, last = split
        high, width = low, len(low)
    if prefix is not None:
        items.append(low if high == low else f"{low}-{high}")
        parts.append(
            f"{prefix}{items[0]}{suffix}"
            if len(items) == 1 and "-" not in items[0]
            else f"{prefix}[{','.join(items)}]{suffix}"
        )
    return ",".join(parts)


class NodeIndex:
    """A fixed list of node names read and written as hostlists many times (an accounting
    history's node lists): :meth:`ids` maps an expression to node indices, :meth:`hostlist`
    writes sorted indices back, each name split once.

    Expressions of plain names and ``prefix[ranges]suffix`` pieces are read by tables of the
    numbers of each (prefix, suffix, padding); anything else by :func:`expand_hostlist`.

    Examples
    --------
    >>> index = NodeIndex(["n1", "n2", "n3", "gpu01"])
    >>> index.ids("n[1-2],gpu01,x9")
    (array([0, 1, 3], dtype=int32), False)
    >>> index.hostlist([0, 1, 3])
    'n[1-2],gpu01'
    """

    #: Expressions remembered by :meth:`ids` (their results are small arrays).
    CACHE = 200_000

    def __init__(self, names):
        self.names = tuple(names)
        self.index = {name: i for i, name in enumerate(self.names)}
        self._splits = [split_name(name) for name in self.names]
        self._cache: dict = {}
        # (prefix, suffix, width) -> node index of each number, -1 where none: a range "a-b"
        # whose "a" has w digits names prefix + str(i).zfill(w) + suffix. Plain lists: fast to
        # index one number at a time.
        families: dict = {}
        for i, split in enumerate(self._splits):
            if split is None or len(split[1]) > 9:
                continue
            prefix, digits, suffix, number = split
            padded = len(digits) > 1 and digits[0] == "0"
            for width in [len(digits)] if padded else range(1, len(digits) + 1):
                families.setdefault((prefix, suffix, width), {})[number] = i
        self._families = {}
        for key, numbers in families.items():
            table = [-1] * (max(numbers) + 1)
            for number, node in numbers.items():
                table[number] = node
            self._families[key] = table

    def ids(self, text: str):
        """``(indices, complete)``: the sorted, distinct indices (int32) of the names of
        ``text`` in the list, and whether every name of ``text`` is in it.

        Raises
        ------
        InvalidInputError
            ``text`` is not a hostlist expression (as :func:`expand_hostlist`).
        """
        import numpy as np

        hit = self._cache.get(text)
        if hit is not None:
            return hit
        found = self._table_ids(text)
        if found is None:
            names = expand_hostlist(text)
            found = [self.index.get(n, -1) for n in names]
        complete = -1 not in found
        out = (np.array(sorted({v for v in found if v >= 0}), dtype=np.int32), complete)
        if len(self._cache) < self.CACHE:
            self._cache[text] = out
        return out

    def _table_ids(self, text: str):
        """The indices of ``text`` (-1 for unknown names) read by the number tables; None when
        ``text`` is not only plain names and one-bracket pieces."""
        found: list[int] = []
        for piece in _TOP_COMMA.split(text.strip()):
            if "[" not in piece:
                if not piece or "]" in piece:
                    return None
                found.append(self.index.get(piece, -1))
                continue
            m = _PIECE.fullmatch(piece)
            if m is None:
                return None
            prefix, body, suffix = m.groups()
            for item in body.split(","):
                low, dash, high = item.partition("-")
                if not low.isdigit() or (dash and not high.isdigit()):
                    return None
                a = int(low)
                b = int(high) if dash else a
                if b < a:
                    return None
                table = self._families.get((prefix, suffix, len(low)))
                if table is None:
                    found.append(-1)
                    continue
                found.extend(table[a : b + 1])
                if b >= len(table):
                    found.append(-1)
        return found

    def hostlist(self, ids) -> str:
        """The expression of the names at the sorted, distinct indices ``ids`` ("" for none)."""
        ids = ids.tolist() if hasattr(ids, "tolist") else list(ids)
        if not ids:
            return ""
        return _compress([self.names[v] for v in ids], [self._splits[v] for v in ids])
