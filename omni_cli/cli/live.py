"""What a run shows on stderr: a rich live view on a TTY, plain lines otherwise, nothing with -q."""

from __future__ import annotations

import statistics
import sys
import time
from collections import Counter
from typing import ClassVar, TextIO

from .board import Board, fmt_ms, fmt_rtf


def stage_names(program) -> list[str]:
    """A short header per loop for the request rows: its component, or the loop's name when two share one."""
    components = [loop.spec.component for loop in program.loops.values()]
    if len(set(components)) != len(components):
        return list(program.loops)
    return components


class RunView:
    """Counts what the run did; the base class shows nothing (-q)."""

    draws_live: ClassVar[bool] = False  # redraws itself on the terminal: text for it goes through `above`

    def __init__(self, engine, err: TextIO):
        self.err = err
        self.loops = list(engine.program.loops)
        self.sample_rate = engine.sample_rate
        self.board = Board(self.loops, stage_names(engine.program), self.sample_rate)
        self.units: Counter = Counter()
        self._t0 = time.perf_counter()

    def elapsed(self) -> float:
        return time.perf_counter() - self._t0

    def on_trace(self, event) -> None:
        if event.event == "work_unit":
            self.units[event.loop] += 1
            self.board.on_unit(event)

    def on_submit(self, utt) -> None:
        self.board.on_submit(utt)

    def on_audio(self, utt, num_samples: int) -> None:
        self.board.samples += num_samples

    def on_done(self, utt) -> None:
        pass

    def warn(self, line: str) -> None:
        """A one-line warning on stderr (none with -q: nothing but errors)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        pass

    def above(self, write) -> None:
        """Run `write` (which prints to the terminal) so it lands above the live view, not through it."""
        write()

    def summary(self, utterances, where: str | None, stopped: str | None = None, removed=()) -> None:
        pass

    def summary_lines(self, utterances, where: str | None, stopped: str | None = None, removed=()) -> list[str]:
        """What happened, first: why the run stopped early, then the counts by status, the audio, the
        files taken away again because they got no audio."""
        wall = self.elapsed()
        audio_s = self.board.samples / self.sample_rate
        statuses = Counter(u.status for u in utterances)
        n = len(utterances)
        head = f"{n} utterance{'s' if n != 1 else ''}"
        if set(statuses) - {"finished"}:
            head += " (" + ", ".join(f"{c} {s.replace('_', ' ')}" for s, c in sorted(statuses.items())) + ")"
        rtf = f" (RTF {fmt_rtf(wall, audio_s)})" if audio_s > 0 else ""
        dest = f" -> {where}" if where else " (audio not saved: pass -o FILE)"
        units = ", ".join(f"{loop} {self.units[loop]}" for loop in self.loops)
        lines = [f"omni: stopped: {stopped}"] if stopped else []
        lines.append(f"omni: {head}: {audio_s:.2f} s of audio in {wall:.2f} s{rtf}{dest}")
        if removed:
            lines.append(f"omni: removed {', '.join(removed)}: no audio was written to "
                         f"{'it' if len(removed) == 1 else 'them'}")
        lines += [f"omni: {first}" for first in [first_audio(utterances)] if first]
        return [*lines, f"omni: WorkUnits: {units}"] if self.loops else lines  # a server's run shows no loops


def first_audio(utterances) -> str:
    """Time to first audio counted from when each line arrived (not from start-up, nor while waiting for it)."""
    times = sorted(u.first_audio_after_line_s for u in utterances if u.first_audio_after_line_s is not None)
    if not times:
        return ""
    if len(times) == 1:
        return f"first audio {fmt_ms(times[0])} after its line arrived"
    return (f"first audio {fmt_ms(statistics.median(times))} after each line arrived "
            f"(median; {fmt_ms(times[0])} to {fmt_ms(times[-1])})")


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

    def summary(self, utterances, where: str | None, stopped: str | None = None, removed=()) -> None:
        self.err.write("".join(line + "\n" for line in self.summary_lines(utterances, where, stopped, removed)))
        self.err.flush()

    def warn(self, line: str) -> None:
        def write() -> None:
            self.err.write(line + "\n")
            self.err.flush()

        self.above(write)  # above the live view, when there is one


class LiveView(PlainView):
    """A TTY: a row per loop (WorkUnits, rate, latest calls) and per request (stages, first audio, audio), redrawn."""

    draws_live = True

    def __init__(self, engine, err: TextIO, verbose: bool, console=None):
        super().__init__(engine, err, verbose=False)
        from rich.console import Console

        self.console = console or Console(file=err, stderr=err is sys.stderr)
        self._live = None

    def __enter__(self):
        from rich.live import Live

        self._live = Live(console=self.console, get_renderable=self.render, refresh_per_second=12,
                          redirect_stdout=False, redirect_stderr=False, transient=True)
        self._live.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None

    def render(self):
        from rich.console import Group
        from rich.text import Text

        lines = self.board.lines(self.console.width, self.elapsed())
        return Group(*(Text(text, style=style, no_wrap=True, overflow="crop") for text, style in lines))

    def above(self, write) -> None:
        live = self._live
        render = getattr(live, "_live_render", None)
        if live is None or render is None or not self.console.is_terminal:
            write()
            return
        # rich prints above a live display by erasing it, printing, and drawing it again below; the same
        # here, for text that goes to stdout (the same terminal) rather than through rich's console
        with live._lock:
            self.console.control(render.position_cursor())
            write()
            render._shape = None  # already erased: the redraw must not move up over the text just written
        live.refresh()

    def summary(self, utterances, where: str | None, stopped: str | None = None, removed=()) -> None:
        for line in self.summary_lines(utterances, where, stopped, removed):
            self.console.print(line, markup=False, highlight=False)


def make_view(engine, err: TextIO, *, quiet: bool, verbose: bool) -> RunView:
    if quiet:
        return RunView(engine, err)
    if err.isatty():
        return LiveView(engine, err, verbose)
    return PlainView(engine, err, verbose)
