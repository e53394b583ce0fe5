"""audio_decode's `first_chunk_codes` as a list (issue 19, first audio): the first chunks in order, then doubling
from the last up to chunk_codes, so a small first chunk can have a second one that comes soon after it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from runtime_helpers import speak_recording_chunks, toy_with_vocoder
from typer.testing import CliRunner

from omni_cli.cli.app import app
from omni_cli.spec import SpecError, load_card, parse_yaml
from omni_cli.spec.card import LoopSpec


def _spec(first_chunk_codes, chunk_codes: int = 96, **fields) -> LoopSpec:
    return LoopSpec(kind="audio_decode", component="v", prompt_slot="s", chunk_codes=chunk_codes,
                    first_chunk_codes=first_chunk_codes, **fields)


def test_a_list_names_the_first_chunks_then_doubles_from_the_last():
    assert [_spec([12, 16, 24]).chunk_size(i) for i in range(7)] == [12, 16, 24, 48, 96, 96, 96]
    assert [_spec([12, 40]).chunk_size(i) for i in range(4)] == [12, 40, 80, 96]
    # one number is a list of one: the schedule it always gave
    assert [_spec(24).chunk_size(i) for i in range(5)] == [_spec([24]).chunk_size(i) for i in range(5)] == [24, 48, 96, 96, 96]
    assert [_spec(0).chunk_size(i) for i in range(3)] == [96, 96, 96]
    assert _spec([12, 16, 24]).chunk_size(40) == 96  # far past the list, no overflow
    # beside other requests, shared_first_codes counts the chunks of this schedule it reaches into: 112 codes
    # start inside the chunks at 0, 12, 28, 52 and 100, so the chunk after it is the schedule's sixth
    assert _spec([12, 16, 24], shared_first_codes=112).shared_first() == (112, 5)


def test_the_loop_makes_the_listed_chunks_and_the_same_audio(monkeypatch):
    listed, chunks = speak_recording_chunks(monkeypatch, toy_with_vocoder(first_chunk_codes=[3, 4, 6], chunk_codes=20))
    assert chunks[:5] == [(0, 3), (3, 7), (7, 13), (13, 25), (25, 45)], chunks
    doubled, schedule = speak_recording_chunks(monkeypatch, toy_with_vocoder(first_chunk_codes=6, chunk_codes=20))
    assert schedule[:3] == [(0, 6), (6, 18), (18, 38)], schedule
    # the toy vocoder makes the same samples for any chunking: the schedule moved no audio
    assert listed.size > 0 and listed.shape == doubled.shape
    np.testing.assert_allclose(listed, doubled, rtol=0, atol=1e-6)


TOY = (Path(__file__).resolve().parents[1] / "cards" / "qwen2_5_omni_toy.yaml").read_text(encoding="utf-8")


@pytest.mark.parametrize(("lines", "key", "message"), [
    ("    first_chunk_codes: []\n", "first_chunk_codes", "needs one or more, each at least 1"),
    ("    first_chunk_codes: [2, 0]\n", "first_chunk_codes", "needs one or more, each at least 1"),
    ("    first_chunk_codes: [2, 11]\n", "first_chunk_codes", "must be at most chunk_codes (10)"),
    ("    first_chunk_codes: [2, x]\n", "first_chunk_codes.1", "expected integer"),
    ("    first_chunk_codes: [2, 4]\n    first_audio_codes: 2\n", "first_audio_codes", "below the first chunk's 2 codes"),
    ("    first_chunk_codes: [2, 4]\n    shared_first_codes: 2\n", "shared_first_codes", "above the first chunk's 2 codes"),
])
def test_a_bad_list_names_its_key_and_line(lines, key, message):
    text = TOY.replace("    chunk_codes: 10\n", "    chunk_codes: 10\n" + lines)
    with pytest.raises(SpecError) as caught:
        load_card(parse_yaml(text, "toy.yaml"))
    [issue] = caught.value.issues
    assert issue.key == f"loops.vocoder.{key}" and message in issue.message, issue
    assert text.splitlines()[issue.line - 1].strip().startswith(key.split(".")[0])


def test_cards_show_lists_it_and_set_takes_it():
    runner = CliRunner()
    shown = runner.invoke(app, ["cards", "show", "qwen2_5_omni_toy", "--set", "loops.vocoder.first_chunk_codes=[2, 4]"],
                          env={"COLUMNS": "200"})
    assert shown.exit_code == 0 and "chunk_codes 2, 4, then doubling to 10" in shown.output, shown.output
    params = runner.invoke(app, ["cards", "show", "qwen2_5_omni_toy", "--params"], env={"COLUMNS": "200"})
    documented = " ".join(params.output.split()).split("loops.vocoder.first_chunk_codes")[1]
    assert params.exit_code == 0 and "0 to 4,096, or a list of such" in documented.split("loops.")[0], params.output
    bad = runner.invoke(app, ["cards", "validate", "qwen2_5_omni_toy", "--set", "loops.vocoder.first_chunk_codes=[4, 0]"])
    assert bad.exit_code == 2 and "first_chunk_codes" in bad.output and "Traceback" not in bad.output, bad.output
    one = runner.invoke(app, ["cards", "show", "qwen2_5_omni_toy", "--set", "loops.vocoder.first_chunk_codes=4"],
                        env={"COLUMNS": "200"})
    assert one.exit_code == 0 and "chunk_codes 4 doubling to 10" in one.output, one.output
