"""Child processes that receive real signals."""

from __future__ import annotations

import signal


def default_sigint() -> None:
    """Run in the child before exec: SIGINT at its default. A shell starts background jobs (a CI
    runner's, say) with SIGINT ignored, an ignored signal stays ignored across exec, and Python
    then installs no Ctrl-C handler: right for such a user, but not the case this test checks."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
