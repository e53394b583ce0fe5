"""The hf card watches a video: its frames sampled at the checkpoint's processor rate and cut into the video
processor's patches, the vision tower's rows for them, <|VIDEO|> positions at get_rope_index's TMRoPE times, and the
answer equal to generate's given the same video."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import torch
from hf_cards import greedy_card

from omni_cli.api import load
from omni_cli.audio.watched import SeenVideo, read_video
from omni_cli.backends.base import ImageInput, PromptTurn
from omni_cli.backends.hf import thinker as thinker_module
from omni_cli.backends.hf.watch import sampled, video_patches
from omni_cli.engine import Engine
from omni_cli.spec import SpeakRequest

FPS = 3.0  # the checkpoint's video rate here: a grid step is 2 / 3 s, so time positions are 0, 16, 33 (not 0, 25, 50)


@pytest.fixture(scope="module")
def watching(tiny_checkpoint, tmp_path_factory):
    """The tiny checkpoint with room for a video's positions (the processor sizes a frame to at least 128 x 28 x 28
    pixels: 512 patches a grid step at merge size 1) and a video processor file that states its rate."""
    path = tmp_path_factory.mktemp("watch") / "ckpt"
    shutil.copytree(tiny_checkpoint, path)
    config = json.loads((path / "config.json").read_text())
    config["thinker_config"]["text_config"]["max_position_embeddings"] = 4096
    config["talker_config"]["max_position_embeddings"] = 4096  # the talker reads the whole prompt too
    (path / "config.json").write_text(json.dumps(config))
    (path / "video_preprocessor_config.json").write_text(json.dumps({"fps": FPS}))
    card = greedy_card(path.parent, "greedy_watch", thinker_max=12, talker_max=24)
    return load(str(card), "chat", settings={"model_path": str(path)})


@pytest.fixture(scope="module")
def video(tmp_path_factory) -> SeenVideo:
    """9 frames at 4 a second written by PyAV and read back: 3 frames a second sample 6 of them, 3 grid steps."""
    import av

    path = tmp_path_factory.mktemp("clip") / "clip.mp4"
    with av.open(str(path), "w") as container:
        stream = container.add_stream("mpeg4", rate=4)
        stream.width, stream.height, stream.pix_fmt = 64, 48, "yuv420p"
        y, x = np.mgrid[0:48, 0:64]
        for i in range(9):
            rgb = np.stack([(x * 4 + i * 20) % 256, (y * 5) % 256, ((x + y) * 3 + i * 40) % 256], axis=-1)
            for packet in stream.encode(av.VideoFrame.from_ndarray(rgb.astype(np.uint8), format="rgb24")):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return read_video(str(path))


def reference(chat, video: SeenVideo, text: str):
    """The prompt ids with the video's positions, and generate's video inputs (the processor's names)."""
    thinker, eyes = chat.roles["thinker"], chat.roles["image_encoder"]
    s = eyes.video
    patches, grid = video_patches(video.frames[sampled(video.num_frames, video.fps, s)], s)
    prompt = thinker.chat_prompt([PromptTurn("user", text, 0, 0, 1)])
    assert prompt.slots == ["video"]
    ids = [*prompt.pieces[0], *[prompt.video_id] * (int(np.prod(grid)) // s.merge ** 2), *prompt.pieces[1]]
    return ids, {"pixel_values_videos": patches, "video_grid_thw": torch.tensor([grid]),
                 "video_second_per_grid": torch.tensor([s.temporal_patch / FPS])}


def test_the_video_is_sampled_at_the_checkpoints_rate_and_its_rows_are_the_towers(watching, video):
    eyes, thinker = watching.roles["image_encoder"], watching.roles["thinker"]
    assert video.num_frames == 9 and video.fps == 4.0 and eyes.video.fps == FPS
    assert sampled(9, 4.0, eyes.video) == [0, 1, 3, 4, 6, 7]  # Qwen2VLVideoProcessor.sample_frames: every 1.5th
    rows = eyes.run("image", [ImageInput(video, 0)])[0]  # one WorkUnit: the whole video
    assert rows.grid[0] == 3 and rows.seconds_per_step == pytest.approx(2 / 3)
    assert len(rows.rows) == int(np.prod(rows.grid)) == eyes.video_rows(64, 48, 9, 4.0)
    _, kwargs = reference(watching, video, "x")
    with torch.no_grad():
        theirs = thinker.module.model.get_video_features(kwargs["pixel_values_videos"],
                                                        kwargs["video_grid_thw"]).pooler_output  # one per video
    torch.testing.assert_close(rows.rows, theirs[0], rtol=0, atol=1e-6)


def test_thinker_tokens_and_positions_equal_generate(watching, video):
    """Token parity alone is weak on random weights (the tiny thinker's reply hardly depends on the video), so the
    prompt's TMRoPE positions are checked against get_rope_index's too: a wrong time step moves them."""
    ids, kwargs = reference(watching, video, "what happens?")
    model = watching.roles["thinker"].module
    with torch.no_grad():
        seq = model.generate(torch.tensor([ids]), max_new_tokens=12, do_sample=False, **kwargs)
    expected = seq[0, len(ids):].tolist()
    assert expected  # an empty reply never counts as parity
    seen, part = {}, thinker_module.HFThinker._prefill_part

    def spy(self, inp):
        out = part(self, inp)
        seen["positions"] = out.extra
        return out

    thinker_module.HFThinker._prefill_part = spy
    try:
        ours = Engine(watching).submit(SpeakRequest("what happens?", mode="chat", videos=(video,)),
                                       collect=True).result()
    finally:
        thinker_module.HFThinker._prefill_part = part
    assert ours.error is None and ours.tokens["thinker_decode"] == expected
    ids_ = torch.tensor([ids])
    positions, _ = model.get_rope_index(ids_, None, kwargs["video_grid_thw"], torch.ones_like(ids_),
                                        second_per_grids=kwargs["video_second_per_grid"])
    assert torch.equal(seen["positions"].cpu(), positions[:, 0])
    at_video = torch.tensor(ids) == watching.roles["thinker"].prompts.special_id("<|VIDEO|>")
    times = sorted(set(seen["positions"][0, at_video].tolist()))
    assert [t - times[0] for t in times] == [0, 16, 33]  # grid steps 2/3 s apart: int(i x 2/3 x 25)


def test_pixels_equal_the_image_processors_for_a_still_video(watching):
    """Without torchvision (which transformers' video processor needs), an independent check of the video
    patches: a video whose frames come in equal pairs, at a size the processor keeps, is per grid step the picture
    the image processor repeats over the temporal patch."""
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    s = watching.roles["image_encoder"].video
    rng = np.random.default_rng(0)
    stills = rng.integers(0, 256, (2, 308, 336, 3), dtype=np.uint8)  # 308 x 336: multiples of 14, over 100,352 px
    patches, grid = video_patches(np.repeat(stills, 2, axis=0), s)
    pictures = Qwen2VLImageProcessorPil(patch_size=s.patch, merge_size=s.merge, temporal_patch_size=s.temporal_patch,
                                        min_pixels=s.min_pixels, max_pixels=s.max_pixels, image_mean=list(s.mean),
                                        image_std=list(s.std))(images=list(stills), return_tensors="pt")
    assert grid == (2, 22, 24) and pictures["image_grid_thw"].tolist() == [[1, 22, 24]] * 2
    torch.testing.assert_close(patches, pictures["pixel_values"], rtol=0, atol=1e-5)


def test_pixels_equal_transformers_video_processor(watching, video):
    """Where torchvision is installed (its PyPI wheels are CUDA builds that do not import beside CPU torch, so not
    on this project's machines), the patches equal Qwen2VLVideoProcessor's as Qwen2_5OmniProcessor calls it."""
    pytest.importorskip("torchvision")
    from transformers.models.qwen2_5_omni.processing_qwen2_5_omni import Qwen2_5OmniProcessor
    from transformers.models.qwen2_vl.video_processing_qwen2_vl import Qwen2VLVideoProcessor

    s = watching.roles["image_encoder"].video
    frames = video.frames[sampled(video.num_frames, video.fps, s)]
    processor = Qwen2VLVideoProcessor(patch_size=s.patch, merge_size=s.merge, temporal_patch_size=s.temporal_patch,
                                      image_mean=list(s.mean), image_std=list(s.std))
    theirs = processor(videos=[frames], size=Qwen2_5OmniProcessor.videos_kwargs["size"], return_tensors="pt",
                       cap_pixels_per_frame=False)
    patches, grid = video_patches(frames, s)
    assert theirs["video_grid_thw"].tolist() == [list(grid)]
    torch.testing.assert_close(patches, theirs["pixel_values_videos"], rtol=0, atol=1e-6)


def test_a_frame_group_encoded_alone_is_the_whole_videos_rows_for_it(watching, video):
    """Why a video could be split by frame group (image_encode.py says why it is not yet): the tower's attention
    windows and full-attention layers stay within a grid step, so each step encoded alone gives its rows."""
    eyes = watching.roles["image_encoder"]
    s = eyes.video
    patches, (t, h, w) = video_patches(video.frames[sampled(video.num_frames, video.fps, s)], s)
    with torch.no_grad():
        whole = eyes.tower(patches, grid_thw=torch.tensor([[t, h, w]])).pooler_output
        alone = [eyes.tower(patches[g * h * w:(g + 1) * h * w], grid_thw=torch.tensor([[1, h, w]])).pooler_output
                 for g in range(t)]
    assert t == 3
    torch.testing.assert_close(torch.cat(alone), whole, rtol=0, atol=1e-6)
