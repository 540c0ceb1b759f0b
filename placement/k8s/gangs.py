"""Gated pods as jobs: whole gangs, their order, and the topology request Kueue's annotations ask.

A pod waits for tjap when it carries tjap's scheduling gate (:data:`GATE`, or another name given
to the controller). Pods are grouped into gangs, all of whose pods are placed together or none:

- the label ``tjap.io/gang`` (a plain pod group; ``tjap.io/gang-size`` says how many pods it has),
- else a JobSet's replicated job (its ``jobset.sigs.k8s.io/jobset-name`` and ``replicatedjob-name``
  labels; Kueue's pod set): ``replicatedjob-replicas`` Jobs of the Job's parallelism each,
- else the pods' owning batch/v1 Job (an indexed Job's pods: ``batch.kubernetes.io/job-completion-
  index`` gives each pod's rank): as many pods as its ``parallelism`` (at most its
  ``completions``), read from the Job itself (:func:`job_sizes`),
- else the pod alone.

``tjap.io/gang-size`` on the pods overrides the size a Job or JobSet gives.

A gang is ready when all its pods exist. Its request is read from Kueue's pod-set annotations
(``kueue.x-k8s.io/podset-required-topology``, ``-preferred-topology``, ``-slice-size``,
``-slice-required-topology``), so manifests written for Kueue's topology-aware scheduling carry
over: a required level is a job's ``within``, a preferred level its ``prefer``, slices its
``segment`` and ``segment_level`` (:mod:`tjap.placement.tree.jobs`). On a Kueue flavor without a
topology the same annotations go under tjap's names (``tjap.io/podset-preferred-topology``,
...: :data:`TJAP_ALIAS`), since Kueue refuses to admit a topology request there. One pod takes one node (the
model is node-granular: a pod that asks for part of a node's GPUs still takes the node).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tjap.core.errors import InvalidInputError

#: tjap's scheduling gate (pods created with it wait for the controller).
GATE = "tjap.io/placement"
GANG_LABEL = "tjap.io/gang"
GANG_SIZE = "tjap.io/gang-size"
#: The node a pod is planned on, written before any pod of its gang is released (the plan that
#: survives a restart of the controller).
PLANNED = "tjap.io/planned-node"
#: When the plan was written, in seconds on the controller's clock (with the pods'
#: ``activeDeadlineSeconds``, when their nodes are expected free again).
PLACED_AT = "tjap.io/placed-at"
KUEUE = "kueue.x-k8s.io/"
REQUIRED = KUEUE + "podset-required-topology"
PREFERRED = KUEUE + "podset-preferred-topology"
UNCONSTRAINED = KUEUE + "podset-unconstrained-topology"
SLICE_SIZE = KUEUE + "podset-slice-size"
SLICE_LEVEL = KUEUE + "podset-slice-required-topology"
INDEX = "batch.kubernetes.io/job-completion-index"
#: Pod annotation: seconds the gang may wait for a placement as cheap as its floor (its cost
#: alone on the whole cluster); see :class:`tjap.k8s.controller.Controller`'s topology_wait_s.
TOPOLOGY_WAIT = "tjap.io/topology-wait-seconds"
#: tjap's own names of Kueue's request annotations (``tjap.io/podset-required-topology``, ...),
#: for pods Kueue admits on a flavor without ``topologyName``: Kueue refuses to admit a pod set
#: that asks for a topology on such a flavor, so the request goes under tjap's names there.
TJAP_ALIAS = {key: "tjap.io/" + key[len(KUEUE) :] for key in (REQUIRED, PREFERRED, UNCONSTRAINED,
                                                              SLICE_SIZE, SLICE_LEVEL)}  # fmt: skip


TJAP_NAMES = frozenset(TJAP_ALIAS.values())


def request_annotations(annotations: dict) -> dict:
    """``annotations`` with tjap's names of the request (:data:`TJAP_ALIAS`) read as Kueue's;
    the same request under both names must agree."""
    out = dict(annotations)
    for key, alias in TJAP_ALIAS.items():
        if alias not in out:
            continue
        value = out.pop(alias)
        if key in out and str(out[key]) != str(value):
            raise InvalidInputError(
                f"{key} ({out[key]!r}) and {alias} ({value!r}) differ; give one of them"
            )
        out[key] = value
    return out


@dataclass
class Gang:
    """One job: its pods (in rank order), the size it declares, and its Kueue request."""

    key: tuple[str, str]  # (namespace, name)
    pods: list = field(default_factory=list)
    size: int | None = None
    priority: int = 0
    created: str = ""
    annotations: dict = field(default_factory=dict)

    @property
    def namespace(self) -> str:
        return self.key[0]

    @property
    def name(self) -> str:
        return self.key[1]

    @property
    def complete(self) -> bool:
        """All of its pods exist (its declared size, if any, is reached; never when its Job is
        gone: size 0)."""
        return self.size is None or (self.size > 0 and len(self.pods) >= self.size)

    def job(self, levels: list[str]) -> dict:
        """The window job of this gang (:class:`~tjap.placement.tree.jobs.Job`'s JSON form),
        its level keys resolved against ``levels`` (node-label keys, the top level first). A bad
        request is an :class:`InvalidInputError` naming the annotation and the fix."""
        a = request_annotations(self.annotations)
        job: dict = {"nodes": len(self.pods), **self._runtime()}

        def level(key: str) -> str:
            value = a[key]
            if value not in levels:
                raise InvalidInputError(
                    f"{key}: {value!r} is not a level of this cluster; its levels are "
                    f"{', '.join(levels)}"
                )
            return value

        if (
            a.get(REQUIRED) == "kubernetes.io/hostname"
            or a.get(PREFERRED) == "kubernetes.io/hostname"
        ):
            if len(self.pods) > 1:
                raise InvalidInputError(
                    f"the job asks its {len(self.pods)} pods on one node (kubernetes.io/hostname); "
                    "tjap places one pod per node: ask for a level above the host"
                )
            return job  # one pod on one node: nothing more to ask
        if REQUIRED in a and PREFERRED in a:
            raise InvalidInputError(f"{REQUIRED} and {PREFERRED} are both set; give one of them")
        if REQUIRED in a:
            job["within"] = level(REQUIRED)
        elif PREFERRED in a:
            job["prefer"] = level(PREFERRED)
        if SLICE_SIZE in a or SLICE_LEVEL in a:
            if not (SLICE_SIZE in a and SLICE_LEVEL in a):
                raise InvalidInputError(f"{SLICE_SIZE} and {SLICE_LEVEL} go together; give both")
            raw = str(a[SLICE_SIZE]).strip()
            if not raw.isdigit() or int(raw) < 1:
                raise InvalidInputError(f"{SLICE_SIZE}: {raw!r:.30} is not a positive whole number")
            size = int(raw)
            if len(self.pods) % size:
                raise InvalidInputError(
                    f"{SLICE_SIZE}: slices of {size} pods do not divide the {len(self.pods)} pods "
                    "of the job; give a size that divides it"
                )
            job["segment"] = size
            job["segment_level"] = level(SLICE_LEVEL)
        return job

    def _runtime(self) -> dict:
        """``{"runtime_s": S}`` when every pod of the gang has ``spec.activeDeadlineSeconds``
        (S their largest, the time the gang may hold its nodes), else empty."""
        deadlines = [deadline(p) for p in self.pods]
        if not deadlines or None in deadlines:
            return {}
        return {"runtime_s": float(max(deadlines))}


def deadline(pod: dict) -> int | None:
    """A pod's ``spec.activeDeadlineSeconds`` (a whole number >= 1), or None when it has none
    (the API server refuses any other value)."""
    if not isinstance(pod, dict):  # a placeholder (the audit's gangs of a pod count)
        return None
    value = (pod.get("spec") or {}).get("activeDeadlineSeconds")
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        return None
    return value


def has_gate(pod: dict, gate: str = GATE) -> bool:
    return any(g.get("name") == gate for g in pod.get("spec", {}).get("schedulingGates") or [])


JOBSET = "jobset.sigs.k8s.io/"


def owner_job(pod: dict) -> tuple[str, str] | None:
    """``(namespace, name)`` of the batch/v1 Job that owns a pod, or None."""
    meta = pod["metadata"]
    for owner in meta.get("ownerReferences") or []:
        if owner.get("kind") == "Job" and str(owner.get("apiVersion", "")).startswith("batch/"):
            return meta.get("namespace", "default"), owner.get("name")
    return None


def job_sizes(pods: list[dict], read_job) -> dict[tuple[str, str], int]:
    """The pods each Job (or JobSet replicated job) of ``pods`` makes at once, by gang key:
    ``read_job(namespace, name)`` returns the batch/v1 Job (a dict) or None when it is gone.
    A Job runs ``min(parallelism, completions)`` pods (parallelism 1 by default); a JobSet's
    replicated job ``replicatedjob-replicas`` such Jobs; a Job that is gone gives 0. Pods that declare ``tjap.io/gang-size``
    are left to it."""
    sizes: dict[tuple[str, str], int] = {}
    seen: dict[tuple[str, str], int | None] = {}
    for pod in pods:
        key, declared = gang_key(pod)
        owner = owner_job(pod)
        if declared is not None or owner is None or key in sizes:
            continue
        if owner not in seen:
            job = read_job(*owner)
            spec = (job or {}).get("spec") or {}
            parallel = spec.get("parallelism", 1)
            completions = spec.get("completions")
            seen[owner] = (
                0
                if job is None
                else int(min(parallel, completions) if completions is not None else parallel)
            )
        per_job = seen[owner]  # 0: the Job is gone (its pods go too), the gang is never whole
        labels = pod["metadata"].get("labels") or {}
        replicas = str(labels.get(JOBSET + "replicatedjob-replicas", "1"))
        sizes[key] = per_job * (
            int(replicas) if key[1].startswith("jobset/") and replicas.isdigit() else 1
        )
    return sizes


def gang_key(pod: dict) -> tuple[tuple[str, str], int | None]:
    """The gang of a pod, ``(namespace, name)``, and the size it declares with
    ``tjap.io/gang-size`` (None: not declared; a pod alone declares 1)."""
    meta = pod["metadata"]
    ns, labels, notes = (
        meta.get("namespace", "default"),
        meta.get("labels") or {},
        meta.get("annotations") or {},
    )
    size = notes.get(GANG_SIZE) or labels.get(GANG_SIZE)
    declared = int(size) if size is not None and str(size).isdigit() else None
    if GANG_LABEL in labels:
        return (ns, f"gang/{labels[GANG_LABEL]}"), declared
    jobset = labels.get(JOBSET + "jobset-name")
    if jobset:
        replicated = labels.get(JOBSET + "replicatedjob-name", "")
        return (ns, f"jobset/{jobset}/{replicated}"), declared
    owner = owner_job(pod)
    if owner is not None:
        return (ns, f"job/{owner[1]}"), declared
    return (ns, f"pod/{meta['name']}"), 1


def _rank(pod: dict) -> tuple:
    meta = pod["metadata"]
    index = (meta.get("annotations") or {}).get(INDEX) or (meta.get("labels") or {}).get(INDEX)
    return (int(index) if index is not None and str(index).isdigit() else 1 << 30, meta["name"])


def gangs(pods: list[dict], gate: str = GATE, sizes: dict | None = None) -> list[Gang]:
    """The gangs of the pods that carry ``gate`` (other pods are left out), in the order they
    are placed: highest priority first, then the oldest first (by their first pod's creation
    time), then by name. A gang's pods are in rank order (completion index, then name).
    ``sizes`` (gang key -> pods, :func:`job_sizes`) gives the size of gangs whose pods declare
    none."""
    found: dict[tuple[str, str], Gang] = {}
    for pod in pods:
        if not has_gate(pod, gate) or pod["metadata"].get("deletionTimestamp"):
            continue
        key, size = gang_key(pod)
        gang = found.setdefault(key, Gang(key))
        gang.pods.append(pod)
        if size is None and sizes:
            size = sizes.get(key)
        if size is not None:
            gang.size = size
        gang.priority = max(gang.priority, int(pod.get("spec", {}).get("priority") or 0))
        created = pod["metadata"].get("creationTimestamp") or ""
        gang.created = min(gang.created, created) if gang.created else created
        gang.annotations.update(
            {
                k: v
                for k, v in (pod["metadata"].get("annotations") or {}).items()
                if k.startswith(KUEUE) or k in TJAP_NAMES or k == TOPOLOGY_WAIT
            }
        )
    for gang in found.values():
        gang.pods.sort(key=_rank)
    return sorted(found.values(), key=lambda g: (-g.priority, g.created, g.key))
