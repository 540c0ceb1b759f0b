"""Kubernetes on the model floor: the nodes and pods tjap reads, and a control plane to run.

- :mod:`.nodes`: the Node objects of any topology tjap reads (Kueue-style level labels, GPU
  capacity) and the topology the nodes of a cluster draw.
- :mod:`.gangs`: pods that carry a scheduling gate grouped into jobs (a gang: all its pods or
  none), with the topology requests of Kueue's pod-set annotations.
- :mod:`.harness`: a throw-away local control plane (etcd, kube-apiserver, kube-scheduler built
  from Go modules by ``.ci/build-k8s``) whose nodes are fake (no kubelet), for the tests, the
  benchmarks and ``tjap k8s cluster``.
- :mod:`.memory`: the control plane's in-memory twin (objects, merge patches, kube-scheduler's
  binding of hostname-selected pods), for the stream benchmark's offline mode and the tests.

The placement controller's loop is in :mod:`tjap.k8s`.
"""
