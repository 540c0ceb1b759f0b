"""Exceptions raised by tjap for bad input and unusable solvers.

Every error a user can trigger is a subclass of :class:`TjapError` (itself a ``ValueError``), with a
message that names the field, the bad value and what is allowed. The CLI prints these as one line
and exits with code 2, except :class:`SlurmUnreachableError` and
:class:`KubernetesUnreachableError` (the cluster cannot be reached), exit 3.

The checks of a single value, one wording for every floor: :func:`check_int` and
:func:`check_number` raise :class:`InvalidInputError` ("NAME must be a positive integer, got
VALUE"), :func:`is_int` tells an integer from a bool.
"""

import math
import numbers


class TjapError(ValueError):
    """Base class of every error caused by input or configuration."""


class InvalidInputError(TjapError):
    """An instance, file or argument is malformed (names the field and what is allowed)."""


class UnknownMethodError(TjapError):
    """A method name that is not registered."""


class MissingDependencyError(TjapError, ImportError):
    """An optional dependency is not installed (names the package and the extra to install)."""


class StateSpaceTooLargeError(TjapError):
    """An exact method would need more states than its limit allows."""


class SlurmError(TjapError):
    """A Slurm command failed, timed out, is not installed, or the controller is unreachable
    (raised by :mod:`tjap.placement.slurm.client`, which re-exports it)."""


class SlurmUnreachableError(SlurmError):
    """Slurm cannot be reached from here: slurmctld does not answer (or a command timed out
    waiting for it), Slurm's commands (``squeue``, ``sinfo``, ``scontrol``, ...) are not on
    ``PATH``, or the configuration ``SLURM_CONF`` names cannot be read, or munge cannot
    authenticate. The input may be fine; the cluster is not there. The CLI exits with code 3."""


class KubernetesError(TjapError):
    """A request to Kubernetes failed, or its configuration cannot be read (raised by
    :mod:`tjap.placement.k8s.api`)."""


class KubernetesUnreachableError(KubernetesError):
    """The Kubernetes API server does not answer: the input may be fine, the cluster is not
    there. The CLI exits with code 3, as for an unreachable Slurm."""


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread by the handler ``tjap`` installs (exit status 143)."""


def interrupted_by(exc: BaseException) -> KeyboardInterrupt | None:
    """The Ctrl-C (or :class:`Terminated`) behind ``exc``: ``exc`` itself, or one in its chain of
    causes. A library that calls back into Python can wrap the interrupt it sees (Numba loading a
    cached kernel raises SystemError "returned a result with an exception set" around it)."""
    seen = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen:
        if isinstance(link, KeyboardInterrupt):
            return link
        seen.add(id(link))
        link = link.__cause__ or link.__context__
    return None


def check_options(options, valid, what: str) -> None:
    """Raise :class:`InvalidInputError` naming every key of ``options`` not in ``valid``, and
    listing the valid ones (``what`` names the function or method, e.g. ``"simulate()"``)."""
    unknown = sorted(set(options) - set(valid))
    if unknown:
        raise InvalidInputError(
            f"unknown option{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))} "
            f"for {what}; valid options: {', '.join(valid) or 'none'}"
        )


#: The largest seed every command and solver takes (numpy's legacy generators and the Numba
#: kernels seed from 32 bits); a seed outside 0..MAX_SEED is refused in one line.
MAX_SEED = 2**32 - 1


def is_int(value) -> bool:
    """Whether ``value`` is an integer: a Python or numpy integer, not a bool (``True`` is no
    node count)."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


_FLOAT_MAX = 1.7976931348623157e308


def _bound(x) -> str:
    return f"{x:g}" if isinstance(x, float) else str(x)


def _int_rule(low, high) -> str:
    if low is None and high is None:
        return "an integer"
    if high is None:
        return {0: "a non-negative integer", 1: "a positive integer"}.get(
            low, f"an integer >= {low}"
        )
    if low is None:
        return f"an integer <= {high}"
    return f"an integer in [{low}, {high}]"


def check_int(name: str, value, low=None, high=None, *, must: str | None = None) -> int:
    """``value`` as an int, or :class:`InvalidInputError`: "``name`` must be a positive integer,
    got VALUE" (the value's repr, at most 40 characters).

    Python and numpy integers are accepted, bools refused; ``low`` and ``high`` (inclusive,
    each optional) bound it. The rule the message states follows from the bounds: "an
    integer", "a non-negative integer" (low 0), "a positive integer" (low 1), "an integer >=
    LOW", "an integer <= HIGH", "an integer in [LOW, HIGH]"; ``must`` replaces it where the
    message says more (a unit, a reason), e.g. ``must="a positive number of jobs"``.
    """
    if (
        not is_int(value)
        or (low is not None and value < low)
        or (high is not None and value > high)
    ):
        raise InvalidInputError(f"{name} must be {must or _int_rule(low, high)}, got {value!r:.40}")
    return int(value)


def _number_rule(low, high, low_open, high_open, finite) -> str:
    if low is None and high is None:
        return "a finite number" if finite else "a number"
    if high is None:
        if low == 0 and low_open:
            return "a positive number"
        return f"a number {'>' if low_open else '>='} {_bound(low)}"
    if low is None:
        return f"a number {'<' if high_open else '<='} {_bound(high)}"
    return (
        f"a number in {'(' if low_open else '['}{_bound(low)}, {_bound(high)}"
        f"{')' if high_open else ']'}"
    )


def check_number(
    name: str,
    value,
    low=None,
    high=None,
    *,
    low_open: bool = False,
    high_open: bool = False,
    finite: bool = True,
    must: str | None = None,
) -> float:
    """``value`` as a float, or :class:`InvalidInputError`: "``name`` must be a number in
    [LOW, HIGH], got VALUE" (the value's repr, at most 40 characters).

    Python and numpy integers and floats are accepted; bools, NaN and (unless ``finite`` is
    False) infinities refused. ``low`` and ``high`` (each optional; inclusive unless
    ``low_open`` / ``high_open``) bound it. The rule the message states follows from them: "a
    finite number", "a positive number" (low 0, open), "a number >= LOW", "a number in (LOW,
    HIGH]" ...; ``must`` replaces it where the message says more, as for :func:`check_int`.
    """
    if isinstance(value, bool):
        ok = False
    elif isinstance(value, numbers.Integral):
        ok = abs(int(value)) <= _FLOAT_MAX  # one larger has no float
    elif isinstance(value, numbers.Real):
        ok = not math.isnan(value) and (math.isfinite(value) or not finite)
    else:
        ok = False
    if ok and low is not None:
        ok = value > low if low_open else value >= low
    if ok and high is not None:
        ok = value < high if high_open else value <= high
    if not ok:
        rule = must or _number_rule(low, high, low_open, high_open, finite)
        raise InvalidInputError(f"{name} must be {rule}, got {value!r:.40}")
    return float(value)
