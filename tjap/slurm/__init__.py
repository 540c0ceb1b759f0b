"""TJAP inside a real Slurm: the window placement service (``tjap slurm place``) and its advice
(``tjap slurm advise``).

Users submit jobs held (``sbatch --hold -N n ...``) to the partition the service serves; every
window the service reads the live switch tree, the idle nodes and the held jobs, solves the
window (by default with ``guarded``, never costlier than Slurm's own ``topology/tree`` choice),
then sets each placed job's ``ReqNodeList`` and releases it. See :mod:`tjap.slurm.service` and
:mod:`tjap.placement.slurm.queue`.
"""

from tjap.placement.slurm.queue import WaitTracker, eligible, plan_window
from tjap.slurm.service import PlacementService, ServiceConfig

__all__ = ["PlacementService", "ServiceConfig", "WaitTracker", "eligible", "plan_window"]
