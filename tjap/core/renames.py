"""Old names kept for one release after a rename: a module's ``__getattr__`` (PEP 562) that
answers an old name with the class now under its new name and a :class:`DeprecationWarning`.

In the module that defined the class, and in each package that re-exported it::

    __getattr__ = renamed(__name__, {"Topology": "DataCentre"})

The old name is never a second class: ``old is new`` holds, so ``isinstance`` checks and
unpickling (pickle looks a class up by module and name) keep working until the name goes.
"""

from __future__ import annotations

import sys
import warnings

#: The release that removes the old names.
REMOVED_IN = "0.5.0"


def renamed(module: str, names: dict[str, str]):
    """A module-level ``__getattr__`` for ``module`` (its ``__name__``) that maps each old name
    of ``names`` (old -> new) to the module's attribute of the new name, with a
    ``DeprecationWarning`` ``"<module>.<old> is renamed <new>; the old name goes in 0.5.0"``;
    any other missing name raises :class:`AttributeError` as usual."""

    def __getattr__(name: str):
        new = names.get(name)
        if new is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        warnings.warn(
            f"{module}.{name} is renamed {new}; the old name goes in {REMOVED_IN}",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(sys.modules[module], new)

    return __getattr__
