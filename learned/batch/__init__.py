"""Learned provisioners for chained jobs (seed 004): tree baselines (random forest, XGBoost), a
transformer foundation model and a mixture of transformer experts, with DQN and policy-gradient
heads, all behind the submit-or-wait protocol of :mod:`tjap.heuristics.batch.rules`.

Every provisioner, hand-written or learned, is built by name through the one registry:

>>> from tjap.registry import make
>>> make("provision", "moe@2").decide(episode)   # doctest: +SKIP
"""

from __future__ import annotations

from tjap.learned.batch.policy import MODELS, load_provisioner

__all__ = ["MODELS", "load_provisioner"]
