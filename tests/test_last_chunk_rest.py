"""audio_decode's last chunk takes a rest shorter than its look-ahead: those codes are inside the window it reads
anyway, and a call of their own would pay a whole window's context for a few codes (issue 19, no work done
twice: 200 codes on the tiny checkpoint ended in a 4-code chunk that took 0.11-0.16 s)."""

from __future__ import annotations

import numpy as np
from runtime_helpers import speak_recording_chunks, toy_with_vocoder


def toy(lookahead: int, **loop_fields):
    """The toy card with its vocoder's look-ahead and its audio_decode loop's fields set."""
    return toy_with_vocoder({"components.vocoder.params.lookahead_codes": lookahead}, **loop_fields)


def test_a_rest_shorter_than_the_look_ahead_rides_with_the_last_chunk(monkeypatch):
    # with no look-ahead nothing is merged: the card's schedule, and where the codes end
    _, plain = speak_recording_chunks(monkeypatch, toy(0, first_chunk_codes=3, chunk_codes=12))
    total = plain[-1][1]
    rest = total - plain[-1][0]
    assert len(plain) >= 4 and 0 < rest < 12, plain  # a short rest, after a chunk that is not the first
    samples, merged = speak_recording_chunks(monkeypatch, toy(rest + 1, first_chunk_codes=3, chunk_codes=12))
    assert merged == [*plain[:-2], (plain[-2][0], total)]
    # a look-ahead no longer than the rest: the rest is a chunk of its own, as before
    _, kept = speak_recording_chunks(monkeypatch, toy(rest, first_chunk_codes=3, chunk_codes=12))
    assert kept == plain
    # the toy vocoder makes the same samples for any chunking: the merge moved no audio
    whole, _ = speak_recording_chunks(monkeypatch, toy(rest + 1, chunk_codes=0))
    assert samples.size > 0
    np.testing.assert_allclose(samples, whole, rtol=0, atol=1e-6)


def test_a_first_chunk_is_never_merged_with_the_rest(monkeypatch):
    """First audio waits on the first chunk's call: an utterance shorter than its first chunk and look-ahead
    still gets the first chunk on its own."""
    _, plain = speak_recording_chunks(monkeypatch, toy(0, first_chunk_codes=3, chunk_codes=0))
    total = plain[-1][1]
    _, chunks = speak_recording_chunks(monkeypatch, toy(16, first_chunk_codes=total - 1, chunk_codes=total - 1))
    assert chunks == [(0, total - 1), (total - 1, total)]
