"""The hf card sees: the checkpoint's image processor and vision tower, one picture per WorkUnit, and the answer
equal to generate's given the same picture (and audio and text), alone and batched with other requests."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import torch
from hf_cards import greedy_card
from test_hf_listen import clip, streamed

from omni_cli.api import load
from omni_cli.audio.seen import SeenImage
from omni_cli.backends.base import ImageInput
from omni_cli.engine import Engine
from omni_cli.spec import SpeakRequest, SpecError

RATE = 16000


@pytest.fixture(scope="module")
def chat(tiny_checkpoint, tmp_path_factory):
    card = greedy_card(tmp_path_factory.mktemp("see"), "greedy_see", thinker_max=12, talker_max=24)
    return load(str(card), "chat", settings={"model_path": str(tiny_checkpoint)})


@pytest.fixture(scope="module")
def processor(tiny_checkpoint):
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    return Qwen2VLImageProcessorPil.from_pretrained(str(tiny_checkpoint))


def picture(height: int, width: int, seed: int) -> SeenImage:
    """A smooth picture with some texture (random pixels alone would make every patch alike on average)."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width]
    base = np.stack([np.sin(x / (7 + seed)), np.cos(y / 5), np.sin((x + y) / 11)], axis=-1)
    pixels = 127.5 * (1 + 0.8 * base) + 20 * rng.standard_normal((height, width, 3))
    return SeenImage(np.clip(pixels, 0, 255).astype(np.uint8), f"picture {seed}")


