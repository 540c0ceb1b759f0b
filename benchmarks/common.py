"""Small helpers every benchmark shares: tables, CSV, plots, progress bars, the sweep executor.

They live in the tjap core (:mod:`tjap.report`, :mod:`tjap.executor`), which the command line and the
simulators use too; this module gathers them for the benchmark scripts.
"""

from tjap.executor import (CsvRows, TaskFailure, executor_from_args,  # noqa: F401
                           make_executor, progress)
from tjap.report import format_table, pyplot, save_figure, write_csv  # noqa: F401
