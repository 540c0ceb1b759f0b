"""The one table of numbers seed 001 leaves open: job profiles and the interference generator.

The paper (Sec. V and VI-A) names eight model types (its Table I) but publishes no profile numbers
and no fitted interference coefficients; everything below is our choice, made once here so that
measured values can replace it. Provenance of each column:

- ``grad_mb``: fp32 size of the model's parameters, i.e. the gradient a worker exchanges with the
  parameter servers each iteration. From published parameter counts: ResNet-50 25.6 M and VGG-16
  138 M (the original papers), Inception-BN 11.3 M (Ioffe & Szegedy 2015), ResNeXt-110 on CIFAR-10
  1.7 M (a 110-layer bottleneck ResNet of cardinality 1-4 is 1.7 M in He et al. 2016), DSSM 5 M
  (Huang et al. 2013, 30 k-trigram input), Seq2Seq 60 M (a 2 x 1024 LSTM encoder-decoder with 30 k
  vocabularies), CTC 3 M (Kim's CNN sentence classifier on MR with 300-d embeddings) and the MXNet
  word language model on PTB 19.8 M (2 x 650 LSTM, 10 k vocabulary). 4 bytes per parameter.
- ``cpu_cores``: CPU cores a worker keeps busy when running alone (data loading, augmentation,
  embedding lookups). Assumed, shaped by the paper's statements: CTC is CPU-intensive, ResNet-50
  relies on CPU (its Fig. 1b), image models decode JPEGs; recurrent and text models less so.
- ``pcie_gbps``: average PCIe traffic of a worker alone (input tensors host-to-device plus
  gradients device-to-host). Assumed, proportional to input size and gradient size per second;
  VGG-16 the heaviest (the paper: "VGG16 demands more of network I/O").
- ``iter_s``: compute time of one iteration on one GPU alone; ``iters_per_epoch``: iterations of
  one epoch with a single worker (with w workers each does ``iters_per_epoch / w``, the paper's
  "ideal time divided by the number of workers"). Assumed so that one single-worker epoch takes
  about one scheduling interval (30 min) on every model: the datasets are scaled down so a job
  lasts hours, not days (the paper's JCTs are a few to tens of intervals).
- ``ps_cpu_cores``: CPU cores of one parameter server (no GPU, no PCIe traffic). Assumed.

Epochs per job are uniform in :data:`EPOCHS` (our choice: about 70 % GPU load on the default
cluster with 15 jobs per interval per scheduler).

:data:`GENERATOR` holds the coefficients of the interference model (Sec. V-B) that the simulator
uses as ground truth and that :func:`tjap.placement.interference.model.co_location_samples` draws samples
from. Chosen so that slowdown stays near zero until the co-located CPU load nears the 8 physical
cores of a socket and then grows exponentially (the paper's rationale for the exponential form),
and so that PCIe contention costs a few percent per 10 Gbps of interfering traffic.
"""

from __future__ import annotations

import numpy as np

#: (name, grad_mb, cpu_cores, pcie_gbps, iter_s, iters_per_epoch) per model type (Table I order).
PROFILES = (
    ("resnet50", 102.4, 5.0, 24.0, 0.20, 9000),
    ("vgg16", 552.0, 3.0, 40.0, 0.36, 5000),
    ("inception_bn", 45.2, 4.0, 20.0, 0.12, 15000),
    ("resnext110", 6.8, 2.0, 8.0, 0.08, 22500),
    ("dssm", 20.0, 3.0, 6.0, 0.05, 36000),
    ("seq2seq", 240.0, 2.5, 16.0, 0.30, 6000),
    ("ctc", 12.0, 6.5, 4.0, 0.06, 30000),
    ("wlm", 79.2, 2.0, 10.0, 0.15, 12000),
)
MODEL_NAMES = tuple(p[0] for p in PROFILES)
GRAD_MB = np.array([p[1] for p in PROFILES])
CPU_CORES = np.array([p[2] for p in PROFILES])
PCIE_GBPS = np.array([p[3] for p in PROFILES])
ITER_S = np.array([p[4] for p in PROFILES])
ITERS_PER_EPOCH = np.array([p[5] for p in PROFILES], dtype=np.int64)
PS_CPU_CORES = 1.0
#: Inclusive range of a job's epochs.
EPOCHS = (2, 12)
#: Inclusive range of a job's workers and of its parameter servers (the paper: 1-4 each).
WORKERS = (1, 4)
PARAMETER_SERVERS = (1, 4)

#: Ground-truth interference coefficients (alpha1, alpha2, alpha3, lambda1, beta1, beta2, lambda2)
#: of S = alpha1 exp(alpha2 U_c + alpha3 C_J) + lambda1 + beta1 U_p + beta2 P_J + lambda2.
GENERATOR = {
    "alpha1": 0.02,
    "alpha2": 0.20,
    "alpha3": 0.10,
    "lambda1": -0.03,
    "beta1": 0.008,
    "beta2": 0.001,
    "lambda2": -0.01,
}

for _array in (GRAD_MB, CPU_CORES, PCIE_GBPS, ITER_S, ITERS_PER_EPOCH):
    _array.setflags(write=False)
