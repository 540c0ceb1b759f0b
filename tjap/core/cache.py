"""Where the project keeps what it builds outside a clone: the Slurm that
``.ci/build-slurm-newer`` compiles, and any other tool a harness builds once and reuses.

One root, ``$TJAP_CACHE_ROOT`` (default ``/var/cache/tjap``); every harness and build script
reads it, so pointing it at an empty folder shows what a machine with nothing cached sees. The
default test suite does exactly that for every test not marked ``slurm`` or ``docs``
(``tests/conftest.py``): a default-suite test that depends on an earlier run's build fails
there instead of passing only on the machines that built it.
"""

from __future__ import annotations

import os
from pathlib import Path

#: The environment variable that moves the cache root.
CACHE_ROOT_ENV = "TJAP_CACHE_ROOT"
#: The cache root when the variable is unset or empty.
DEFAULT_CACHE_ROOT = "/var/cache/tjap"


def cache_root() -> Path:
    """The folder the project's builds are cached under: ``$TJAP_CACHE_ROOT``, else
    ``/var/cache/tjap``."""
    return Path(os.environ.get(CACHE_ROOT_ENV) or DEFAULT_CACHE_ROOT)
