"""``python -m tjap ...``: the ``tjap`` command without its console script (a clone that is not
installed, or a Python whose scripts are not on ``PATH``)."""

import sys

from tjap.cli import main

if __name__ == "__main__":
    sys.exit(main())
