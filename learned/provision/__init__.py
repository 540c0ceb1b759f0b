"""Learned provisioners for chained jobs (seed 004): tree baselines (random forest, XGBoost), a
transformer foundation model and a mixture of transformer experts, with DQN and policy-gradient
heads, all behind the submit-or-wait protocol of :mod:`heuristics.provisioning`.

>>> from learned.provision import make_provisioner
>>> make_provisioner("moe_dqn").decide(episode)
"""

from __future__ import annotations

from learned.provision.policies import MODELS, load_provisioner


def make_provisioner(name: str, **options):
    """A hand-written (reactive, avg) or learned provisioner by name."""
    from heuristics.provisioning import POLICIES
    from heuristics.provisioning import make_provisioner as hand_written
    from tjap.errors import UnknownMethodError

    if name.partition("@")[0] in MODELS:
        return load_provisioner(name, **options)
    if name in POLICIES:
        return hand_written(name, **options)
    raise UnknownMethodError(f"unknown provisioner {name!r}; choose one of "
                             f"{', '.join([*POLICIES, *MODELS])}")


NAMES = ("reactive", "avg", *MODELS)

__all__ = ["MODELS", "NAMES", "load_provisioner", "make_provisioner"]
