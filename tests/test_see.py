"""The toy card sees: its image encoder (one WorkUnit per picture), the thinker's prefill of a picture's rows, and
the runtime's gates — serial equals interleaved and batched, barrier equals stream — with pictures, audio and text."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from runtime_helpers import run_alone, run_together

from omni_cli.api import load
from omni_cli.audio.seen import SeenImage
from omni_cli.audio.source import AudioSource
from omni_cli.backends.base import IMAGE, ImageInput
from omni_cli.spec import SpeakRequest, SpecError

RATE = 16000


@pytest.fixture(scope="module")
def chat():
    return load("qwen2_5_omni_toy", "chat")


def picture(height: int, width: int, seed: int) -> SeenImage:
    return SeenImage(np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8), f"p{seed}")


def clip(seconds: float, seed: int) -> np.ndarray:
    t = np.arange(int(seconds * RATE)) / RATE
    return (0.3 * np.sin(2 * np.pi * (180 + 40 * seed) * t)).astype(np.float32)


def test_a_picture_is_its_grid_of_rows_and_alone_equals_beside_another(chat):
    eyes = chat.roles["image_encoder"]
    a, b = picture(40, 70, 1), picture(200, 30, 2)
    together = eyes.run(IMAGE, [ImageInput(a, 0), ImageInput(b, 1)])
    assert together[0].grid == (1, 5, 8) == eyes.rows_for(70, 40)  # 8-pixel patches, rounded
    assert together[1].grid == (1, 8, 4)  # at most 8 patches a side
    for image, rows in zip((a, b), together, strict=True):
        alone = eyes.run(IMAGE, [ImageInput(image, 0)])[0]
        assert np.array_equal(alone.rows, rows.rows) and rows.rows.shape == (int(np.prod(rows.grid)), 64)


def turns():
    return [
        SpeakRequest("What is this?", mode="chat", seed=1, max_tokens=12, images=(picture(40, 70, 1),)),
        SpeakRequest("Only text here.", mode="chat", seed=2, max_tokens=9),
        SpeakRequest("And these?", mode="chat", seed=3, max_tokens=10, voice="tenor",
                     images=(picture(16, 16, 2), picture(64, 48, 3)), audio=AudioSource.whole(clip(1.3, 1), RATE)),
        SpeakRequest("", mode="chat", seed=4, max_tokens=7, images=(picture(9, 9, 4),)),
    ]


def assert_same(a, b):
    assert a.status == b.status and a.error is None and b.error is None
    assert a.tokens == b.tokens and a.text == b.text
    assert np.array_equal(a.samples, b.samples)
    assert all(len(t) > 0 for t in a.tokens.values()) and a.samples.size > 0


@pytest.fixture(scope="module")
def solo(chat):
    return [run_alone(chat, r) for r in turns()]


@pytest.mark.parametrize("max_batch", [1, 16])
def test_serial_equals_interleaved_and_batched(chat, solo, max_batch):
    engine, together = run_together(chat, turns(), max_batch=max_batch)
    for a, b in zip(solo, together, strict=True):
        assert_same(a, b)
    assert together[2].loops["image_encode"].outputs == {"images": 2, "image_positions": 4 + 48}
    if max_batch > 1:
        assert engine.stats.batched_calls < engine.stats.work_units  # batches really formed


def test_barrier_equals_stream(chat, solo):
    assert_same(solo[2], run_alone(chat, replace(turns()[2], handoff="barrier")))


def test_the_picture_changes_the_answer(chat, solo):
    other = run_alone(chat, replace(turns()[0], images=(picture(40, 70, 9),)))
    assert other.tokens["thinker_decode"] != solo[0].tokens["thinker_decode"]  # the thinker saw the picture


def test_prefill_in_parts_places_the_picture_between_its_markers(chat):
    thinker = chat.roles["thinker"]
    prompt = thinker.listen_prompt("hi", True, 2)
    assert prompt.slots == ["image", "image", "audio"] and len(prompt.pieces) == 4
    assert prompt.before_ids == prompt.pieces[0] and prompt.after_ids == prompt.pieces[-1]
    assert thinker.listen_prompt("hi", True).layout() == ([prompt.pieces[0][:-1] + [262], prompt.pieces[-1]],
                                                          ["audio"])


def test_too_many_pictures_and_programs_that_do_not_see_are_refused(chat):
    few = load("qwen2_5_omni_toy", "chat", overrides={"components.image_encoder.params.max_images": 1})
    with pytest.raises(SpecError, match="2 images; the image encoder takes at most 1"):
        few.wire("r1", SpeakRequest("hi", mode="chat", images=(picture(8, 8, 1),) * 2), lambda e: None)
    with pytest.raises(SpecError, match="program 'speak' does not see"):
        load("qwen2_5_omni_toy").wire("r2", SpeakRequest("hi", images=(picture(8, 8, 1),)), lambda e: None)
    with pytest.raises(SpecError, match="heard audio and seen images need chat mode"):
        chat.wire("r3", SpeakRequest("hi", mode="echo", images=(picture(8, 8, 1),)), lambda e: None)
