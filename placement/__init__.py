"""placement: the other placement problems as models and simulators, with no search and no learning.

Sub-packages: ``batch`` (event-driven batch-queue simulator with priority and backfilling, trace
loaders and a real Slurm adapter, seed 004), ``network`` (three-tier composable data-centre network
with k-shortest-path connectivity, seed 003) and ``interference`` (servers, jobs, the interference
model and the JCT simulator, seed 001). They are filled in by their own issues.
"""

if __name__ != "tjap.placement":
    raise ImportError("the folder placement/ is installed as tjap.placement: write "
                      "`import tjap.placement` (or `from tjap.placement import ...`)")
