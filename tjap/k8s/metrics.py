"""The placement controller's metrics and health over HTTP: for Prometheus and for the probes of
a Deployment (``tjap k8s place --metrics-address HOST:PORT``).

:class:`Metrics` reads the records the controller writes (the same as its ``--json`` log: each
window, error, resume and change of the Lease) and keeps counters and gauges; :func:`serve`
answers ``GET /metrics`` (Prometheus' text format) and ``GET /healthz`` (200 while the loop has
reached the API server lately, 503 with the reason when it has not) from a thread of its own.

The metrics, all prefixed ``tjap_``:

- ``passes_total``, ``windows_placed_total`` (passes that placed a gang), ``gangs_placed_total``,
  ``pods_released_total``, ``pods_resumed_total`` (released or planned again for a killed run),
  ``errors_total`` (passes or watches that failed and were tried again);
- ``window_cost_total`` and ``window_kueue_cost_total``: the CH cost of the placed windows and
  of Kueue's choice for the same jobs (their ratio is what tjap saved; only windows with both);
- ``decision_seconds_sum`` / ``_count``: the windows' decisions (reading the jobs, the solves);
- ``gangs_waiting``, ``gangs_refused``: after the last pass; ``leader``: 1 while this replica
  holds the Lease (or runs without election), else 0; ``last_pass_timestamp_seconds``.
"""

from __future__ import annotations

import threading
import time

from tjap.core.errors import InvalidInputError

#: Counters: name -> help.
COUNTERS = {
    "passes_total": "passes of the controller",
    "windows_placed_total": "passes that placed at least one gang",
    "gangs_placed_total": "gangs placed (all of their pods released)",
    "pods_released_total": "pods released by the windows",
    "pods_resumed_total": "pods a restarted controller released or planned again",
    "errors_total": "passes or watches that failed and were tried again",
    "window_cost_total": "CH cost of the placed windows (those with Kueue's cost beside)",
    "window_kueue_cost_total": "CH cost of Kueue's choice for the same windows",
    "decision_seconds_sum": "seconds the windows' decisions took",
    "decision_seconds_count": "windows decided",
}
#: Gauges: name -> help.
GAUGES = {
    "gangs_waiting": "gangs left waiting by the last pass",
    "gangs_refused": "gangs refused (a bad request) by the last pass",
    "leader": "1 while this replica places (holds the Lease, or runs without election)",
    "last_pass_timestamp_seconds": "Unix time of the last pass",
}


class Metrics:
    """Counters and gauges of one controller, fed its records (:meth:`observe`)."""

    def __init__(self, *, clock=time.time):
        self.clock = clock
        self.values = {name: 0.0 for name in (*COUNTERS, *GAUGES)}
        self.values["leader"] = 1.0
        self._alive_at: float | None = None  # the loop's last good contact with the API server
        self._lock = threading.Lock()

    def alive(self) -> None:
        """The loop reached the API server now (a pass, or a try of the Lease)."""
        self._alive_at = self.clock()

    def observe(self, record: dict) -> None:
        v = self.values
        with self._lock:
            event = record.get("event")
            if event in ("window", "interference"):
                v["passes_total"] += 1
                placed = record.get("placed") or {}
                if placed:
                    v["windows_placed_total"] += 1
                    v["gangs_placed_total"] += len(placed)
                    cost, kueue = record.get("cost"), record.get("kueue_cost")
                    if cost is not None and kueue is not None:
                        v["window_cost_total"] += cost
                        v["window_kueue_cost_total"] += kueue
                    if record.get("decide_s") is not None:
                        v["decision_seconds_sum"] += record["decide_s"]
                        v["decision_seconds_count"] += 1
                v["pods_released_total"] += record.get("released_pods") or 0
                v["gangs_waiting"] = len(record.get("waiting") or {})
                v["gangs_refused"] = len(record.get("refused") or {})
                v["last_pass_timestamp_seconds"] = self.clock()
                self._alive_at = self.clock()
            elif event == "resume":
                v["pods_resumed_total"] += record.get("released", 0) + record.get("replanned", 0)
            elif event == "error":
                v["errors_total"] += 1
            elif event == "lease":
                v["leader"] = 1.0 if record.get("state") == "leading" else 0.0

    def exposition(self) -> str:
        """The metrics in Prometheus' text format (version 0.0.4)."""
        lines = []
        with self._lock:
            for kind, table in (("counter", COUNTERS), ("gauge", GAUGES)):
                for name, text in table.items():
                    full = f"tjap_{name}"
                    lines += [f"# HELP {full} {text}", f"# TYPE {full} {kind}"]
                    lines.append(f"{full} {self.values[name]:.17g}")
        return "\n".join(lines) + "\n"

    def health(self, max_age_s: float) -> tuple[bool, str]:
        """(healthy, why): healthy while the loop reached the API server within ``max_age_s``."""
        if self._alive_at is None:
            return False, "no pass yet"
        age = self.clock() - self._alive_at
        if age > max_age_s:
            return False, f"no contact with the API server for {age:.0f} s"
        return True, "ok"


def parse_address(value: str) -> tuple[str, int]:
    """``HOST:PORT`` (``:PORT`` for every address) as (host, port), or a one-line error."""
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) < 65536:
        raise InvalidInputError(
            f"the metrics address must be HOST:PORT (e.g. 0.0.0.0:9090), got {value!r}"
        )
    return host.strip("[]") or "0.0.0.0", int(port)


def serve(metrics: Metrics, address: str, *, max_age_s: float = 60.0):
    """Answer ``/metrics`` and ``/healthz`` on ``address`` from a daemon thread; returns the
    server (``server.server_address`` the address bound; ``server.shutdown()`` stops it)."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    host, port = parse_address(address)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (the name http.server calls)
            if self.path.split("?")[0] == "/metrics":
                status, body = 200, metrics.exposition()
                kind = "text/plain; version=0.0.4; charset=utf-8"
            elif self.path.split("?")[0] in ("/healthz", "/livez", "/readyz"):
                ok, why = metrics.health(max_age_s)
                status, body, kind = (200 if ok else 503), why + "\n", "text/plain"
            else:
                status, body, kind = 404, "not found: /metrics or /healthz\n", "text/plain"
            data = body.encode()
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):  # no line on stderr per scrape
            pass

    try:
        server = ThreadingHTTPServer((host, port), Handler)
    except OSError as exc:
        raise InvalidInputError(f"cannot serve the metrics on {address}: {exc.strerror}") from None
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True, name="tjap-metrics").start()
    return server
