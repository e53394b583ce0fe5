"""`omni chat --image FILE` (repeatable): PNG and JPEG pictures the toy card sees, mixed with audio and text; a card
that cannot see, and a file that is not a picture, are one line and exit 2."""

from __future__ import annotations

import json

import numpy as np
import pytest
from cli_helpers import read_wav, stderr_lines
from test_chat import question

TOY = "qwen2_5_omni_toy"


def save_picture(path, width: int = 40, height: int = 30, seed: int = 0) -> None:
    from PIL import Image

    pixels = np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8)
    Image.fromarray(pixels).save(path)


def expected_answer(home, text: str, pictures: list[str], audio: str | None = None, **request) -> np.ndarray:
    from omni_cli.api import load
    from omni_cli.audio import float_to_pcm16
    from omni_cli.audio.heard import read_file
    from omni_cli.audio.seen import read_image
    from omni_cli.engine import Engine
    from omni_cli.spec import SpeakRequest

    images = tuple(read_image(str(home / p)) for p in pictures)
    result = Engine(load(TOY, "chat")).submit(
        SpeakRequest(text, mode="chat", images=images, audio=None if audio is None else read_file(str(home / audio)),
                     **request), collect=True).result()
    assert result.error is None and result.samples.size
    return float_to_pcm16(result.samples)


def test_chat_sees_pictures_with_audio_and_text(omni, home):
    save_picture(home / "a.png", seed=1)
    save_picture(home / "b.jpg", 24, 50, seed=2)
    question(home / "q.wav")
    result = omni("chat", "-c", TOY, "--image", "a.png", "-i", "b.jpg", "--audio", "q.wav", "What is it?",
                  "-o", "out.wav", "--max-tokens", "6", "--allow-truncation", "--json")
    assert result.exit_code == 0, result.stderr
    record = json.loads(result.stdout)
    assert record["work_units"]["image_encode"] == 2  # one WorkUnit per picture
    _, samples = read_wav(home / "out.wav")
    assert np.array_equal(samples, expected_answer(home, "What is it?", ["a.png", "b.jpg"], "q.wav", max_tokens=6))


def test_a_picture_alone_is_a_turn(omni, home):
    save_picture(home / "a.png", seed=3)
    result = omni("chat", "-c", TOY, "--image", "a.png", "-o", "out.wav", "--max-tokens", "5", "--allow-truncation")
    assert result.exit_code == 0, result.stderr
    _, samples = read_wav(home / "out.wav")
    assert np.array_equal(samples, expected_answer(home, "", ["a.png"], max_tokens=5))


@pytest.mark.parametrize("content, says", [
    (None, "no.png: no such file"),
    (b"not a picture at all", "not a PNG or JPEG image"),
    ("truncated", "cannot decode it"),
])
def test_a_bad_image_file_is_one_line_exit_2(omni, home, content, says):
    if content == "truncated":  # a real PNG cut in half
        save_picture(home / "whole.png", 64, 64)
        whole = (home / "whole.png").read_bytes()
        content = whole[:len(whole) // 2]
    if content is not None:
        (home / "no.png").write_bytes(content)
    result = omni("chat", "-c", TOY, "--image", "no.png", "hi", "-o", "out.wav")
    assert result.exit_code == 2
    lines = stderr_lines(result.stderr)
    assert len(lines) == 1 and lines[0].startswith("omni: error: --image: ") and says in lines[0], lines
    assert not (home / "out.wav").exists()


def test_a_card_that_cannot_see_says_so(omni, home):
    import yaml

    from omni_cli.program.catalog import resolve

    card = yaml.safe_load(resolve("cards", TOY).read_text())
    card["capabilities"].remove("see")
    del card["components"]["image_encoder"], card["loops"]["image_encode"]
    (home / "blind.yaml").write_text(yaml.safe_dump(card))
    save_picture(home / "a.png")
    result = omni("chat", "-c", "blind.yaml", "--image", "a.png", "hi")
    assert result.exit_code == 2
    assert stderr_lines(result.stderr) == ["omni: error: card 'qwen2_5_omni_toy' cannot see (it has no image encoder); pass a "
                                    "card that can, e.g. --card qwen2_5_omni_toy, or --card qwen2_5_omni --model-path DIR"]
    piper = omni("chat", "-c", "piper_joe", "--image", "a.png", "hi")  # the default voice neither listens nor sees
    assert piper.exit_code == 2 and "card 'piper_joe' cannot see" in stderr_lines(piper.stderr)[0]
