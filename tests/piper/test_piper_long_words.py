"""A sentence of many phoneme ids (a 2,000-letter "word" makes about 4,000) costs the acoustic model the square of
its ids in one call: it runs in pieces of at most MAX_IDS_PER_CALL ids, so a request's memory stays bounded
whatever the text."""

from __future__ import annotations

import numpy as np
import pytest

from omni_cli.backends.piper.acoustic import MAX_IDS_PER_CALL, PiperAcoustic
from omni_cli.backends.sentence_types import FramesInput

IDS = {"^": [1], "$": [2], "_": [0], " ": [3], "a": [10], "b": [11]}
CHANNELS = 4


class _Session:
    """The acoustic graph's shape: two frames per id; records each call's ids."""

    def __init__(self):
        self.calls: list[list[int]] = []

    def run(self, outputs, feed):
        ids = feed["input"][0].tolist()
        self.calls.append(ids)
        return [np.tile(np.asarray(ids, dtype=np.float32), (1, CHANNELS, 2))[:, :, :2 * len(ids)]]


class _Params:
    noise_scale, noise_w = 0.667, 0.8


def _sentence(words: list[int]) -> list[int]:
    """^ _ then each word's letters with their pads, a space between words, then $."""
    inner: list[int] = []
    for n, length in enumerate(words):
        if n:
            inner += [3, 0]
        inner += [10, 0] * length
    return [1, 0, *inner, 2]


@pytest.mark.parametrize("words", [[2000], [5] * 400, [300, 1, 900, 2, 600]])
def test_a_long_sentence_runs_in_pieces_each_within_the_cap_holding_every_id(words):
    session = _Session()
    acoustic = PiperAcoustic("acoustic", session, CHANNELS, 0, _Params(), IDS)
    ids = _sentence(words)
    frames = acoustic.frames(FramesInput(ids, 1.0, 0.667, 0.8, (0, 0)))
    assert len(session.calls) > 1 and all(len(call) <= MAX_IDS_PER_CALL for call in session.calls)
    assert all(call[:2] == [1, 0] and call[-1] == 2 for call in session.calls)  # each a sentence the voice knows
    assert [i for call in session.calls for i in call[2:-1]] == ids[2:-1]  # nothing lost, nothing twice
    assert frames.shape == (CHANNELS, 2 * sum(len(call) for call in session.calls))
    if max(words) * 2 < MAX_IDS_PER_CALL // 2:  # words stay whole where there are words to cut between
        assert all(call[2] != 3 and call[-3] == 3 for call in session.calls[:-1])
    elif len(words) > 1:  # a word longer than a piece is cut; the one before it ends its piece whole
        assert session.calls[0][-3] == 3 and len(session.calls[0]) == 2 * (300 + 1 + 1 + 1) + 3


def test_a_sentence_within_the_cap_is_one_call_as_before():
    session = _Session()
    acoustic = PiperAcoustic("acoustic", session, CHANNELS, 0, _Params(), IDS)
    ids = _sentence([100, 200])
    acoustic.frames(FramesInput(ids, 1.0, 0.667, 0.8, (0, 0)))
    assert session.calls == [ids]


def test_the_step_estimate_grows_with_the_ids_not_their_square():
    acoustic = PiperAcoustic("acoustic", _Session(), 192, 0, _Params(), IDS)
    one, ten = acoustic.step_bytes(4000), acoustic.step_bytes(40000)
    assert ten < 2 * one < 512 << 20  # a card's 2 GiB budget holds a text's longest sentence with room


def test_the_voice_speaks_a_2000_letter_word_in_pieces(quiet_voice):
    letters = "".join("abcdefghijklmnopqrstuvwxyz"[(i * 7) % 26] for i in range(2000))
    read = quiet_voice.roles["phonemizer"].read(letters)
    acoustic = quiet_voice.roles["acoustic"]
    assert len(read.phoneme_ids) > 2 * MAX_IDS_PER_CALL
    frames = acoustic.frames(FramesInput(read.phoneme_ids, 1.0, 0.0, 0.0, (0, 0)))
    assert frames.shape[0] == acoustic.channels and frames.shape[1] > len(read.phoneme_ids)
    assert np.isfinite(frames).all()
