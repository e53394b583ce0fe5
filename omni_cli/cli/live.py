"""What a run shows on stderr: a rich live view on a TTY, plain lines otherwise, nothing with -q."""

from __future__ import annotations

import sys
import time
from collections import Counter, deque
from typing import TextIO

LATEST = 3  # WorkUnits shown per loop in the live view


class RunView:
    """Counts what the run did; the base class shows nothing (-q)."""

    def __init__(self, engine, err: TextIO):
        self.err = err
        self.loops = list(engine.program.loops)
        self.units: Counter = Counter()
        self.latest: dict[str, deque] = {loop: deque(maxlen=LATEST) for loop in self.loops}
        self.sample_rate = engine.sample_rate
        self.samples = 0
        self.first_audio_s: float | None = None
        self.submitted = 0
        self.finished = 0
        self._t0 = time.perf_counter()

    def elapsed(self) -> float:
        return time.perf_counter() - self._t0

    def on_trace(self, event) -> None:
        if event.event == "work_unit":
            self.units[event.loop] += 1
            self.latest.setdefault(event.loop, deque(maxlen=LATEST)).append(event)

    def on_submit(self, utt) -> None:
        self.submitted += 1

    def on_audio(self, utt, num_samples: int) -> None:
        if self.first_audio_s is None:
            self.first_audio_s = self.elapsed()
        self.samples += num_samples

    def on_done(self, utt) -> None:
        self.finished += 1

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        pass

    def summary(self, utterances, where: str | None) -> None:
        pass

    def summary_lines(self, utterances, where: str | None) -> list[str]:
        wall = self.elapsed()
        audio_s = self.samples / self.sample_rate
        statuses = Counter(u.status for u in utterances)
        n = len(utterances)
        head = f"{n} utterance{'s' if n != 1 else ''}"
        if set(statuses) - {"finished"}:
            head += " (" + ", ".join(f"{c} {s}" for s, c in sorted(statuses.items())) + ")"
        speed = f", {audio_s / wall:.1f}x real time" if wall > 0 and audio_s > 0 else ""
        ttfa = f", first audio after {self.first_audio_s * 1e3:.0f} ms" if self.first_audio_s is not None else ""
        dest = f" -> {where}" if where else " (audio not saved: pass -o FILE)"
        units = ", ".join(f"{loop} {self.units[loop]}" for loop in self.loops)
        return [f"omni: {head}: {audio_s:.2f} s of audio in {wall:.2f} s{speed}{ttfa}{dest}",
                f"omni: WorkUnits: {units}"]


class PlainView(RunView):
    """No TTY: a short summary at the end; with -v also one line per WorkUnit as it runs."""

    def __init__(self, engine, err: TextIO, verbose: bool):
        super().__init__(engine, err)
        self.verbose = verbose

    def on_trace(self, event) -> None:
        super().on_trace(event)
        if self.verbose and event.event == "work_unit":
            self.err.write(f"omni: {event.request_id} {event.loop} {event.kind} #{event.step} "
                           f"{event.dur_s * 1e3:.2f} ms x{event.batch_size} at {event.start_s * 1e3:.1f} ms\n")
            self.err.flush()

    def summary(self, utterances, where: str | None) -> None:
        self.err.write("".join(line + "\n" for line in self.summary_lines(utterances, where)))
        self.err.flush()


class LiveView(PlainView):
    """A TTY: one row per loop (steps, latest WorkUnits), audio written and time to first audio, redrawn live."""

    def __init__(self, engine, err: TextIO, verbose: bool):
        super().__init__(engine, err, verbose=False)
        from rich.console import Console

        self.console = Console(file=err, stderr=err is sys.stderr)
        self._live = None

    def __enter__(self):
        from rich.live import Live

        self._live = Live(console=self.console, get_renderable=self._render, refresh_per_second=12,
                          redirect_stdout=False, redirect_stderr=False, transient=True)
        self._live.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None

    def _render(self):
        from rich.table import Table

        table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
        table.add_column("loop")
        table.add_column("steps", justify="right")
        table.add_column("latest WorkUnits (duration, batch size)", no_wrap=True, overflow="ellipsis")
        for loop in self.loops:
            latest = "  ".join(f"{e.kind} #{e.step} {e.dur_s * 1e3:.2f} ms x{e.batch_size}"
                               for e in list(self.latest.get(loop, ())))
            table.add_row(loop, str(self.units[loop]), latest)
        ttfa = "-" if self.first_audio_s is None else f"{self.first_audio_s * 1e3:.0f} ms"
        table.caption = (f"audio written {self.samples / self.sample_rate:.2f} s · first audio {ttfa} · "
                         f"utterances {self.finished}/{self.submitted} · {self.elapsed():.1f} s")
        return table

    def summary(self, utterances, where: str | None) -> None:
        for line in self.summary_lines(utterances, where):
            self.console.print(line, markup=False, highlight=False)


def make_view(engine, err: TextIO, *, quiet: bool, verbose: bool) -> RunView:
    if quiet:
        return RunView(engine, err)
    if err.isatty():
        return LiveView(engine, err, verbose)
    return PlainView(engine, err, verbose)
