"""Numba kernels that read trace files in one pass over their bytes: the numbers of an SWF file
(:func:`scan_swf`) and the fields of a delimited table (:func:`scan_fields`, for sacct).

:func:`scan_swf` splits the bytes into lines (``\\n``, ``\\r\\n`` or ``\\r``, as Python's text mode
does), skips blank lines, and for each other line records where it is and, unless it is a ``;``
comment, its first 18 fields as integers and how many fields it has. A line the kernel cannot read
exactly as Python's ``int`` would (a decimal, a letter, a byte outside ASCII, a number of more than
15 digits) is flagged ``slow``: the caller parses that line in Python, which also words the reason
a bad line is skipped.
"""

from __future__ import annotations

import numpy as np

from tjap.core.jit import njit

#: SWF records have 18 fields; more are ignored by the loader.
SWF_FIELDS = 18
#: Digits the kernel reads; longer numbers (above 2^52 anyway) go to the Python path.
_MAX_DIGITS = 15


@njit
def _is_space(c) -> bool:
    # ASCII whitespace as str.split() sees it (space, \t, \v, \f, \x1c-\x1f); \r and \n end lines
    return c == 32 or c == 9 or c == 11 or c == 12 or (28 <= c <= 31)


@njit
def scan_swf(buf):
    """(values (m, 18) int64, fields (m,), line number (m,), comment (m,) bool, slow (m,) bool,
    start (m,), end (m,)) of the m non-blank lines of ``buf`` (uint8); ``start:end`` are the
    line's bytes without its line end."""
    n = buf.size
    lines = 1
    for i in range(n):
        lines += buf[i] == 10 or (buf[i] == 13 and (i + 1 == n or buf[i + 1] != 10))
    values = np.zeros((lines, SWF_FIELDS), np.int64)
    fields = np.zeros(lines, np.int64)
    number = np.zeros(lines, np.int64)
    comment = np.zeros(lines, np.bool_)
    slow = np.zeros(lines, np.bool_)
    start = np.zeros(lines, np.int64)
    end = np.zeros(lines, np.int64)
    row = 0
    line = 0
    i = 0
    while i < n:
        line += 1
        j = i
        while j < n and buf[j] != 10 and buf[j] != 13:
            j += 1
        following = j + 1
        if j < n and buf[j] == 13 and j + 1 < n and buf[j + 1] == 10:
            following = j + 2
        k = i
        while k < j and _is_space(buf[k]):
            k += 1
        if k == j:
            i = following
            continue
        number[row] = line
        start[row] = i
        end[row] = j
        if buf[k] == 59:  # ';'
            comment[row] = True
            row += 1
            i = following
            continue
        f = 0
        bad = False
        while k < j:
            while k < j and _is_space(buf[k]):
                k += 1
            if k == j:
                break
            negative = False
            if buf[k] == 45 or buf[k] == 43:
                negative = buf[k] == 45
                k += 1
            value = 0
            digits = 0
            while k < j and not _is_space(buf[k]):
                c = buf[k]
                if 48 <= c <= 57 and digits < _MAX_DIGITS:
                    value = value * 10 + (c - 48)
                    digits += 1
                elif f < SWF_FIELDS:
                    bad = True
                k += 1
            if digits == 0 and f < SWF_FIELDS:
                bad = True
            if f < SWF_FIELDS:
                values[row, f] = -value if negative else value
            f += 1
        fields[row] = f
        slow[row] = bad
        row += 1
        i = following
    return (
        values[:row],
        fields[:row],
        number[:row],
        comment[:row],
        slow[:row],
        start[:row],
        end[:row],
    )


@njit
def _line_end(buf, i):
    """(end of the line starting at i, start of the next line)."""
    n = buf.size
    j = i
    while j < n and buf[j] != 10 and buf[j] != 13:
        j += 1
    following = j + 1
    if j < n and buf[j] == 13 and j + 1 < n and buf[j + 1] == 10:
        following = j + 2
    return j, following


@njit
def scan_fields(buf, first_line, delimiter, columns):
    """The non-blank lines from line number ``first_line`` on, split as
    ``_SacctLayout.fields`` does: at ``delimiter`` if the line holds it, else at whitespace; a
    trailing empty field past ``columns`` is dropped. Returns (line number, start, end, field
    count, slow, field starts (m, columns), field ends) with fields stripped of whitespace;
    ``slow`` marks lines with a byte outside ASCII (for Python to split)."""
    n = buf.size
    lines = 1
    for i in range(n):
        lines += buf[i] == 10 or (buf[i] == 13 and (i + 1 == n or buf[i + 1] != 10))
    number = np.zeros(lines, np.int64)
    start = np.zeros(lines, np.int64)
    end = np.zeros(lines, np.int64)
    count = np.zeros(lines, np.int64)
    slow = np.zeros(lines, np.bool_)
    fs = np.zeros((lines, columns), np.int64)
    fe = np.zeros((lines, columns), np.int64)
    row = 0
    line = 0
    i = 0
    while i < n:
        line += 1
        j, following = _line_end(buf, i)
        k = i
        while k < j and _is_space(buf[k]):
            k += 1
        if k == j or line < first_line:
            i = following
            continue
        number[row] = line
        start[row] = i
        end[row] = j
        split_at_delimiter = False
        for q in range(i, j):
            if buf[q] >= 128:
                slow[row] = True
            if buf[q] == delimiter:
                split_at_delimiter = True
        f = 0
        last_empty = False
        if split_at_delimiter:
            a = i
            while True:
                b = a
                while b < j and buf[b] != delimiter:
                    b += 1
                s, e = a, b
                while s < e and _is_space(buf[s]):
                    s += 1
                while e > s and _is_space(buf[e - 1]):
                    e -= 1
                if f < columns:
                    fs[row, f] = s
                    fe[row, f] = e
                last_empty = s == e
                f += 1
                if b >= j:
                    break
                a = b + 1
        else:
            a = k
            while a < j:
                while a < j and _is_space(buf[a]):
                    a += 1
                if a == j:
                    break
                b = a
                while b < j and not _is_space(buf[b]):
                    b += 1
                if f < columns:
                    fs[row, f] = a
                    fe[row, f] = b
                f += 1
                a = b
        if f == columns + 1 and last_empty:
            f = columns
        count[row] = f
        row += 1
        i = following
    return number[:row], start[:row], end[:row], count[:row], slow[:row], fs[:row], fe[:row]


@njit
def gather(buf, starts, ends, width):
    """The byte strings buf[starts[r]:ends[r]] as rows of a (m, width) zero-padded matrix."""
    out = np.zeros((starts.size, width), np.uint8)
    for r in range(starts.size):
        for q in range(min(ends[r] - starts[r], width)):
            out[r, q] = buf[starts[r] + q]
    return out
