"""tjap inside Kubernetes: the placement controller (:mod:`.controller`) that places whole gangs
of gated pods on the nodes tjap picks, never worse than Kueue's choice per window."""
