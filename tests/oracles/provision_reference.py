"""The recording of one chained-job episode in plain Python, driving
:class:`~tjap.placement.batch.chained.ChainedEpisode` directly (no environment): the oracle of the
training data that :func:`tjap.learned.batch.episodes.record_episode` records through the
gymnasium environment.

One pass along the "wait" path: at each decision the raw snapshot row ending now, the
predecessor's remaining time and whether it runs, and a probe (checkpoint, submit, run the replay
until the successor starts, rewind) giving the outcome and the successor's wait had it been
submitted then; the reactive fallback's outcome at the end.
"""

from __future__ import annotations

import numpy as np

from tjap.placement.batch.chained import ChainedEpisode, snapshot_features


def reference_record(jobs, cluster_nodes, inject_s, pair, config=None, history=144) -> dict:
    """Per-episode arrays with the keys and dtypes of ``record_episode``."""
    ep = ChainedEpisode(jobs, cluster_nodes, inject_s, pair, config=config, history=history)
    rows = list(ep.observation())
    wait, outcome, remaining, running = [], [], [], []
    while True:
        rows.append(snapshot_features(ep.sim, ep.pred, ep.succ))
        pred = ep.predecessor()
        started = pred["start_s"] is not None
        remaining.append(
            float(max(pred["expected_end_s"] - ep.now, 0)) if started else float(pred["limit_s"])
        )
        running.append(started)
        saved = ep.checkpoint()
        ep.step(True)
        outcome.append(ep.outcome())
        wait.append(int(ep.sim._state["start"][ep.succ]) - ep.submitted_s)
        ep.rewind(saved)
        if ep.step(False):
            break
    return {
        "rows": np.array(rows, np.float32),
        "wait_s": np.array(wait, np.float64),
        "outcome_s": np.array(outcome, np.float64),
        "remaining_s": np.array(remaining, np.float64),
        "running": np.array(running, bool),
        "inject_s": int(inject_s),
        "nodes": pair.nodes,
        "fallback_outcome_s": ep.outcome(),
    }
