"""What loading a card shows on stderr: a transient progress line on a TTY, one line per phase otherwise.

Decided as the run's view is (live.make_view): nothing with -q, rich on a terminal, plain lines elsewhere.
A backend that builds at once (numpy, piper) reports no phase, so shows nothing.
"""

from __future__ import annotations

import sys
from typing import TextIO

from ..backends.base import LoadStep


class LoadView:
    """Hears a build's phases; the base class shows nothing (-q)."""

    def __call__(self, step: LoadStep) -> None:
        pass

    def __enter__(self) -> LoadView:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


class PlainLoadView(LoadView):
    """No TTY: one line as each phase starts (`omni: loading weights (689 tensors)`), never a line per tensor."""

    def __init__(self, err: TextIO):
        self.err = err
        self._phase: str | None = None

    def __call__(self, step: LoadStep) -> None:
        if step.phase == self._phase:
            return
        self._phase = step.phase
        count = f" ({step.total} {step.unit})" if step.total is not None else ""
        self.err.write(f"omni: {step.phase}{count}\n")
        self.err.flush()


class LiveLoadView(LoadView):
    """A TTY: one redrawn line, the phase with a bar and counts where it counts; started by the first phase
    (a backend that reports none draws nothing) and gone once loaded. A note stays, a line above it."""

    def __init__(self, err: TextIO, console=None):
        from rich.console import Console

        self.console = console or Console(file=err, stderr=err is sys.stderr)
        self._progress = None
        self._task = None

    def __call__(self, step: LoadStep) -> None:
        from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        if step.note:  # kept above the redrawn line (rich prints it there, wrapped to the terminal's width)
            (self._progress.console if self._progress is not None else self.console).print(
                f"omni: {step.phase}", highlight=False, markup=False)
            return
        if self._progress is None:
            self._progress = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(bar_width=20),
                                      TextColumn("{task.fields[count]}"), TimeElapsedColumn(), console=self.console,
                                      transient=True)
            self._task = self._progress.add_task(step.phase, total=None, count="")
            self._progress.start()
        count = f"{step.done}/{step.total} {step.unit}".rstrip() if step.total is not None else ""
        self._progress.update(self._task, description=step.phase, total=step.total, completed=step.done or 0,
                              count=count)
        self._progress.refresh()

    def render(self):
        """What the terminal shows now (None before the first phase)."""
        return None if self._progress is None else self._progress.get_renderable()

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None


def make_load_view(err: TextIO, *, quiet: bool) -> LoadView:
    if quiet:
        return LoadView()
    if err.isatty():
        return LiveLoadView(err)
    return PlainLoadView(err)
