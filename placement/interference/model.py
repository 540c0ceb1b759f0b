"""The interference model of seed 001 (Sec. V-B), its fitting, the TRACON-style alternatives and
the co-location sample generator that stands in for the paper's 480 measured samples.

Slowdown of a job J (one worker) co-located with jobs J~ on a server:

    S = S_cpu + S_pcie
    S_cpu  = alpha1 * exp(alpha2 * U_c + alpha3 * C_J) + lambda1
    S_pcie = beta1 * U_p + beta2 * P_J + lambda2
    U_c = sum of C_j over J's GPU group + sum over the other sockets of (their C_j - n_core)_+
    U_p = sum of P_j over J's GPU group

with C the CPU cores and P the PCIe Gbps of each task alone. lambda1 and lambda2 only ever appear
as a sum, so fitting recovers ``lambda = lambda1 + lambda2`` (:attr:`Coefficients.constant`).

Samples (:func:`co_location_samples`, documented there) come from the model with known
coefficients (:data:`tjap.placement.interference.profiles.GENERATOR`) plus noise, so that our fitting
code can be checked for recovering them, and the paper's Table III (prediction error of Linear,
Quad, ours and ours without PCIe or CPU terms on held-out samples) has a reproducible analogue.
Measured samples (a :class:`Samples` built from real co-location runs) can be fitted the same way.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from tjap.core.errors import InvalidInputError, UnknownMethodError, check_int, check_number
from tjap.placement.interference import profiles

#: Fitting models of Table III.
FIT_MODELS = ("linear", "quad", "ours", "ours_wo_pcie", "ours_wo_cpu")
#: The paper's Table III, prediction error (%).
PAPER_TABLE3 = {
    "linear": 24.6,
    "quad": 22.9,
    "ours": 13.1,
    "ours_wo_pcie": 27.5,
    "ours_wo_cpu": 36.3,
}


@dataclass(frozen=True)
class Coefficients:
    """Coefficients of S = alpha1 exp(alpha2 U_c + alpha3 C_J) + lambda1 + beta1 U_p + beta2 P_J
    + lambda2."""

    alpha1: float
    alpha2: float
    alpha3: float
    lambda1: float
    beta1: float
    beta2: float
    lambda2: float = 0.0

    def __post_init__(self):
        for name, value in asdict(self).items():
            check_number(f"interference coefficient {name}", value)

    @classmethod
    def generator(cls) -> "Coefficients":
        """The ground truth of the simulator and the sample generator."""
        return cls(**profiles.GENERATOR)

    @property
    def constant(self) -> float:
        return self.lambda1 + self.lambda2

    def as_array(self) -> np.ndarray:
        """(alpha1, alpha2, alpha3, lambda1, beta1, beta2, lambda2) for the kernels."""
        return np.array(
            [
                self.alpha1,
                self.alpha2,
                self.alpha3,
                self.lambda1,
                self.beta1,
                self.beta2,
                self.lambda2,
            ]
        )

    def predict(self, cpu_self, pcie_self, u_cpu, u_pcie) -> np.ndarray:
        """The unclipped model S for arrays of C_J, P_J, U_c, U_p."""
        return (
            self.alpha1
            * np.exp(
                self.alpha2 * np.asarray(u_cpu, float) + self.alpha3 * np.asarray(cpu_self, float)
            )
            + self.constant
            + self.beta1 * np.asarray(u_pcie, float)
            + self.beta2 * np.asarray(pcie_self, float)
        )


def interfering_cpu(same_cpu, other_socket_cpu, n_core) -> np.ndarray:
    """U_c: the CPU of J's own socket plus what the other socket's load exceeds its cores by."""
    return np.asarray(same_cpu, float) + np.maximum(
        np.asarray(other_socket_cpu, float) - np.asarray(n_core, float), 0.0
    )


@dataclass(frozen=True)
class Samples:
    """Co-location samples: per sample the job's C_J, P_J, the interference U_c, U_p and the
    measured slowdown."""

    cpu_self: np.ndarray
    pcie_self: np.ndarray
    u_cpu: np.ndarray
    u_pcie: np.ndarray
    slowdown: np.ndarray

    def __post_init__(self):
        n = None
        for name in ("cpu_self", "pcie_self", "u_cpu", "u_pcie", "slowdown"):
            a = np.asarray(getattr(self, name), dtype=float)
            if a.ndim != 1 or (n is not None and len(a) != n) or not np.isfinite(a).all():
                raise InvalidInputError(
                    f"samples {name} must be a 1-d array of finite numbers "
                    "with one entry per sample"
                )
            n = len(a)
            object.__setattr__(self, name, a)

    def __len__(self) -> int:
        return len(self.slowdown)

    def subset(self, index) -> "Samples":
        return Samples(
            self.cpu_self[index],
            self.pcie_self[index],
            self.u_cpu[index],
            self.u_pcie[index],
            self.slowdown[index],
        )


def co_location_samples(
    count: int = 480,
    seed: int = 0,
    *,
    noise: float = 0.1,
    coefficients: Coefficients | None = None,
    cores: int = 10,
) -> Samples:
    """Samples like the paper's 480: a job's worker on socket 0 of a server with two sockets of
    ``cores`` physical cores (the paper's two E5-2630 CPUs, 10 cores) and two GPUs per socket.

    Per sample: the job's model type is uniform over the 8 profiles; socket 0 gets, with
    probability 0.6, a worker of another uniform model on its second GPU; socket 1 gets 0-2 such
    workers; a CPU stress generator (the paper's arithmetic workload) adds U{0..cores} cores to
    socket 0 with probability 0.5 and U{0..cores} to socket 1; no socket holds more than its
    2 x cores hyperthreads (the simulator's limit), and what socket 1 holds beyond its physical
    cores spills into U_c. Samples without any interference are redrawn. The slowdown is the model's
    with ``coefficients`` (default the generator's), times (1 + N(0, noise)), plus N(0, noise / 10)
    (``noise`` = 0 gives exact values).
    """
    for name, value, low in (("count", count, 8), ("cores", cores, 1)):
        check_int(f"samples {name}", value, low)
    check_number("noise", noise, 0, 1)
    coef = coefficients or Coefficients.generator()
    rng = np.random.default_rng(seed)
    n_models = len(profiles.MODEL_NAMES)
    rows = []
    while len(rows) < count:
        model = rng.integers(n_models)
        same_cpu = same_pcie = other_cpu = 0.0
        if rng.random() < 0.6:
            m = rng.integers(n_models)
            same_cpu, same_pcie = profiles.CPU_CORES[m], profiles.PCIE_GBPS[m]
        for m in rng.integers(n_models, size=rng.integers(3)):
            other_cpu += profiles.CPU_CORES[m]
        room = max(0.0, 2 * cores - profiles.CPU_CORES[model] - same_cpu)
        if rng.random() < 0.5:
            same_cpu += min(rng.integers(cores + 1), room)
        other_cpu = min(other_cpu + rng.integers(cores + 1), 2 * cores)
        u_cpu = float(interfering_cpu(same_cpu, other_cpu, cores))
        if u_cpu == 0 and same_pcie == 0:
            continue
        rows.append((profiles.CPU_CORES[model], profiles.PCIE_GBPS[model], u_cpu, same_pcie))
    c, p, u, up = (np.array(col) for col in zip(*rows))
    truth = coef.predict(c, p, u, up)
    measured = truth * (1 + noise * rng.standard_normal(count)) + noise / 10 * rng.standard_normal(
        count
    )
    return Samples(c, p, u, up, measured)


# -- fitting ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FittedModel:
    """A fitted model of Table III: ``name`` in :data:`FIT_MODELS`, its parameters, and (for the
    exponential forms) the :class:`Coefficients`."""

    name: str
    params: np.ndarray
    coefficients: Coefficients | None = None

    def predict(self, samples: Samples) -> np.ndarray:
        if self.coefficients is not None:
            return self.coefficients.predict(
                samples.cpu_self, samples.pcie_self, samples.u_cpu, samples.u_pcie
            )
        return _linear_features(self.name, samples) @ self.params


def _linear_features(name: str, s: Samples) -> np.ndarray:
    one = np.ones(len(s))
    if name == "linear":
        cols = [s.u_cpu, s.cpu_self, s.u_pcie, s.pcie_self, one]
    elif name == "quad":
        cols = [
            s.u_cpu,
            s.cpu_self,
            s.u_pcie,
            s.pcie_self,
            s.u_cpu**2,
            s.cpu_self**2,
            s.u_pcie**2,
            s.pcie_self**2,
            s.u_cpu * s.cpu_self,
            s.u_pcie * s.pcie_self,
            one,
        ]
    elif name == "ours_wo_cpu":
        cols = [s.u_pcie, s.pcie_self, one]
    else:
        raise UnknownMethodError(
            f"unknown fitting model {name!r}; choose one of {', '.join(FIT_MODELS)}"
        )
    return np.stack(cols, axis=1)


def _exp_design(s: Samples, a2: float, a3: float, pcie: bool) -> np.ndarray:
    cols = [np.exp(a2 * s.u_cpu + a3 * s.cpu_self)]
    if pcie:
        cols += [s.u_pcie, s.pcie_self]
    return np.stack(cols + [np.ones(len(s))], axis=1)


def _fit_exponential(s: Samples, pcie: bool, iterations: int = 200) -> Coefficients:
    """Least squares for the exponential form: a grid over (alpha2, alpha3) with the linear
    coefficients solved exactly (variable projection), then Levenberg-Marquardt on all of them."""
    y = s.slowdown
    best = None
    for a2 in np.linspace(0.0, 1.0, 21):
        for a3 in np.linspace(-0.5, 0.5, 21):
            x = _exp_design(s, a2, a3, pcie)
            lin, *_ = np.linalg.lstsq(x, y, rcond=None)
            err = float(np.sum((x @ lin - y) ** 2))
            if best is None or err < best[0]:
                best = (err, a2, a3, lin)
    _, a2, a3, lin = best
    theta = np.array([lin[0], a2, a3, *lin[1:]])  # a1, a2, a3, [b1, b2], lam

    def residual_and_jacobian(th):
        e = np.exp(th[1] * s.u_cpu + th[2] * s.cpu_self)
        cols = [e, th[0] * s.u_cpu * e, th[0] * s.cpu_self * e]
        pred = th[0] * e + th[-1]
        if pcie:
            pred = pred + th[3] * s.u_pcie + th[4] * s.pcie_self
            cols += [s.u_pcie, s.pcie_self]
        cols.append(np.ones(len(s)))
        return pred - y, np.stack(cols, axis=1)

    damping = 1e-3
    r, jac = residual_and_jacobian(theta)
    cost = float(r @ r)
    for _ in range(iterations):
        jtj, jtr = jac.T @ jac, jac.T @ r
        step = np.linalg.solve(jtj + damping * np.diag(np.diag(jtj) + 1e-12), -jtr)
        trial = theta + step
        r_new, jac_new = residual_and_jacobian(trial)
        cost_new = float(r_new @ r_new)
        if np.isfinite(cost_new) and cost_new < cost:
            theta, r, jac = trial, r_new, jac_new
            done = cost - cost_new <= 1e-15 * max(cost, 1e-30)
            cost = cost_new
            damping = max(damping / 3, 1e-12)
            if done or cost < 1e-28:
                break
        else:
            damping *= 4
            if damping > 1e12:
                break
    b1, b2 = (theta[3], theta[4]) if pcie else (0.0, 0.0)
    return Coefficients(
        float(theta[0]),
        float(theta[1]),
        float(theta[2]),
        float(theta[-1]),
        float(b1),
        float(b2),
        0.0,
    )


def fit(samples: Samples, model: str = "ours") -> FittedModel:
    """Least-squares fit of one of :data:`FIT_MODELS` to ``samples``."""
    if not isinstance(samples, Samples):
        raise InvalidInputError(
            f"samples must be a tjap.placement.interference.Samples, got {type(samples).__name__}"
        )
    if model in ("ours", "ours_wo_pcie"):
        coef = _fit_exponential(samples, pcie=model == "ours")
        return FittedModel(model, coef.as_array(), coef)
    x = _linear_features(model, samples)
    params, *_ = np.linalg.lstsq(x, samples.slowdown, rcond=None)
    return FittedModel(model, params)


def prediction_error(fitted: FittedModel, samples: Samples) -> float:
    """Normalised mean absolute error sum |predicted - measured| / sum |measured|."""
    return float(
        np.abs(fitted.predict(samples) - samples.slowdown).sum() / np.abs(samples.slowdown).sum()
    )


def error_table(
    count: int = 480, seed: int = 0, *, noise: float = 0.1, test_fraction: float = 0.2
) -> list[dict]:
    """Table III on generated samples: fit every model on a random (1 - ``test_fraction``) of
    ``count`` samples and report its error on the held-out rest, beside the paper's figure."""
    check_number("test_fraction", test_fraction, 0, 1, low_open=True, high_open=True)
    samples = co_location_samples(count, seed, noise=noise)
    order = np.random.default_rng(seed + 1).permutation(count)
    n_test = max(1, int(round(test_fraction * count)))
    train, test = samples.subset(order[n_test:]), samples.subset(order[:n_test])
    rows = []
    for name in FIT_MODELS:
        fitted = fit(train, name)
        rows.append(
            {
                "model": name,
                "train_error": prediction_error(fitted, train),
                "test_error": prediction_error(fitted, test),
                "paper_error": PAPER_TABLE3[name] / 100,
            }
        )
    return rows
