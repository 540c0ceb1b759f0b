"""Numba kernels of a learned repair operator: a small feed-forward network evaluated inside the
compiled search loop (no torch at solve time).

A network is a chain of 1-d convolutions over a (channels, length) input, each optionally followed
by tanh. A dense layer is the convolution whose kernel spans its whole input (a flattened
(channels, length) input, channel-major as torch's ``Flatten`` lays it out), so one kernel runs
every layer of an MLP or a CNN. :func:`pack_layers` turns the layers into the two arrays the loop
carries: ``params`` (float32, the trained networks' precision: each layer's weights, then its
bias) and ``layers`` (int64, one row of shapes and offsets per layer). Sums run in float64.

The input is the repair state of the current job (:func:`observe`, the one definition of
:func:`tjap.learned.tree.features.repair_observation`): for the first ``q`` positions of the current idle
sequence, the edge switch / num_switches, the pod / num_pods, the job's request / n_max, the other
unallocated jobs' request / ((|J'| - 1) n_max), optionally 1 (an idle position) and optionally 1
where a position starts a new switch / pod; zero past the end of the sequence (masked).
:func:`net_start` runs the network and returns the masked argmax of the logits, or a start drawn
from their softmax with a uniform number the caller drew from the loop's generator;
:func:`candidate_starts` turns the logits into k proposals for the loop's look-ahead.
"""

import numpy as np

from tjap.core.jit import njit, njit_inline

# columns of a row of ``layers``
IN_CH, IN_LEN, OUT_CH, OUT_LEN, KERNEL, STRIDE, TANH, OFFSET = range(8)
LAYER_FIELDS = 8
# entries of the ``config`` array of a learned repair (see :func:`net_config`)
(CFG_Q, CFG_N_MAX, CFG_SWITCHES, CFG_PODS, CFG_IDLE, CFG_BOUNDARIES, CFG_SAMPLE, CFG_LOOKAHEAD) = (
    range(8)
)
CONFIG_FIELDS = 8


def pack_layers(channels: int, length: int, layers) -> tuple[np.ndarray, np.ndarray]:
    """(params, layers) of a network over a (channels, length) input.

    Parameters
    ----------
    channels, length : int
        Shape of the input.
    layers : sequence of (weight, bias, stride, tanh)
        Each layer in order: ``weight`` of shape (out channels, in channels, kernel) as torch's
        ``Conv1d`` stores it (a dense layer on a (C, L) input: its (out, C * L) matrix reshaped
        to (out, C, L)), ``bias`` (out channels,), the stride and whether tanh follows.

    Raises
    ------
    ValueError
        A layer that does not fit the output of the layer before it.
    """
    rows, chunks, offset = [], [], 0
    c, n = int(channels), int(length)
    for i, (weight, bias, stride, tanh) in enumerate(layers):
        weight, bias = np.asarray(weight, np.float32), np.asarray(bias, np.float32)
        if (
            weight.ndim != 3
            or weight.shape[1] != c
            or not 1 <= weight.shape[2] <= n
            or bias.shape != (weight.shape[0],)
            or int(stride) < 1
        ):
            raise ValueError(
                f"layer {i}: weight {weight.shape}, bias {bias.shape}, stride "
                f"{stride} do not fit an input of {c} channels x {n}"
            )
        out, _, kernel = weight.shape
        out_len = (n - kernel) // int(stride) + 1
        rows.append((c, n, out, out_len, kernel, int(stride), int(bool(tanh)), offset))
        # one output position (a dense layer): stored (in channel, tap, out), see _dense;
        # otherwise as torch's Conv1d (out, in channel, tap), see _conv
        chunks += [(weight.transpose(1, 2, 0) if out_len == 1 else weight).ravel(), bias]
        offset += weight.size + bias.size
        c, n = out, out_len
    if not rows:
        raise ValueError("a network needs at least one layer")
    return (
        np.ascontiguousarray(np.concatenate(chunks)),
        np.ascontiguousarray(np.array(rows, np.int64).reshape(-1, LAYER_FIELDS)),
    )


