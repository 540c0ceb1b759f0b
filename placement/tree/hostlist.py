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

from tjap.errors import InvalidInputError

#: The most names one expression may expand to (a guard against ``n[0-999999999]``).
MAX_NAMES = 10_000_000

#: The most digits of a number in a range (``int`` reads at most 4300).
_MAX_DIGITS = 100

_SPECIAL = set("[],")
_ITEM = re.compile(r"^([0-9]+)(?:-([0-9]+))?$")
_LAST_NUMBER = re.compile(r"^(.*?)([0-9]+)([^0-9]*)$")


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


def _bracket_values(text: str, body: str, limit: int = MAX_NAMES,
                    fix: str = "split the list", outer: int = 1) -> list[str]:
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
            raise _bad(text, f"{item!r} in [{body}] is not a number or a range of numbers",
                       "write numbers like 7 or ranges like 1-3")
        low, high = match.group(1), match.group(2)
        if high is None:
            values.append(low)
            if outer * len(values) > limit:
                raise _too_many(text, limit, fix)
            continue
        if len(low) > _MAX_DIGITS or len(high) > _MAX_DIGITS:
            raise _bad(text, f"range [{low:.20}...] has a number of more than {_MAX_DIGITS} "
                             "digits", "use shorter numbers")
        lo, hi = int(low), int(high)
        if hi < lo:
            raise _bad(text, f"range {low}-{high} is reversed",
                       f"write the low end first: [{high}-{low}]")
        if outer * (len(values) + hi - lo + 1) > limit:
            raise _too_many(text, limit, fix)
        width = len(low)
        values.extend(str(v).zfill(width) for v in range(lo, hi + 1))
    return values


def _expand_name(text: str, piece: str, limit: int = MAX_NAMES,
                 fix: str = "split the list") -> list[str]:
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
        body = piece[start + 1:end]
        if "[" in body:
            raise _bad(text, f"nested '[' in {piece!r}", "brackets do not nest")
        values = _bracket_values(text, body, limit, fix, len(names))
        if len(names) * len(values) > limit:
            raise _too_many(text, limit, fix)
        literal = piece[position:start]
        names = [n + literal + v for n in names for v in values]
        position = end + 1
    return names


def expand_hostlist(text: str, limit: int = MAX_NAMES, fix: str = "split the list"
                    ) -> list[str]:
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
            "without whitespace, commas or brackets")
    return name


def _group_text(prefix: str, width: int, numbers: list[int], suffix: str) -> str:
    """``prefix[a-b,c]suffix`` from the numbers of one group (consecutive runs become ranges)."""
    if len(numbers) == 1:
        return f"{prefix}{str(numbers[0]).zfill(width)}{suffix}"
    items, low = [], numbers[0]
    for i in range(1, len(numbers) + 1):
        if i < len(numbers) and numbers[i] == numbers[i - 1] + 1:
            continue
        high = numbers[i - 1]
        lo_text = str(low).zfill(width)
        items.append(lo_text if high == low else f"{lo_text}-{str(high).zfill(width)}")
        if i < len(numbers):
            low = numbers[i]
    return f"{prefix}[{','.join(items)}]{suffix}"


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
            "compress_hostlist takes a list of names, got a string; wrap it in a list")
    names = [_check_name(n) for n in names]
    if not names:
        raise InvalidInputError("compress_hostlist needs at least one name, got none")
    parts: list[str] = []
    group = None      # (prefix, width, suffix, numbers) of the names being merged
    for name in names:
        match = _LAST_NUMBER.match(name)
        if match is None or len(match.group(2)) > _MAX_DIGITS:   # written as it is
            if group:
                parts.append(_group_text(*group[:2], group[3], group[2]))
                group = None
            parts.append(name)
            continue
        prefix, digits, suffix = match.groups()
        number = int(digits)
        if (group and group[0] == prefix and group[2] == suffix
                and str(number).zfill(group[1]) == digits):
            group[3].append(number)
            continue
        if group:
            parts.append(_group_text(*group[:2], group[3], group[2]))
        group = (prefix, len(digits), suffix, [number])
    if group:
        parts.append(_group_text(*group[:2], group[3], group[2]))
    return ",".join(parts)
