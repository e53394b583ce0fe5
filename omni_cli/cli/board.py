"""The live view's picture: a row per loop, a row per request, a footer, laid out to fit a given width.

Built as plain text lines padded by hand (not a rich Table) so the layout is exact at any width: below
80 columns fewer recent WorkUnits and fewer optional columns are shown, never fewer names.
"""

from __future__ import annotations

import statistics
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any

LATEST = 8  # batched calls remembered per loop; as many as fit are shown
MAX_ROWS = 5  # request rows shown; the rest are counted in one line
GAP = "  "


def fmt_ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e3:.0f} ms"


def fmt_rtf(wall_s: float, audio_s: float) -> str:
    """RTF = wall time ÷ audio time (below 1 is faster than real time), to the thousandth."""
    rtf = wall_s / audio_s
    return "<0.001" if rtf < 0.001 else f"{rtf:.3f}"


@dataclass
class LoopStats:
    units: int = 0
    first_s: float | None = None  # engine clock
    last_end_s: float = 0.0
    calls: deque = field(default_factory=lambda: deque(maxlen=LATEST))  # (kind, dur_s, batch_size), one per call
    _last_call: tuple | None = None

    def add(self, event: Any) -> None:
        self.units += 1
        if self.first_s is None:
            self.first_s = event.start_s
        self.last_end_s = max(self.last_end_s, event.start_s + event.dur_s)
        call = (event.start_s, event.kind)  # every request of a batch reports the same call: show it once
        if call != self._last_call:
            self._last_call = call
            self.calls.append((event.kind, event.dur_s, event.batch_size))

    @property
    def per_s(self) -> float | None:
        if self.first_s is None or self.last_end_s <= self.first_s:
            return None
        return self.units / (self.last_end_s - self.first_s)


@dataclass
class RequestRow:
    utt: Any  # outputs.Utterance: request_id, line, status, num_samples, first_audio_after_line_s
    units: Counter = field(default_factory=Counter)  # WorkUnits per loop


class Board:
    """What the live view knows: fed by the view's callbacks, drawn by `lines(width)`."""

    def __init__(self, loops: list[str], stages: list[str], sample_rate: int):
        self.loops = loops
        self.stages = dict(zip(loops, stages, strict=True))  # short column headers of the request rows
        self.sample_rate = sample_rate
        self.stats = {loop: LoopStats() for loop in loops}
        self.requests: dict[str, RequestRow] = {}  # in submission order
        self.samples = 0

    def on_unit(self, event: Any) -> None:
        self.stats.setdefault(event.loop, LoopStats()).add(event)
        row = self.requests.get(event.request_id)
        if row is not None:
            row.units[event.loop] += 1

    def on_submit(self, utt: Any) -> None:
        self.requests[utt.request_id] = RequestRow(utt)

    def lines(self, width: int, elapsed_s: float) -> list[tuple[str, str]]:
        """(text, style) lines, none longer than `width`."""
        out = self._loop_lines(width) + [("", "")] + self._request_lines(width)
        out.append((self._footer(width, elapsed_s), "dim"))
        return out

    def _loop_lines(self, width: int) -> list[tuple[str, str]]:
        rows = [(loop, str(s.units), "-" if s.per_s is None else f"{s.per_s:.0f}", s.calls)
                for loop, s in self.stats.items()]
        w_name = max(len("loop"), *(len(r[0]) for r in rows))
        w_units = max(len("WUs"), *(len(r[1]) for r in rows))
        w_rate = max(len("WU/s"), *(len(r[2]) for r in rows))
        room = width - (w_name + w_units + w_rate + 3 * len(GAP))
        head = f"{'loop':<{w_name}}{GAP}{'WUs':>{w_units}}{GAP}{'WU/s':>{w_rate}}"
        latest_head = "latest calls (time, batch)"
        out = [(head + (GAP + latest_head[:room] if room >= 8 else ""), "bold")]
        for name, units, rate, calls in rows:
            line = f"{name:<{w_name}}{GAP}{units:>{w_units}}{GAP}{rate:>{w_rate}}"
            latest = _fit([_call(c) for c in reversed(calls)], room)
            out.append((line + (GAP + latest if latest else ""), ""))
        return out

    def _request_lines(self, width: int) -> list[tuple[str, str]]:
        rows = self._shown_rows()
        columns = [("req", 0, [r.utt.request_id for r in rows], "<"),
                   ("line", 0, [str(r.utt.line) for r in rows], ">")]
        columns += [(self.stages[loop], 0, [str(r.units[loop]) for r in rows], ">") for loop in self.loops]
        columns += [("first audio", 1, [fmt_ms(r.utt.first_audio_after_line_s) for r in rows], ">"),
                    ("audio", 2, [f"{r.utt.num_samples / self.sample_rate:.2f} s" for r in rows], ">"),
                    ("status", 3, [r.utt.status for r in rows], "<")]
        widths = [max(len(name), *(len(v) for v in values)) if values else len(name)
                  for name, _, values, _ in columns]
        # narrow: drop the optional columns, least needed first (status, audio, first audio)
        while sum(widths) + len(GAP) * (len(widths) - 1) > width and max(c[1] for c in columns) > 0:
            drop = max(range(len(columns)), key=lambda i: columns[i][1])
            del columns[drop], widths[drop]

        def join(cells):
            return GAP.join(f"{c:{a}{w}}" for c, w, (_, _, _, a) in zip(cells, widths, columns, strict=True))

        out = [(join([c[0] for c in columns])[:width], "bold")]
        for i in range(len(rows)):
            out.append((join([c[2][i] for c in columns])[:width], ""))
        hidden = len(self.requests) - len(rows)
        if hidden:
            done = sum(1 for r in self.requests.values() if r not in rows and r.utt.status != "running")
            out.append((f"… {hidden} more ({done} done)"[:width], "dim"))
        return out

    def _shown_rows(self) -> list[RequestRow]:
        """The running requests first (oldest first), then the most recently finished, MAX_ROWS in all."""
        every = list(self.requests.values())
        running = [r for r in every if r.utt.status in ("running", "queued")][:MAX_ROWS]
        rest = [r for r in reversed(every) if r not in running][:MAX_ROWS - len(running)]
        keep = {id(r) for r in running + rest}
        return [r for r in every if id(r) in keep]

    def _footer(self, width: int, elapsed_s: float) -> str:
        done = sum(1 for r in self.requests.values() if r.utt.status not in ("running", "queued"))
        firsts = sorted(r.utt.first_audio_after_line_s for r in self.requests.values()
                        if r.utt.first_audio_after_line_s is not None)
        parts = [f"audio {self.samples / self.sample_rate:.2f} s", f"{done}/{len(self.requests)} done",
                 f"{elapsed_s:.1f} s"]
        if firsts:
            parts.insert(1, f"first audio {fmt_ms(statistics.median(firsts))} after its line (median)")
        return _fit(parts, width, sep=" · ")


def _call(call: tuple) -> str:
    kind, dur_s, batch = call
    return f"{kind} {dur_s * 1e3:.2f} ms" + (f" x{batch}" if batch > 1 else "")


def _fit(items: list[str], room: int, sep: str = GAP) -> str:
    """As many whole items as fit in `room` columns (never a cut item)."""
    out = ""
    for item in items:
        candidate = item if not out else out + sep + item
        if len(candidate) > room:
            break
        out = candidate
    return out
