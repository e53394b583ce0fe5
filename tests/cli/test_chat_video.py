"""`omni chat --video FILE`: a video the toy card watches (one WorkUnit, its frames sampled and grouped); a file
that is not a video, a directory, a cut-short file and a video of no frames are one line and exit 2."""

from __future__ import annotations

import json

import numpy as np
import pytest
from cli_helpers import read_wav, stderr_lines

TOY = "qwen2_5_omni_toy"


def save_video(path, frames: int, width: int = 48, height: int = 32, rate: int = 4, fmt: str | None = None) -> None:
    """A small MPEG-4 video written by PyAV: `frames` frames of a moving pattern (none: a stream with no frames)."""
    import av

    with av.open(str(path), "w", format=fmt) as container:
        stream = container.add_stream("mpeg4", rate=rate)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        y, x = np.mgrid[0:height, 0:width]
        for i in range(frames):
            rgb = np.stack([(x * 5 + i * 30) % 256, (y * 7) % 256, ((x + y) * 3 + i * 50) % 256], axis=-1)
            for packet in stream.encode(av.VideoFrame.from_ndarray(rgb.astype(np.uint8), format="rgb24")):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
        if not frames:
            container.start_encoding()  # the header alone: PyAV writes nothing until a packet otherwise


def expected_answer(home, text: str, video: str, **request) -> np.ndarray:
    from omni_cli.api import load
    from omni_cli.audio import float_to_pcm16
    from omni_cli.audio.watched import read_video
    from omni_cli.engine import Engine
    from omni_cli.spec import SpeakRequest

    result = Engine(load(TOY, "chat")).submit(
        SpeakRequest(text, mode="chat", videos=(read_video(str(home / video)),), **request), collect=True).result()
    assert result.error is None and result.samples.size
    return float_to_pcm16(result.samples)


def test_chat_watches_a_video(omni, home):
    save_video(home / "clip.mp4", 9)
    result = omni("chat", "-c", TOY, "--video", "clip.mp4", "What happens?", "-o", "out.wav", "--max-tokens", "5",
                  "--allow-truncation", "--json")
    assert result.exit_code == 0, result.stderr
    record = json.loads(result.stdout)
    assert record["work_units"]["image_encode"] == 1  # one WorkUnit per video
    _, samples = read_wav(home / "out.wav")
    assert np.array_equal(samples, expected_answer(home, "What happens?", "clip.mp4", max_tokens=5))


def test_the_toy_samples_at_its_rate_and_groups_frames():
    """9 frames at 4 a second are 2.25 s: 2 frames a second sample 4 (a multiple of the temporal patch, 2), which
    make 2 grid steps of the picture grid; each step is 1 s (temporal patch / rate)."""
    from omni_cli.api import load
    from omni_cli.audio.watched import SeenVideo
    from omni_cli.backends.base import ImageInput

    eyes = load(TOY, "chat").roles["image_encoder"]
    frames = np.random.default_rng(0).integers(0, 256, (9, 32, 48, 3), dtype=np.uint8)
    video = SeenVideo(frames, 4.0, "clip")
    assert eyes.sampled(9, 4.0) == [0, 2, 4, 6]
    rows = eyes.run("image", [ImageInput(video, 0)])[0]
    _, h, w = eyes.rows_for(48, 32)
    assert rows.grid == (2, h, w) and len(rows.rows) == 2 * h * w == eyes.video_rows(48, 32, 9, 4.0)
    assert rows.seconds_per_step == 1.0
    first = eyes.encode(np.rint((frames[0].astype(np.float32) + frames[2]) / 2).astype(np.uint8)).rows
    np.testing.assert_array_equal(rows.rows[:h * w], first)  # step 0: sampled frames 0 and 2, averaged


@pytest.mark.parametrize("make, says", [
    (None, "no.mp4: no such file"),
    ("text", "not a readable video"),
    ("directory", "is a directory"),
    ("truncated", "no.mp4: "),
    ("empty", "no frames"),
])
def test_a_bad_video_is_one_line_exit_2(omni, home, make, says):
    target = home / "no.mp4"
    if make == "text":
        target.write_bytes(b"not a video at all")
    elif make == "directory":
        target.mkdir()
    elif make == "truncated":  # a real video cut to its first 200 bytes
        save_video(home / "whole.mp4", 6)
        target.write_bytes((home / "whole.mp4").read_bytes()[:200])
    elif make == "empty":  # a video stream with no frame in it
        save_video(target, 0, fmt="avi")  # MP4 drops a track with no samples; AVI keeps it
    result = omni("chat", "-c", TOY, "--video", "no.mp4", "hi", "-o", "out.wav")
    assert result.exit_code == 2
    lines = stderr_lines(result.stderr)
    assert len(lines) == 1 and lines[0].startswith("omni: error: --video: ") and says in lines[0], lines
    assert not (home / "out.wav").exists()


def test_video_with_history_is_refused(omni, home):
    save_video(home / "clip.mp4", 4)
    result = omni("chat", "-c", TOY, "--video", "clip.mp4", "hi", "--history", "talk.jsonl", "-o", "out.wav")
    assert result.exit_code == 2
    assert stderr_lines(result.stderr) == ["omni: error: --video with --history: a conversation does not keep "
                                           "videos yet"]
