"""Hand-written placement policies of seed 001 behind
:class:`tjap.placement.interference.PlacementPolicy`: ``place(sim, partition, jobs)`` returns one plan
(a GPU group per task, workers first) or None per queued job, and the simulator commits the plans
in order (:mod:`tjap.placement.interference.episode`). Build them by name with
``tjap.registry.make("interference", name, **options)``.

The per-task rules and the whole-job rule are in :mod:`tjap.heuristics.interference.rules`:

- **tetris**, **lb**, **lif**, **random** (Sec. VI-A of the paper): a job's tasks placed one at a
  time on the feasible GPU group of the partition with the best score
  (:class:`~tjap.heuristics.interference.rules.TaskPolicy`);
- **whole** (ours, an extra baseline; not in the paper): each job whole on one server when one of
  the partition holds it, at the server and socket split of least predicted cost
  (:class:`~tjap.heuristics.interference.rules.WholeJobPolicy`).

The annealing operator is in :mod:`tjap.heuristics.interference.anneal`:

- **opt**: the batch of one scheduler at once, by simulated annealing over task-to-group moves
  (:class:`~tjap.heuristics.interference.anneal.OptPolicy`), from a rule's plans.

The predicted costs they read (the interference model on a scratch copy of the state, the cost of
a one-server split) are :mod:`tjap.placement.interference.planning`.
"""
