"""`/v1/chat/completions` sees OpenAI `image_url` parts (data URLs of base64 PNG or JPEG) on a server whose program
sees, through the official `openai` client against a real server on loopback; the answer equals the library's.
A remote URL is refused with a 400 in OpenAI's error shape: the server fetches nothing."""

from __future__ import annotations

import base64
import io

import numpy as np
import pytest
import soundfile
from serve_helpers import CARD, serve
from test_serve_listen import audio_part, question_wav

openai = pytest.importorskip("openai")

from PIL import Image  # noqa: E402

from omni_cli.api import load  # noqa: E402
from omni_cli.audio.heard import read_wav_bytes  # noqa: E402
from omni_cli.audio.seen import read_image_bytes  # noqa: E402
from omni_cli.engine import Engine  # noqa: E402
from omni_cli.spec import SpeakRequest  # noqa: E402


@pytest.fixture(scope="module")
def chat_program():
    return load(CARD, "chat")


@pytest.fixture(scope="module")
def client(chat_program):
    served = serve(chat_program, concurrency=4, max_queue=8)
    with openai.OpenAI(base_url=served.url + "/v1", api_key="unused", max_retries=0, timeout=60) as c:
        yield c
    served.server.stop()


def encoded(width: int, height: int, fmt: str = "PNG", seed: int = 0) -> bytes:
    pixels = np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8)
    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, format=fmt)
    return buf.getvalue()


def image_part(raw: bytes, media: str = "image/png") -> dict:
    return {"type": "image_url", "image_url": {"url": f"data:{media};base64,{base64.b64encode(raw).decode()}"}}


def expected(program, text: str, images: list[bytes], wav: bytes | None = None, **request) -> tuple[str, np.ndarray]:
    seen = tuple(read_image_bytes(raw) for raw in images)
    result = Engine(program).submit(SpeakRequest(text, mode="chat", images=seen, **request,
                                                 audio=None if wav is None else read_wav_bytes(wav)),
                                    collect=True).result()
    assert result.error is None and result.samples.size
    return result.text, result.samples


def answer(reply) -> np.ndarray:
    got, rate = soundfile.read(io.BytesIO(base64.b64decode(reply.choices[0].message.audio.data)), dtype="float32")
    assert rate == 24000
    return got


def test_openai_client_sends_pictures_audio_and_text(client, chat_program):
    png, jpeg, wav = encoded(40, 30, "PNG", 1), encoded(24, 56, "JPEG", 2), question_wav()
    reply = client.chat.completions.create(
        model=CARD, modalities=["text", "audio"], audio={"voice": "alto", "format": "wav"}, seed=3, max_tokens=6,
        messages=[{"role": "user", "content": [image_part(png), image_part(jpeg, "image/jpeg"), audio_part(wav),
                                               {"type": "text", "text": "What is this?"}]}])
    text, samples = expected(chat_program, "What is this?", [png, jpeg], wav, seed=3, max_tokens=6)
    got = answer(reply)
    assert got.size == samples.size and np.max(np.abs(got - samples)) <= 1 / 32767 + 1e-6  # through 16-bit WAV
    assert reply.choices[0].message.audio.transcript == text
    _, unseen = expected(chat_program, "What is this?", [], wav, seed=3, max_tokens=6)
    assert unseen.size != samples.size or not np.array_equal(unseen, samples)  # the pictures were seen


def test_a_picture_alone_is_a_question(client, chat_program):
    png = encoded(33, 17, "PNG", 4)
    reply = client.chat.completions.create(
        model=CARD, modalities=["text", "audio"], audio={"voice": "tenor", "format": "wav"}, max_tokens=5,
        messages=[{"role": "user", "content": [image_part(png)]}])
    _, samples = expected(chat_program, "", [png], voice="tenor", max_tokens=5)
    assert answer(reply).size == samples.size


@pytest.mark.parametrize("url, says", [
    ("https://example.com/cat.png", "remote image URLs are not fetched"),
    ("data:image/png;base64,@@not base64@@", "is not base64"),
    ("data:image/png;base64," + base64.b64encode(b"not a picture").decode(), "not a PNG or JPEG image"),
    ("data:image/gif;base64,R0lGODlh", "PNG and JPEG are read"),
    ("file:///etc/passwd", "expected a data URL"),
])
def test_bad_image_parts_are_400_naming_the_field(client, url, says):
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model=CARD, modalities=["text", "audio"], audio={"voice": "alto", "format": "wav"},
                                       messages=[{"role": "user", "content": [
                                           {"type": "image_url", "image_url": {"url": url}}]}])
    assert caught.value.status_code == 400 and says in caught.value.message
    assert caught.value.body["param"] == "messages[0].content[0].image_url.url"


def test_a_server_that_does_not_see_refuses_pictures(toy):
    served = serve(toy, concurrency=2, max_queue=4)  # the toy card's default program: speak
    try:
        with openai.OpenAI(base_url=served.url + "/v1", api_key="unused", max_retries=0, timeout=60) as c:
            with pytest.raises(openai.BadRequestError) as caught:
                c.chat.completions.create(model=CARD, modalities=["text", "audio"], audio={"voice": "alto", "format": "wav"},
                                          messages=[{"role": "user", "content": [image_part(encoded(8, 8))]}])
    finally:
        served.server.stop()
    assert "does not see" in caught.value.message
