"""`/v1/chat/completions` hears OpenAI `input_audio` parts (base64 wav) on a server whose program listens, through
the official `openai` client against a real server on loopback; the answer equals the library's."""

from __future__ import annotations

import base64
import io

import numpy as np
import pytest
import soundfile
from serve_helpers import CARD, serve

openai = pytest.importorskip("openai")

from omni_cli.api import load  # noqa: E402
from omni_cli.audio.heard import read_wav_bytes  # noqa: E402
from omni_cli.engine import Engine  # noqa: E402
from omni_cli.spec import SpeakRequest  # noqa: E402


@pytest.fixture(scope="module")
def chat_program():
    return load(CARD, "chat")


@pytest.fixture(scope="module")
def listening(chat_program):
    served = serve(chat_program, concurrency=8, max_queue=16)
    yield served
    served.server.stop()


@pytest.fixture(scope="module")
def client(listening):
    with openai.OpenAI(base_url=listening.url + "/v1", api_key="unused", max_retries=0, timeout=60) as c:
        yield c


def question_wav(seconds: float = 1.4, rate: int = 22050) -> bytes:
    t = np.arange(int(seconds * rate)) / rate
    buf = io.BytesIO()
    soundfile.write(buf, (0.3 * np.sin(2 * np.pi * 250 * t * (1 + 0.2 * t))).astype(np.float32), rate,
                    format="WAV", subtype="PCM_16")
    return buf.getvalue()


def expected(program, wav: bytes, text: str, **request) -> tuple[str, np.ndarray]:
    result = Engine(program).submit(SpeakRequest(text, mode="chat", audio=read_wav_bytes(wav), **request),
                                    collect=True).result()
    assert result.error is None and result.samples.size
    return result.text, result.samples


def audio_part(wav: bytes) -> dict:
    return {"type": "input_audio", "input_audio": {"data": base64.b64encode(wav).decode(), "format": "wav"}}


def test_openai_client_sends_a_spoken_question(client, chat_program):
    wav = question_wav()
    reply = client.chat.completions.create(
        model=CARD, modalities=["text", "audio"], audio={"voice": "alto", "format": "wav"}, seed=3, max_tokens=6,
        messages=[{"role": "user", "content": [audio_part(wav), {"type": "text", "text": "Briefly."}]}])
    text, samples = expected(chat_program, wav, "Briefly.", seed=3, max_tokens=6)
    got, rate = soundfile.read(io.BytesIO(base64.b64decode(reply.choices[0].message.audio.data)), dtype="float32")
    assert rate == 24000 and got.size == samples.size
    assert np.max(np.abs(got - samples)) <= 1 / 32767 + 1e-6  # the same answer, through a 16-bit WAV
    assert reply.choices[0].message.audio.transcript == text


def test_audio_alone_is_a_question_and_streams(client, chat_program):
    wav = question_wav(2.2, 16000)
    stream = client.chat.completions.create(
        model=CARD, modalities=["text", "audio"], audio={"voice": "tenor", "format": "pcm16"}, stream=True,
        max_tokens=5, messages=[{"role": "user", "content": [audio_part(wav)]}])
    pcm = b""
    for chunk in stream:
        audio = chunk.choices[0].delta.model_dump().get("audio") if chunk.choices else None
        if audio and audio.get("data"):
            pcm += base64.b64decode(audio["data"])
    _, samples = expected(chat_program, wav, "", voice="tenor", max_tokens=5)
    got = np.frombuffer(pcm, "<i2").astype(np.float32) / 32767
    assert got.size == samples.size and np.max(np.abs(got - samples)) <= 2 / 32767


@pytest.mark.parametrize("part, param", [
    ({"type": "input_audio", "input_audio": {"data": "@@not base64@@", "format": "wav"}}, "data"),
    ({"type": "input_audio", "input_audio": {"data": base64.b64encode(b"not a wav").decode(), "format": "wav"}},
     "data"),
    ({"type": "input_audio", "input_audio": {"data": "", "format": "flac"}}, "format"),
])
def test_bad_audio_parts_are_400_naming_the_field(client, part, param):
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model=CARD, modalities=["text", "audio"], audio={"voice": "alto", "format": "wav"},
                                       messages=[{"role": "user", "content": [part]}])
    assert caught.value.body["param"].endswith(param)


def test_a_server_that_does_not_listen_refuses_audio(toy):
    served = serve(toy, concurrency=2, max_queue=4)  # the toy card's default program: speak
    try:
        with openai.OpenAI(base_url=served.url + "/v1", api_key="unused", max_retries=0, timeout=60) as c:
            with pytest.raises(openai.BadRequestError) as caught:
                c.chat.completions.create(model=CARD, modalities=["text", "audio"], audio={"voice": "alto", "format": "wav"},
                                          messages=[{"role": "user", "content": [audio_part(question_wav())]}])
    finally:
        served.server.stop()
    assert "does not listen" in caught.value.message
