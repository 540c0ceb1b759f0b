"""The live mode of the chained-job provisioner end to end on a real local Slurm (marked ``slurm``;
``make test-slurm`` installs Slurm, each module starts its own throw-away cluster): the
predecessor is watched, the successor submitted once by sbatch, every decision logged, and the
outcome read from Slurm's own records. Compressed 600x: a decision every second, the predecessor
runs 12 s (2 trace hours) under a 1-minute (10 h) limit."""

from __future__ import annotations

import pytest

from tjap.heuristics.batch.rules import Reactive
from tjap.placement.batch.chained import Pair
from tjap.placement.slurm.chained import run_live
from tjap.placement.slurm.harness import LocalSlurm, LocalSlurmConfig, slurm_available

_REASON = slurm_available()
pytestmark = [
    pytest.mark.slurm,
    pytest.mark.skipif(_REASON is not None, reason=f"no local Slurm: {_REASON}"),
]

H = 3600
PAIR = Pair(nodes=2, runtime_s=2 * H, limit_s=10 * H)
COMPRESS = 600


@pytest.fixture(scope="module")
def cluster():
    with LocalSlurm(LocalSlurmConfig(cpus=8)) as slurm:
        yield slurm


class SubmitAtDecision:
    """Submits at its ``k``-th decision once the predecessor runs: an early submitter whose timing
    does not depend on the (idle) cluster, so that the early path is checked deterministically."""

    name = "submit_at_decision"

    def __init__(self, k: int):
        self.k, self.asked = k, 0

    def decide(self, episode) -> bool:
        if episode.predecessor()["start_s"] is None:
            return False
        self.asked += 1
        return self.asked >= self.k


def _episode(cluster, provisioner, jobcomp_path=None):
    # jobcomp_path None: read from `scontrol show config`
    result = run_live(
        cluster.client(),
        provisioner,
        pair=PAIR,
        compress=COMPRESS,
        jobcomp_path=jobcomp_path,
        cancel_successor=True,
        workdir=str(cluster.workdir),
        timeout_s=50,
    )
    records = {j.job_id: j for j in cluster.completed()}
    successors = [
        j for j in records.values() if j.name == "tjap-successor" and j.job_id > result.pred_job_id
    ]
    assert [j.job_id for j in successors] == [result.succ_job_id]  # submitted exactly once
    assert not [q for q in cluster.client().queue() if q.name == "tjap-successor"]
    pred, succ = records[result.pred_job_id], records[result.succ_job_id]
    # the outcome is Slurm's own successor start minus predecessor end
    assert (result.pred_end, result.succ_start) == (pred.end_time, succ.start_time)
    assert result.outcome_wall_s == succ.start_time - pred.end_time
    assert result.outcome_h == pytest.approx(result.outcome_wall_s * COMPRESS / H)
    assert succ.start_time >= succ.submit_time >= pred.submit_time
    d = result.decisions
    assert d and all(x.action == "wait" for x in d[:-1]) and d[-1].action.startswith("submit")
    assert all(b.wall_s > a.wall_s for a, b in zip(d, d[1:]))
    assert d[0].trace_h < 0.5 and all(x.remaining_h is not None for x in d)
    return result, pred, succ


def test_reactive_submits_when_the_predecessor_ends(cluster):
    result, pred, succ = _episode(cluster, Reactive())
    assert result.fallback and result.decisions[-1].action == "submit (predecessor ended)"
    assert result.decisions[-1].pred_state == "done"
    assert succ.submit_time >= pred.end_time  # never before the end
    assert 0 <= result.outcome_wall_s <= 3  # an idle cluster: about 1 s
    # about one decision per (compressed) 10 minutes over the predecessor's 12 s
    assert 8 <= len(result.decisions) <= 16


def test_early_submitter_overlaps_but_never_starts_before_submission(cluster):
    policy = SubmitAtDecision(3)
    result, pred, succ = _episode(cluster, policy, jobcomp_path=cluster.jobcomp_path)
    assert not result.fallback and result.decisions[-1].action == "submit"
    assert result.decisions[-1].pred_state == "running" and policy.asked == 3
    assert succ.submit_time < pred.end_time  # submitted while it ran
    assert succ.start_time >= succ.submit_time
    assert succ.start_time >= int(result.succ_submitted_wall)
    assert result.outcome_wall_s < -5 and result.outcome_h < -0.8  # overlap, in trace hours
