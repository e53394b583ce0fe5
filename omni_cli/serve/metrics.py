"""Server metrics in the Prometheus text format (0.0.4), written by hand: no client library needed.

Counters are fed from two threads (trace events on the engine thread, request outcomes on the
asyncio loop), so every update and the rendering hold one lock.
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

from ..engine import TraceEvent, WorkUnitEvent

TTFA_BUCKETS_S = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
LATENCY_BUCKETS_S = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)


class Histogram:
    def __init__(self, buckets: tuple[float, ...]):
        self.buckets = buckets
        self.counts = [0] * len(buckets)
        self.total = 0
        self.sum = 0.0

    def observe(self, value: float) -> None:
        self.total += 1
        self.sum += value
        for i, bound in enumerate(self.buckets):
            if value <= bound:
                self.counts[i] += 1

    def lines(self, name: str) -> list[str]:
        out = [f'{name}_bucket{{le="{bound:g}"}} {count}' for bound, count in zip(self.buckets, self.counts, strict=True)]
        out += [f'{name}_bucket{{le="+Inf"}} {self.total}', f"{name}_sum {self.sum:.6f}", f"{name}_count {self.total}"]
        return out


class Metrics:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests: Counter[tuple[str, str]] = Counter()  # (endpoint, status) -> count
        self.work_units: Counter[str] = Counter()  # WorkUnit kind -> count
        self.audio_s = 0.0
        self.ttfa = Histogram(TTFA_BUCKETS_S)
        self.latency = Histogram(LATENCY_BUCKETS_S)

    def on_trace(self, event: TraceEvent) -> None:
        """Engine thread: one call per WorkUnit and request phase."""
        if event.__class__ is WorkUnitEvent:
            with self._lock:
                self.work_units[event.kind] += 1

    def on_done(self, endpoint: str, status: str, metrics: dict[str, Any]) -> None:
        """A request the engine ran ended (finished, cancelled, failed)."""
        with self._lock:
            self.requests[(endpoint, status)] += 1
            self.audio_s += metrics.get("audio_s") or 0.0
            if status == "finished":
                if metrics.get("ttfa_s") is not None:
                    self.ttfa.observe(metrics["ttfa_s"])
                self.latency.observe(metrics.get("latency_s") or 0.0)

    def on_refused(self, endpoint: str, http_status: int) -> None:
        """A request answered with an error before (or instead of) running."""
        with self._lock:
            self.requests[(endpoint, f"http_{http_status}")] += 1

    def render(self, gauges: dict[str, tuple[str, float]]) -> str:
        """The exposition text; `gauges` maps a metric name to (help, value), read by the caller."""
        with self._lock:
            lines = ["# HELP omni_requests_total Requests by endpoint and outcome (engine status or HTTP error).",
                     "# TYPE omni_requests_total counter"]
            lines += [f'omni_requests_total{{endpoint="{e}",status="{s}"}} {n}' for (e, s), n in sorted(self.requests.items())]
            lines += ["# HELP omni_work_units_total WorkUnits run, by kind.", "# TYPE omni_work_units_total counter"]
            lines += [f'omni_work_units_total{{kind="{k}"}} {n}' for k, n in sorted(self.work_units.items())]
            lines += ["# HELP omni_audio_seconds_total Seconds of audio made.", "# TYPE omni_audio_seconds_total counter",
                      f"omni_audio_seconds_total {self.audio_s:.6f}"]
            lines += ["# HELP omni_ttfa_seconds Time to first audio of finished requests, in the engine.",
                      "# TYPE omni_ttfa_seconds histogram", *self.ttfa.lines("omni_ttfa_seconds")]
            lines += ["# HELP omni_latency_seconds Submission to end of finished requests, in the engine.",
                      "# TYPE omni_latency_seconds histogram", *self.latency.lines("omni_latency_seconds")]
        for name, (help_text, value) in gauges.items():
            shown = value if isinstance(value, int) else f"{value:.6g}"  # bytes stay exact
            lines += [f"# HELP {name} {help_text}", f"# TYPE {name} gauge", f"{name} {shown}"]
        return "\n".join(lines) + "\n"
