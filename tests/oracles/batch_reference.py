"""The textbook FCFS / EASY scheduler in plain Python, independent of the batch simulator's
kernels: the oracle of the simulator's tests and of tjap.placement.tree.online's per-job policies, and the
random job tables they run on."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from tjap.placement.batch.jobs import Jobs


def textbook_starts(
    submit, nodes, limit, runtime, n: int, easy: bool, end_at_reservation: bool = False
) -> list[int]:
    """Start time of every job (rows in submission order) on ``n`` nodes. The main pass starts
    queued jobs in order while the head fits. With ``easy`` the head that does not fit is
    reserved at its shadow time (predicted from the time limits; every job predicted to end by
    then frees its nodes), and a later job backfills if it fits now and ends before the shadow
    time (with ``end_at_reservation``: at it at the latest) or fits the nodes the head leaves
    spare then."""
    submit, nodes, limit, runtime = (list(map(int, a)) for a in (submit, nodes, limit, runtime))
    start = [-1] * len(submit)
    running, queue, free, nxt = [], [], n, 0
    while nxt < len(submit) or running:
        t = min([start[j] + runtime[j] for j in running] + submit[nxt : nxt + 1])
        for j in [j for j in running if start[j] + runtime[j] == t]:
            running.remove(j)
            free += nodes[j]
        while nxt < len(submit) and submit[nxt] == t:
            queue.append(nxt)
            nxt += 1

        def begin(j):
            nonlocal free
            queue.remove(j)
            start[j], free = t, free - nodes[j]
            running.append(j)

        while queue and nodes[queue[0]] <= free:
            begin(queue[0])
        if easy and queue:
            predicted = {j: max(start[j] + limit[j], t) for j in running}
            need = nodes[queue[0]]
            shadow = min(
                e
                for e in predicted.values()
                if free + sum(nodes[j] for j in running if predicted[j] <= e) >= need
            )
            extra = free + sum(nodes[j] for j in running if predicted[j] <= shadow) - need
            for j in list(queue[1:]):
                end = t + limit[j]
                in_time = end <= shadow if end_at_reservation else end < shadow
                if nodes[j] <= free and (in_time or nodes[j] <= extra):
                    if not in_time:
                        extra -= nodes[j]
                    begin(j)
    return start


def jobs_starts(jobs: Jobs, n: int, easy: bool, end_at_reservation: bool = False) -> list[int]:
    """:func:`textbook_starts` of a job table."""
    return textbook_starts(
        jobs.submit_s, jobs.nodes, jobs.limit_s, jobs.runtime_s, n, easy, end_at_reservation
    )


@st.composite
def job_tables(draw, max_jobs=14, max_nodes=6, min_runtime_share=0.0):
    """(a random job table, its node count): runtimes are a share >= ``min_runtime_share`` of
    the limits (at least 1 s when that share is positive)."""
    n = draw(st.integers(1, max_nodes))
    count = draw(st.integers(1, max_jobs))
    gaps = draw(st.lists(st.integers(0, 8), min_size=count, max_size=count))
    size = draw(st.lists(st.integers(1, n), min_size=count, max_size=count))
    limit = draw(st.lists(st.integers(1, 30), min_size=count, max_size=count))
    share = draw(st.lists(st.floats(min_runtime_share, 1), min_size=count, max_size=count))
    least = 1 if min_runtime_share > 0 else 0
    runtime = [max(least, int(lim * f)) for lim, f in zip(limit, share)]
    return Jobs.build(submit_s=np.cumsum(gaps), nodes=size, limit_s=limit, runtime_s=runtime), n
