"""Exceptions raised by tjap for bad input and unusable solvers.

Every error a user can trigger is a subclass of :class:`TjapError` (itself a ``ValueError``), with a
message that names the field, the bad value and what is allowed. The CLI prints these as one line
and exits with code 2, except :class:`SlurmUnreachableError` and
:class:`KubernetesUnreachableError` (the cluster cannot be reached), exit 3.
"""


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
