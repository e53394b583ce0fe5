"""audio_decode's `first_audio_codes` (issue 19, TTFA): the first chunk's vocoder window, vocoded in two pieces
whose first goes out after `first_audio_codes` codes; the chunks after them as if the first had been one."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from runtime_helpers import toy_with_vocoder

from omni_cli.backends.toy.vocoder import NumpyVocoder
from omni_cli.engine import Engine
from omni_cli.spec import SpecError, load_card, parse_yaml
from omni_cli.spec.request import SpeakRequest

TOY = (Path(__file__).resolve().parents[1] / "cards" / "qwen2_5_omni_toy.yaml").read_text(encoding="utf-8")


@pytest.mark.parametrize("written, why", [
    ("    chunk_codes: 10\n    first_chunk_codes: 8\n    first_audio_codes: 8\n", "below the first chunk's 8 codes"),
    ("    chunk_codes: 10\n    first_audio_codes: 12\n", "below the first chunk's 10 codes"),
    ("    chunk_codes: 0\n    first_audio_codes: 4\n", "needs chunk_codes above 0"),
])
def test_the_first_piece_must_be_shorter_than_the_first_chunk(written, why):
    text = TOY.replace("    chunk_codes: 10\n", written)
    with pytest.raises(SpecError) as caught:
        load_card(parse_yaml(text, "toy.yaml"))
    [issue] = caught.value.issues
    assert issue.key == "loops.vocoder.first_audio_codes" and why in issue.message
    assert text.splitlines()[issue.line - 1].strip().startswith("first_audio_codes:")


def _program(first_audio_codes: int):
    return toy_with_vocoder(first_chunk_codes=8, chunk_codes=32, first_audio_codes=first_audio_codes)


def _speak(first_audio_codes: int, monkeypatch) -> tuple[np.ndarray, list[tuple]]:
    calls = []
    run = NumpyVocoder.run

    def recorded(self, kind, inputs):
        calls.extend((i.start, i.end, i.window_end, len(i.codes), i.is_final) for i in inputs)
        return run(self, kind, inputs)

    monkeypatch.setattr(NumpyVocoder, "run", recorded)
    engine = Engine(_program(first_audio_codes))
    text = "a sentence long enough for a few chunks of codes, and then some more words after it"
    result = engine.submit(SpeakRequest(text, seed=5), collect=True).result()
    return result.samples, calls


def test_the_first_piece_waits_for_its_whole_window_and_the_rest_follows_from_it(monkeypatch):
    split, calls = _speak(3, monkeypatch)
    ahead = _program(3).loops["vocoder"].component.lookahead_codes
    (s0, e0, w0, have0, _), (s1, e1, w1, _, _), *rest = calls
    assert (s0, e0, w0) == (0, 3, 8)  # 3 codes of audio from the window of the first chunk's 8
    assert have0 >= 8 + ahead  # it ran once the window and its look-ahead had arrived
    assert (s1, e1, w1) == (3, 8, None)  # the rest of that window
    # then the sizes of an unsplit card: 8 doubling to 32, after the first
    assert [(s, e) for s, e, *_ in rest[:2]] == [(8, 24), (24, 56)]
    monkeypatch.undo()
    whole, plain = _speak(0, monkeypatch)
    assert [(s, e) for s, e, *_ in plain[:3]] == [(0, 8), (8, 24), (24, 56)]
    assert all(w is None for _, _, w, *_ in plain)
    # the toy vocoder runs any chunking to the same samples: splitting moved no audio
    assert split.shape == whole.shape and split.size > 0
    np.testing.assert_allclose(split, whole, rtol=0, atol=1e-6)


def test_a_card_shows_its_first_piece(tmp_path):
    from typer.testing import CliRunner

    from omni_cli.cli.app import app

    shipped = (Path(__file__).resolve().parents[1] / "cards" / "qwen2_5_omni.yaml").read_text(encoding="utf-8")
    assert "    first_audio_codes: 0\n" in shipped  # one piece by default
    split = tmp_path / "qwen2_5_omni.yaml"
    split.write_text(shipped.replace("    first_audio_codes: 0\n", "    first_audio_codes: 4\n"), encoding="utf-8")
    for card, says in ((split, "chunk_codes 6, 16, 24, then doubling to 96, first audio after 4"),
                       ("qwen2_5_omni", "chunk_codes 6, 16, 24, then doubling to 96, the first 112 codes as one chunk beside other requests, "
                                       "96 after a chunk slower than its audio")):
        shown = CliRunner().invoke(app, ["cards", "show", str(card)], env={"COLUMNS": "200"})
        assert shown.exit_code == 0, shown.output
        assert says in " ".join(shown.output.split()), shown.output  # (a long line wraps, even at 200 columns)


def test_requests_beside_each_other_keep_their_first_chunk_whole(monkeypatch):
    calls = []
    run = NumpyVocoder.run

    def recorded(self, kind, inputs):
        calls.extend((i.start, i.end, i.window_end) for i in inputs)
        return run(self, kind, inputs)

    monkeypatch.setattr(NumpyVocoder, "run", recorded)
    engine = Engine(_program(3))
    text = "two requests at once, each long enough for a few chunks of codes"
    handles = [engine.submit(SpeakRequest(text, seed=s), collect=True) for s in (1, 2)]
    results = [h.result() for h in handles]
    assert all(r.samples.size for r in results)
    # the second piece's extra vocoder call pays off for a request alone, not when the calls are shared
    assert all(w is None for _, _, w in calls) and calls.count((0, 8, None)) == 2
    before = len(calls)
    alone = engine.submit(SpeakRequest(text, seed=3), collect=True).result()  # the others have finished
    assert alone.samples.size and calls[before:before + 2] == [(0, 3, 8), (3, 8, None)]


def _shared_program(shared_first_codes: int):
    return toy_with_vocoder(first_chunk_codes=8, chunk_codes=32, shared_first_codes=shared_first_codes)


@pytest.mark.parametrize("merged, first, after", [(0, (0, 8), [(8, 24), (24, 56)]),
                                                  # the schedule's first two and three chunks (8, 16, 32) as one
                                                  (24, (0, 24), [(24, 56), (56, 88)]),
                                                  (56, (0, 56), [(56, 88), (88, 120)]),
                                                  # 40 ends inside the schedule's third chunk (24, 56), so the
                                                  # fourth (32 codes) comes next
                                                  (40, (0, 40), [(40, 72), (72, 104)]),
                                                  (12, (0, 12), [(12, 44), (44, 76)])])  # ends in (8, 24)
def test_beside_other_requests_the_first_chunk_covers_the_schedule_s_first_chunks(monkeypatch, merged, first, after):
    calls = []
    run = NumpyVocoder.run

    def recorded(self, kind, inputs):
        calls.extend((id(i.state), i.start, i.end) for i in inputs)
        return run(self, kind, inputs)

    monkeypatch.setattr(NumpyVocoder, "run", recorded)
    engine = Engine(_shared_program(merged))
    text = "two requests at once, each long enough for a few chunks of codes, and then a good many words more"
    handles = [engine.submit(SpeakRequest(text, seed=s), collect=True) for s in (1, 2)]
    together = [h.result().samples for h in handles]
    by_request: dict[int, list[tuple[int, int]]] = {}
    for state, start, end in calls:
        by_request.setdefault(state, []).append((start, end))
    assert len(by_request) == 2
    for chunks in by_request.values():
        # (8, 16, 32, 32, ...: the first `merged` of them as one, then the schedule from where they end)
        assert chunks[0] == first and chunks[1:3] == after, chunks
    calls.clear()
    alone = engine.submit(SpeakRequest(text, seed=1), collect=True).result().samples  # the others have finished
    assert [(s, e) for _, s, e in calls[:3]] == [(0, 8), (8, 24), (24, 56)]
    # the toy vocoder runs any chunking to the same samples: merging moved no audio
    np.testing.assert_allclose(together[0], alone, rtol=0, atol=1e-6)


def _shown(tmp_path, loop_lines: str) -> str:
    """`omni cards show` of the toy card with `loop_lines` added to its vocoder loop."""
    from typer.testing import CliRunner

    from omni_cli.cli.app import app

    card = tmp_path / "toy.yaml"
    card.write_text(TOY.replace("    chunk_codes: 10\n", "    chunk_codes: 10\n" + loop_lines), encoding="utf-8")
    shown = CliRunner().invoke(app, ["cards", "show", str(card)], env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    return shown.output


def test_the_retired_shared_first_chunks_names_the_key_to_write():
    text = TOY.replace("    chunk_codes: 10\n", "    chunk_codes: 10\n    shared_first_chunks: 2\n")
    with pytest.raises(SpecError) as caught:
        load_card(parse_yaml(text, "toy.yaml"))
    [issue] = caught.value.issues
    assert issue.key == "loops.vocoder.shared_first_chunks" and "write shared_first_codes" in issue.message, issue
    assert text.splitlines()[issue.line - 1].strip() == "shared_first_chunks: 2"


def test_a_shared_first_chunk_in_codes_is_shown_and_checked(tmp_path):
    shown = _shown(tmp_path, "    first_chunk_codes: 5\n    shared_first_codes: 12\n")
    assert "chunk_codes 5 doubling to 10, the first 12 codes as one chunk beside other requests" in shown
    for loop_lines, message in [
        ("    first_chunk_codes: 5\n    shared_first_codes: 5\n", "must be above the first chunk's 5 codes"),
        ("    shared_first_codes: 8\n", "must be above the first chunk's 10 codes"),
    ]:
        with pytest.raises(SpecError) as caught:
            load_card(parse_yaml(TOY.replace("    chunk_codes: 10\n", "    chunk_codes: 10\n" + loop_lines), "toy.yaml"))
        [issue] = caught.value.issues
        assert issue.key == "loops.vocoder.shared_first_codes" and message in issue.message, issue
