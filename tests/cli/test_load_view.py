"""What loading a card shows on stderr (issue 18: the hf card showed nothing for 10-15 s)."""

from __future__ import annotations

import io

import pytest

from omni_cli.backends.base import LoadStep
from omni_cli.cli.load_view import LiveLoadView, LoadView, PlainLoadView, make_load_view


def hf_like_load(total_tensors: int = 689) -> list[LoadStep]:
    """The phases in the order the hf backend reports them, the weights counted tensor by tensor."""
    steps = [LoadStep("importing torch and transformers"), LoadStep("building the model")]
    steps += [LoadStep("loading weights", done, total_tensors, "tensors") for done in range(0, total_tensors + 1, 13)]
    steps += [LoadStep("loading weights", total_tensors, total_tensors, "tensors"), LoadStep("loading the tokenizer")]
    steps += [LoadStep("building voices", done, 2, "voices") for done in range(3)]
    return steps


def test_without_a_terminal_each_phase_is_one_line_never_one_per_tensor():
    err = io.StringIO()
    with PlainLoadView(err) as view:
        for step in hf_like_load():
            view(step)
    assert err.getvalue().splitlines() == [
        "omni: importing torch and transformers",
        "omni: building the model",
        "omni: loading weights (689 tensors)",
        "omni: loading the tokenizer",
        "omni: building voices (2 voices)",
    ]


@pytest.mark.parametrize("width", [60, 80, 140])
def test_on_a_terminal_one_line_names_the_phase_and_counts_the_weights(width):
    from rich.console import Console

    console = Console(file=io.StringIO(), width=width, force_terminal=False, color_system=None)
    view = LiveLoadView(console.file, console=console)
    assert view.render() is None  # nothing drawn before the backend reports a phase (numpy, piper: never)
    steps = hf_like_load()
    halfway = next(i for i, s in enumerate(steps) if s.phase == "loading weights" and s.done >= 338)
    try:
        for step in steps[: halfway + 1]:
            view(step)
        with console.capture() as frame:
            console.print(view.render())
    finally:
        view.__exit__(None, None, None)
    lines = frame.get().splitlines()
    assert len(lines) == 1 and len(lines[0]) <= width
    assert "loading weights" in lines[0] and "338/689 tensors" in lines[0]


def test_quiet_shows_nothing_and_a_pipe_gets_plain_lines():
    assert type(make_load_view(io.StringIO(), quiet=True)) is LoadView
    assert type(make_load_view(io.StringIO(), quiet=False)) is PlainLoadView


def test_on_a_terminal_a_note_stays_above_the_line_that_goes():
    """A part that fell back (the hf vocoder's compiled files) says so in a line the finished load keeps."""
    from rich.console import Console

    out = io.StringIO()
    console = Console(file=out, width=80, force_terminal=False, color_system=None)
    note = "the DiT runs uncompiled: its ahead-of-time file could not be built or loaded (OSError: [x] y)"
    with LiveLoadView(out, console=console) as view:
        view(LoadStep("building voices", 1, 2, "voices"))
        view(LoadStep(note, note=True))
        view(LoadStep("compiling the BigVGAN ahead of time"))
    text = out.getvalue()
    assert "omni: the DiT runs uncompiled" in text and "(OSError: [x] y)" in text  # printed, not a phase
    assert all(len(line) <= 80 for line in text.splitlines())
    err = io.StringIO()
    with PlainLoadView(err) as plain:
        plain(LoadStep(note, note=True))
    assert err.getvalue() == f"omni: {note}\n"
