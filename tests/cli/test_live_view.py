"""The live view drawn to fixed-width consoles (60, 80, 140 columns) and checked by its text (issue 18)."""

from __future__ import annotations

import io
from types import SimpleNamespace

import pytest

from omni_cli.cli.live import LiveView
from omni_cli.cli.outputs import Utterance
from omni_cli.engine.trace import WorkUnitEvent

LOOPS = {"thinker_decode": "thinker", "talker_decode": "talker", "vocoder_decode": "vocoder"}


def make_view(width: int) -> tuple[LiveView, object]:
    from rich.console import Console

    loops = {name: SimpleNamespace(spec=SimpleNamespace(component=comp)) for name, comp in LOOPS.items()}
    engine = SimpleNamespace(program=SimpleNamespace(loops=loops), sample_rate=24000)
    console = Console(file=io.StringIO(), width=width, force_terminal=False, color_system=None)
    return LiveView(engine, console.file, verbose=False, console=console), console


def unit(rid: str, loop: str, kind: str, step: int, start_s: float, batch: int = 1, dur_s: float = 0.00112):
    return WorkUnitEvent(rid, loop, kind, step, batch, start_s, dur_s, 0)


def feed(view, num_requests: int) -> list[Utterance]:
    """Requests r1..rN: each 3 thinker and 10 talker tokens (batched in pairs), 2 vocoder chunks."""
    utts = []
    for i in range(1, num_requests + 1):
        utt = Utterance(i, 2 * i, f"line {i}", request_id=f"r{i}", status="running")
        view.on_submit(utt)
        utts.append(utt)
    t = 0.0
    for rid in (u.request_id for u in utts):
        for step in range(3):
            view.on_trace(unit(rid, "thinker_decode", "ar_token", step, t))
            t += 0.01
    for step in range(10):  # one batched call per step: every request reports it
        for rid in (u.request_id for u in utts):
            view.on_trace(unit(rid, "talker_decode", "ar_token", step, t, batch=num_requests))
        t += 0.01
    for u in utts:
        for chunk in range(2):
            view.on_trace(unit(u.request_id, "vocoder_decode", "audio_chunk", chunk, t, dur_s=0.0034))
            t += 0.01
        view.on_audio(u, 4800)
        u.num_samples, u.first_audio_after_line_s = 4800, 0.045
    return utts


def draw(view, console) -> list[str]:
    console.print(view.render())
    return console.file.getvalue().splitlines()


@pytest.mark.parametrize("width", [60, 80, 140])
def test_every_line_fits_and_every_loop_and_request_is_named(width):
    view, console = make_view(width)
    utts = feed(view, 3)
    utts[0].status = "finished"
    lines = draw(view, console)
    assert lines and max(len(line) for line in lines) <= width
    for loop in LOOPS:  # the loop names are never cut, whatever the width
        assert any(line.startswith(loop + " ") for line in lines), (loop, lines)
    rows = {line.split()[0]: line.split() for line in lines if line.startswith("r") and line[1].isdigit()}
    assert set(rows) == {"r1", "r2", "r3"}
    # request id, line, WorkUnits per stage; the finished one says so where there is room
    assert rows["r2"][:5] == ["r2", "4", "3", "10", "2"]
    if width >= 80:
        assert rows["r1"][5:] == ["45", "ms", "0.20", "s", "finished"] and "first audio" in lines[5]


def test_a_batch_is_shown_once_with_its_size_and_more_recent_units_on_wider_consoles():
    shown = {}
    for width in (60, 80, 140):
        view, console = make_view(width)
        feed(view, 2)
        talker = next(line for line in draw(view, console) if line.startswith("talker_decode"))
        assert talker.split()[1:3] == ["20", "219"]  # WorkUnits; per second: 20 from the first start to the last end, 91.12 ms
        shown[width] = talker.count("ar_token 1.12 ms x2")  # one call of two requests: one entry, "x2"
        assert "ar_token" in talker and talker.count("ar_token") == shown[width]
    assert 1 <= shown[60] < shown[80] < shown[140]


def test_many_requests_show_the_running_ones_and_count_the_rest():
    view, console = make_view(80)
    utts = feed(view, 9)
    for u in utts[:6]:
        u.status = "finished"
    lines = draw(view, console)
    ids = [line.split()[0] for line in lines if line[:1] == "r" and line.split()[0][1:].isdigit()]
    assert ids == ["r5", "r6", "r7", "r8", "r9"]  # the three running, then the two finished last
    assert "… 4 more (4 done)" in lines
    assert lines[-1].startswith("audio 1.80 s · first audio 45 ms after its line (median) · 6/9 done")