def reference(chat, processor, text: str, images: list[SeenImage], samples: np.ndarray | None):
    """The prompt ids (the processor's count of image and audio positions) and generate's inputs for them."""
    thinker, ears = chat.roles["thinker"], chat.roles["audio_encoder"]
    prompt = thinker.listen_prompt(text, samples is not None, len(images))
    kwargs, counts = {}, []
    if images:
        batch = processor(images=[i.pixels for i in images], return_tensors="pt")
        kwargs.update(pixel_values=batch["pixel_values"], image_grid_thw=batch["image_grid_thw"])
        counts += [int(g.prod()) // processor.merge_size ** 2 for g in batch["image_grid_thw"]]
    if samples is not None:
        from transformers import WhisperFeatureExtractor

        fe = WhisperFeatureExtractor.from_pretrained(str(thinker.model.name_or_path))
        feats = fe(samples, sampling_rate=RATE, return_attention_mask=True, return_tensors="pt")
        kwargs.update(input_features=feats["input_features"], feature_attention_mask=feats["attention_mask"])
        counts.append(ears.tokens_for(len(samples)))
    ids = list(prompt.pieces[0])
    for slot, n, piece in zip(prompt.slots, counts, prompt.pieces[1:], strict=True):
        ids += [prompt.image_id if slot == "image" else prompt.audio_id] * n + piece
    return ids, kwargs


def generate_tokens(chat, processor, text, images, samples=None) -> list[int]:
    ids, kwargs = reference(chat, processor, text, images, samples)
    with torch.no_grad():
        seq = chat.roles["thinker"].module.generate(torch.tensor([ids]), max_new_tokens=12, do_sample=False, **kwargs)
    return seq[0, len(ids):].tolist()


def test_a_picture_is_one_work_unit_and_equals_the_towers_rows(chat, processor):
    """Our rows are get_image_features' bit for bit. Why a picture is not split into its attention windows:
    a window encoded alone differs from the whole picture's rows for it (the full-attention layer sees all)."""
    eyes, thinker = chat.roles["image_encoder"], chat.roles["thinker"]
    images = [picture(100, 150, 1), picture(60, 40, 2)]
    batch = processor(images=[i.pixels for i in images], return_tensors="pt")
    with torch.no_grad():
        together = thinker.module.model.get_image_features(batch["pixel_values"], batch["image_grid_thw"]).pooler_output
    for image, whole in zip(images, together, strict=True):  # alone equals beside another picture
        rows = eyes.run("image", [ImageInput(image, 0)])[0]
        assert rows.grid == eyes.rows_for(*image.size) and rows.rows.shape[0] == int(np.prod(rows.grid))
        torch.testing.assert_close(rows.rows, whole, rtol=0, atol=1e-6)
    t, h, w = eyes.rows_for(*images[0].size)
    assert max(h, w) > 8  # wider than one 8-patch attention window (window_size 112 / patch 14)
    one = processor(images=[images[0].pixels], return_tensors="pt")
    grid = one["image_grid_thw"][0]
    rows_8 = min(h, 8)  # window 0: the first 8 x 8 patches (merge size 1: one row each)
    patches = one["pixel_values"].view(int(grid[1]), int(grid[2]), -1)[:rows_8, :8].reshape(rows_8 * 8, -1)
    with torch.no_grad():
        alone = eyes.tower(patches, grid_thw=torch.tensor([[1, rows_8, 8]])).pooler_output
        first = eyes.encode(images[0].pixels).rows.view(h, w, -1)[:rows_8, :8].reshape(rows_8 * 8, -1)
    # far beyond float rounding (about 1e-7 of the rows' size): the window alone misses the rest of the picture
    assert float((alone - first).abs().max()) > 1e-3 * float(first.abs().max())


def test_thinker_tokens_equal_generate_alone_and_batched(chat, processor):
    audio = clip(2.3, 2)
    turns = [("what is it?", [picture(100, 150, 1)], None),
             ("and this?", [picture(60, 40, 2), picture(90, 90, 3)], audio),
             ("", [picture(40, 120, 4)], None)]
    expected = [generate_tokens(chat, processor, t, imgs, s) for t, imgs, s in turns]
    assert all(expected)  # an empty reply never counts as parity

    def request(i, text, images, samples):
        return SpeakRequest(text, mode="chat", seed=i, images=tuple(images),
                            audio=None if samples is None else streamed(samples))

    alone = Engine(chat).submit(request(0, *turns[0]), collect=True).result()
    assert alone.error is None and alone.tokens["thinker_decode"] == expected[0]
    engine = Engine(chat, max_batch=8)
    handles = [engine.submit(request(i, *turn), collect=True) for i, turn in enumerate(turns)]
    handles.append(engine.submit(SpeakRequest("hello there", mode="chat"), collect=True))  # text only, beside them
    for _ in engine.events():
        pass
    results = [h.result() for h in handles]
    assert all(r.error is None for r in results)
    assert [r.tokens["thinker_decode"] for r in results[:3]] == expected
    assert results[3].tokens["thinker_decode"] and results[1].samples.size > 0


def test_the_spoken_answer_equals_generate_given_a_picture_audio_and_text(tiny_checkpoint, processor, tmp_path):
    """Thinker ids, talker codes and the whole-utterance waveform equal generate's: the talker sees zeros at the
    image and audio positions and places the prompt's positions as generate's talker does."""
    card = greedy_card(tmp_path, "greedy_seen_speech", thinker_max=12, talker_max=60)
    program = load(str(card), "chat", settings={"model_path": str(tiny_checkpoint)})
    model, talker_config = program.roles["thinker"].model, program.roles["thinker"].model.config.talker_config
    for images, samples in (([picture(100, 150, 1)], None), ([picture(70, 56, 5)], clip(2.3, 2))):
        ids, kwargs = reference(program, processor, "hello there", images, samples)
        # the pixels to the thinker only: generate shares un-prefixed inputs with the talker, which takes no pixels
        kwargs["thinker_pixel_values"] = kwargs.pop("pixel_values")
        captured, talker_generate = {}, model.talker.generate

        def spy(*args, _generate=talker_generate, _captured=captured, **kw):
            _captured["codes"] = _generate(*args, **kw)
            return _captured["codes"]

        model.talker.generate = spy
        try:
            torch.manual_seed(0)
            with torch.no_grad():
                seq, wave = model.generate(
                    torch.tensor([ids]), speaker="Chelsie", thinker_max_new_tokens=12, talker_max_new_tokens=60,
                    talker_do_sample=False,
                    talker_eos_token_id=[talker_config.tts_codec_pad_token_id, talker_config.tts_codec_end_token_id],
                    **kwargs)
        finally:
            del model.talker.generate
        ours = Engine(program).submit(SpeakRequest("hello there", mode="chat", voice="Chelsie", images=tuple(images),
                                                   audio=None if samples is None else streamed(samples)),
                                      collect=True).result()
        assert ours.error is None and ours.samples.size
        assert ours.tokens["thinker_decode"] == seq[0, len(ids):].tolist()
        assert ours.tokens["talker_decode"] == captured["codes"][0, len(ids) + 2:].tolist()
        assert np.array_equal(ours.samples, wave.reshape(-1).float().numpy())


def test_a_checkpoint_without_image_settings_is_refused(tiny_checkpoint, tmp_path):
    bare = tmp_path / "bare"
    shutil.copytree(tiny_checkpoint, bare)
    file = bare / "preprocessor_config.json"
    config = json.loads(file.read_text())
    for key in ("patch_size", "min_pixels", "image_mean"):
        del config[key]
    file.write_text(json.dumps(config))
    card = greedy_card(tmp_path, "bare_card")
    with pytest.raises(SpecError, match=r"has no patch_size, min_pixels, image_mean: the image encoder needs") as err:
        load(str(card), "chat", settings={"model_path": str(bare)})
    assert "\n" not in str(err.value).strip()


def test_with_qwens_talker_prefill_the_talker_places_a_picture_as_the_thinker(tiny_checkpoint, processor, tmp_path):
    """codec_bos_pad_in_prefill (Qwen's inference, which gives the talker a mask): the talker's prompt positions
    are get_rope_index's with the picture's grid; generate (no mask) places them in turn, as the gate above has."""
    from omni_cli.backends.hf import talker as talker_module

    card = greedy_card(tmp_path, "qwen_prefill", thinker_max=4, talker_max=4)
    text = card.read_text().replace("codec_bos_pad_in_prefill: false", "codec_bos_pad_in_prefill: true")
    card.write_text(text)
    program = load(str(card), "chat", settings={"model_path": str(tiny_checkpoint)})
    image = picture(100, 150, 1)
    seen, prefill = {}, talker_module.HFTalker._prefill

    def spy(self, inp):
        out = prefill(self, inp)
        seen["payload"], seen["delta"] = inp.prefill, inp.cache.rope_delta
        return out

    talker_module.HFTalker._prefill = spy
    try:
        result = Engine(program).submit(SpeakRequest("hi", mode="chat", images=(image,)), collect=True).result()
    finally:
        talker_module.HFTalker._prefill = prefill
    assert result.error is None
    ids = seen["payload"].text_ids
    grid = processor(images=[image.pixels], return_tensors="pt")["image_grid_thw"]
    expected, delta = program.roles["talker"].module.get_rope_index(ids, grid, None, torch.ones_like(ids))
    from omni_cli.backends.hf.ar import continued_positions

    ours, our_delta = continued_positions(seen["payload"].prompt_positions, 2)
    assert torch.equal(ours, expected) and our_delta == seen["delta"] == int(delta) != 0