def net_config(
    q: int,
    n_max: int,
    num_switches: int,
    num_pods: int,
    idle_flag: bool,
    boundaries: bool,
    sample: bool,
    lookahead: int = 0,
) -> np.ndarray:
    """The int64 ``config`` array of a learned repair: the observation's settings (see
    :func:`observe`), whether the start is drawn (``sample``) or the argmax, and ``lookahead``:
    when at least 2, the network proposes that many starts (:func:`candidate_starts`) and the
    loop scores them (:func:`tjap.heuristics.tree._kernels.lookahead_start`)."""
    config = np.zeros(CONFIG_FIELDS, np.int64)
    config[[CFG_Q, CFG_N_MAX, CFG_SWITCHES, CFG_PODS]] = q, n_max, num_switches, num_pods
    config[[CFG_IDLE, CFG_BOUNDARIES, CFG_SAMPLE]] = idle_flag, boundaries, sample
    config[CFG_LOOKAHEAD] = lookahead
    return config


def net_scratch(layers: np.ndarray) -> np.ndarray:
    """Scratch of :func:`net_start` for ``layers``: three buffers as large as the largest
    activation (input, output, a strided convolution's input phases)."""
    stride = layers[:, STRIDE]
    phased = layers[:, IN_CH] * stride * ((layers[:, IN_LEN] + stride - 1) // stride)
    size = int(max(phased.max(), (layers[:, OUT_CH] * layers[:, OUT_LEN]).max()))
    return np.zeros((3, size), np.float64)


@njit
def observe(
    obs,
    switch_q,
    pod_q,
    alive,
    length,
    size,
    others,
    num_others,
    n_max,
    num_switches,
    num_pods,
    idle_flag,
    boundaries,
):
    """Write the repair state into ``obs`` (channels x q, zeroed here) and return the number of
    valid (unmasked) positions, min(q, length). Each value is rounded to float32 (the networks'
    precision) whatever the dtype of ``obs``."""
    q = obs.shape[1]
    obs[:] = 0.0
    n = min(q, length)
    request = np.float32(size / n_max)
    rest = np.float32(others / (num_others * n_max)) if num_others > 0 else np.float32(0.0)
    for i in range(n):
        p = alive[i]
        obs[0, i] = np.float32(switch_q[p] / num_switches)
        obs[1, i] = np.float32(pod_q[p] / num_pods)
        obs[2, i] = request
        obs[3, i] = rest
    c = 4
    if idle_flag:
        for i in range(n):
            obs[4, i] = 1.0
        c = 5
    if boundaries and n > 0:
        obs[c, 0] = 1.0
        obs[c + 1, 0] = 1.0
        for i in range(1, n):
            obs[c, i] = switch_q[alive[i]] != switch_q[alive[i - 1]]
            obs[c + 1, i] = pod_q[alive[i]] != pod_q[alive[i - 1]]
    return n


@njit_inline
def _tanh(v):
    """tanh through one exp (about 1.5x faster than libm's tanh; within 3e-16 of it)."""
    e = np.exp(-2.0 * abs(v))
    r = (1.0 - e) / (1.0 + e)
    return r if v >= 0.0 else -r


@njit
def _dense(params, off, inputs, outputs, x, y):
    """y = W x + b for a layer of one output position, its weights stored transposed
    (input, output) at ``off``: a sum of weight rows scaled by the inputs, which vectorises over
    the outputs; zero inputs (masked positions, absent boundaries) are skipped."""
    bias = off + inputs * outputs
    for o in range(outputs):
        y[o] = params[bias + o]
    for i in range(inputs):
        v = x[i]
        if v != 0.0:
            row = params[off + i * outputs : off + (i + 1) * outputs]
            for o in range(outputs):
                y[o] += row[o] * v


@njit
def _conv(params, off, cin, lin, cout, lout, ker, stride, x, y, phases):
    """y = conv1d(x) (no padding) for weights stored (out, in, tap) at ``off``, vectorised over
    the output positions: with a stride s > 1 the input is first split into its s phases
    (``phases``, scratch) so that every tap reads contiguous inputs."""
    width = (lin + stride - 1) // stride
    if stride > 1:
        for c in range(cin):
            for r in range(stride):
                for j in range(width):
                    at = stride * j + r
                    phases[(c * stride + r) * width + j] = x[c * lin + at] if at < lin else 0.0
    bias = off + cout * cin * ker
    for o in range(cout):
        out = y[o * lout : (o + 1) * lout]
        b = params[bias + o]
        for t in range(lout):
            out[t] = b
        for c in range(cin):
            for k in range(ker):
                w = params[off + (o * cin + c) * ker + k]
                if stride == 1:
                    src = x[c * lin + k : c * lin + k + lout]
                else:
                    start = (c * stride + k % stride) * width + k // stride
                    src = phases[start : start + lout]
                for t in range(lout):
                    out[t] += w * src[t]


@njit
def forward(params, layers, scratch):
    """Run the network on the input in ``scratch[0]`` (channel-major); returns the row of
    ``scratch`` that holds the output (``scratch[2]`` is the convolutions' scratch). Each output
    sums its bias, then over input channels, then over taps, in order."""
    src = 0
    for i in range(layers.shape[0]):
        cin, lin = layers[i, IN_CH], layers[i, IN_LEN]
        cout, lout = layers[i, OUT_CH], layers[i, OUT_LEN]
        x = scratch[src]
        y = scratch[1 - src]
        if lout == 1:
            _dense(params, layers[i, OFFSET], cin * lin, cout, x, y)
        else:
            _conv(
                params,
                layers[i, OFFSET],
                cin,
                lin,
                cout,
                lout,
                layers[i, KERNEL],
                layers[i, STRIDE],
                x,
                y,
                scratch[2],
            )
        if layers[i, TANH]:
            for o in range(cout * lout):
                y[o] = _tanh(y[o])
        src = 1 - src
    return src


@njit
def net_logits(
    params, layers, switch_q, pod_q, config, scratch, alive, length, size, others, num_others
):
    """(logits, n): the network's logits over the first n = min(q, length) positions of the
    current idle sequence (``alive[:length]``; a row of ``scratch``, valid until the next
    call)."""
    q = config[CFG_Q]
    obs = scratch[0, : layers[0, IN_CH] * q].reshape((layers[0, IN_CH], q))
    n = observe(
        obs,
        switch_q,
        pod_q,
        alive,
        length,
        size,
        others,
        num_others,
        config[CFG_N_MAX],
        config[CFG_SWITCHES],
        config[CFG_PODS],
        config[CFG_IDLE] != 0,
        config[CFG_BOUNDARIES] != 0,
    )
    return scratch[forward(params, layers, scratch)], n


@njit
def net_start(
    params, layers, switch_q, pod_q, config, scratch, alive, length, size, others, num_others, u
):
    """The learned repair's start: :func:`net_logits`, then their argmax (first of equal ones),
    or with ``config[CFG_SAMPLE]`` the position drawn from their softmax by the uniform ``u``
    (the first whose cumulative probability exceeds ``u``)."""
    logits, n = net_logits(
        params, layers, switch_q, pod_q, config, scratch, alive, length, size, others, num_others
    )
    best = 0
    for i in range(1, n):
        if logits[i] > logits[best]:
            best = i
    if config[CFG_SAMPLE] == 0:
        return best
    top = logits[best]
    total = 0.0
    for i in range(n):
        total += np.exp(logits[i] - top)
    target = u * total
    cumulative = 0.0
    for i in range(n):
        cumulative += np.exp(logits[i] - top)
        if target < cumulative:
            return i
    return n - 1


@njit
def candidate_starts(logits, n, sample, u, out):
    """Up to k = ``len(out)`` distinct starts among the first ``n`` of ``logits`` into ``out``;
    returns how many. ``sample``: systematic sampling of their softmax with the one uniform
    ``u``: the first start whose cumulative probability exceeds (u + c) / k, for c = 0..k-1,
    each once, in position order (with k = 1 the start :func:`net_start` draws; a start of
    probability p is proposed floor(k p) or ceil(k p) times before the duplicates are
    dropped); otherwise the k largest logits, best first. The learned look-ahead's proposals,
    and the hand-written one's on logits -cost / T."""
    k = out.shape[0]
    if not sample:
        return top_k(logits, n, k, 1.0, out)
    top = logits[0]
    for i in range(1, n):
        top = max(top, logits[i])
    total = 0.0
    for i in range(n):
        total += np.exp(logits[i] - top)
    count = 0
    c = 0
    cumulative = 0.0
    for i in range(n):
        cumulative += np.exp(logits[i] - top)
        taken = False
        while c < k and (u + c) / k * total < cumulative:
            c += 1
            if not taken:
                out[count] = i
                count += 1
                taken = True
    if c < k and (count == 0 or out[count - 1] != n - 1):  # targets past a rounded total
        out[count] = n - 1
        count += 1
    return count


@njit
def top_k(scores, n, k, sign, out):
    """The positions of the ``k`` largest ``sign * scores[:n]`` (ties: lowest position first),
    best first, into ``out``; returns how many, min(k, n)."""
    count = 0
    for i in range(n):
        v = sign * scores[i]
        at = count
        while at > 0 and sign * scores[out[at - 1]] < v:
            at -= 1
        if at >= k:
            continue
        for j in range(min(count, k - 1), at, -1):
            out[j] = out[j - 1]
        out[at] = i
        count = min(count + 1, k)
    return count
