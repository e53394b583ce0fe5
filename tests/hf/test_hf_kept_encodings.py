"""The hf card keeps its towers' rows across runs: a conversation's second run (fresh sources, a fresh engine, the
same store) runs no audio block of the earlier clip and no picture again, and its thinker ids, talker codes and
waveform equal a run with no store; the rows come back in the tower's own dtype, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from heard_audio import RATE, clip
from test_hf_see import chat, picture  # noqa: F401 - fixtures

from omni_cli.audio.source import AudioSource
from omni_cli.backends.base import AUDIO_BLOCK, IMAGE
from omni_cli.encoded import EncodedStore, identity_key
from omni_cli.engine import Engine
from omni_cli.spec import PriorTurn, SpeakRequest


def run(chat, store, text, history=(), audio=None, images=()):  # noqa: F811
    ran = {AUDIO_BLOCK: 0, IMAGE: 0}
    towers = [chat.roles["audio_encoder"], chat.roles["image_encoder"]]
    for tower in towers:
        def spy(kind, inputs, real=tower.run):
            ran[kind] = ran.get(kind, 0) + len(inputs)
            return real(kind, inputs)

        tower.run = spy
    try:
        request = SpeakRequest(text, mode="chat", max_tokens=8, history=history, audio=audio, images=images,
                               keep_encoded=store)
        return Engine(chat).submit(request, collect=True).result(), ran
    finally:
        for tower in towers:
            del tower.run


def test_a_second_run_encodes_only_the_new_clip_and_answers_the_same(chat, tmp_path):  # noqa: F811
    store = EncodedStore(tmp_path / "cache")
    first_clip, seen = clip(4.3, 1), picture(56, 84, 2)
    first, ran = run(chat, store, "what is it?", audio=AudioSource.whole(first_clip, RATE), images=(seen,))
    assert first.error is None and ran[AUDIO_BLOCK] == 3 and ran[IMAGE] == 1

    def history():  # read again from their "files", as the next `omni chat --history` run does
        return (PriorTurn("user", "what is it?", (AudioSource.whole(first_clip, RATE),), (seen,)),
                PriorTurn("assistant", first.text))

    again, ran = run(chat, store, "and this?", history(), AudioSource.whole(clip(1.7, 3), RATE))
    uncached, ran_uncached = run(chat, None, "and this?", history(), AudioSource.whole(clip(1.7, 3), RATE))
    assert ran == {AUDIO_BLOCK: 1, IMAGE: 0} and ran_uncached == {AUDIO_BLOCK: 4, IMAGE: 1}
    assert again.loops["audio_encode"].outputs["reused"] == {"clips": 1, "audio_s": pytest.approx(4.3)}
    assert again.loops["image_encode"].outputs["reused"] == {"images": 1}
    assert again.tokens["thinker_decode"] and again.tokens == uncached.tokens
    assert again.samples.size and np.array_equal(again.samples, uncached.samples)


def test_kept_rows_come_back_in_the_towers_dtype_exactly(chat):  # noqa: F811
    encoder = chat.roles["audio_encoder"]
    rows = torch.randn(5, 8).to(torch.bfloat16)
    back = encoder.rows_from_numpy(encoder.rows_to_numpy(rows))
    assert back.dtype == encoder.dtype and torch.equal(back.to(torch.bfloat16), rows)
    identity = encoder.identity()
    assert len(identity["weights"]) == 64 and identity["dtype"] == str(encoder.dtype)
    assert identity_key(identity) != identity_key(chat.roles["image_encoder"].identity())
