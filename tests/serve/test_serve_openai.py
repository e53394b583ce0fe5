"""The official `openai` package against `omni serve`: the same audio as `omni speak`, streamed early."""

from __future__ import annotations

import io
import time

import numpy as np
import pytest
import soundfile
from serve_helpers import CARD, MEDIUM_TEXT, serve

openai = pytest.importorskip("openai")


@pytest.fixture(scope="module")
def client(server):
    with openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0, timeout=60) as c:
        yield c


def test_speech_create_gives_the_wav_omni_speak_writes(client, tmp_path):
    from typer.testing import CliRunner

    from omni_cli.cli.app import app

    text = "The quick brown fox jumps over the lazy dog."
    out = tmp_path / "speak.wav"
    result = CliRunner().invoke(app, ["speak", text, "--voice", "tenor", "--seed", "7", "-q", "-o", str(out)])
    assert result.exit_code == 0, result.output
    expected, rate = soundfile.read(out, dtype="int16")

    response = client.audio.speech.create(model=CARD, input=text, voice="tenor", response_format="wav",
                                          extra_body={"seed": 7})
    got, got_rate = soundfile.read(io.BytesIO(response.content), dtype="int16")
    assert response.response.headers["content-length"] == str(len(response.content))
    assert got_rate == rate == 24000
    assert got.size > 0 and np.array_equal(got, expected)


def test_streaming_response_sends_the_first_bytes_before_the_request_ends(client, server, solo_pcm):
    with client.audio.speech.with_streaming_response.create(
            model=CARD, input=MEDIUM_TEXT, voice="alto", response_format="pcm", stream_format="audio") as response:
        rid = response.headers["x-request-id"]
        parts = response.iter_bytes()
        first = next(parts)
        first_at_s = server.engine.now()  # the engine's clock, the one its trace uses
        body = first + b"".join(parts)
    assert body == solo_pcm(MEDIUM_TEXT, "alto")
    finished = server.trace.phase(rid, "finished")
    assert finished is not None
    # the first bytes were in the client's hands while the engine was still making the rest
    assert first_at_s < finished.t_s
    assert len(first) < len(body) // 4


def test_openai_errors_come_back_as_the_clients_exceptions(client):
    with pytest.raises(openai.NotFoundError) as missing:
        client.audio.speech.create(model="tts-1", input="Hi", voice="alto")
    assert missing.value.body["code"] == "model_not_found"
    with pytest.raises(openai.BadRequestError) as voice:
        client.audio.speech.create(model=CARD, input="Hi", voice="nova")
    assert voice.value.body["param"] == "voice" and "alto, tenor" in voice.value.body["message"]
    with pytest.raises(openai.BadRequestError) as speed:
        client.audio.speech.create(model=CARD, input="Hi", voice="alto", speed=1.5)
    assert speed.value.body["param"] == "speed" and "1.0" in speed.value.body["message"]


def test_the_api_key_is_required_on_every_route_but_health(toy):
    served = serve(toy, api_key="s3cret")
    try:
        with openai.OpenAI(base_url=served.url + "/v1", api_key="wrong", max_retries=0) as bad:
            with pytest.raises(openai.AuthenticationError) as refused:
                bad.audio.speech.create(model=CARD, input="Hi", voice="alto")
            assert refused.value.body["code"] == "invalid_api_key"
            with pytest.raises(openai.AuthenticationError):
                bad.models.list()
        with openai.OpenAI(base_url=served.url + "/v1", api_key="s3cret", max_retries=0) as good:
            assert good.audio.speech.create(model=CARD, input="Hi", voice="alto", response_format="wav").content[:4] == b"RIFF"
            assert [m.id for m in good.models.list()][0] == CARD
        import httpx

        assert httpx.get(served.url + "/health").status_code == 200
        assert httpx.get(served.url + "/metrics").status_code == 401
        assert httpx.get(served.url + "/metrics", headers={"Authorization": "Bearer s3cret"}).status_code == 200
        assert httpx.get(served.url + "/metrics", headers={"Authorization": "s3cret"}).status_code == 401
    finally:
        served.server.stop()


def test_chat_completions_with_audio_through_the_client(client, server):
    completion = client.chat.completions.create(
        model=CARD, messages=[{"role": "user", "content": "Say something."}], modalities=["text", "audio"],
        audio={"voice": "alto", "format": "wav"}, seed=3, max_tokens=12)
    audio = completion.choices[0].message.audio
    import base64

    samples, rate = soundfile.read(io.BytesIO(base64.b64decode(audio.data)), dtype="int16")
    assert rate == 24000 and samples.size > 0
    assert audio.transcript  # the thinker's reply, spoken
    assert completion.usage.completion_tokens_details.text_tokens >= 1
    assert completion.choices[0].finish_reason in ("stop", "length")


def test_chat_streaming_sends_transcript_and_audio_deltas(client, server):
    stream = client.chat.completions.create(
        model=CARD, messages=[{"role": "user", "content": "Say something."}], modalities=["text", "audio"],
        audio={"voice": "alto", "format": "pcm16"}, stream=True, seed=3, max_tokens=12,
        stream_options={"include_usage": True})
    transcript, pcm, finish, usage = [], [], None, None
    start = time.monotonic()
    for chunk in stream:
        if chunk.usage is not None:
            usage = chunk.usage
        for choice in chunk.choices:
            delta = choice.delta.model_dump()
            audio = delta.get("audio") or (choice.delta.model_extra or {}).get("audio") or {}
            if audio.get("transcript"):
                transcript.append(audio["transcript"])
            if audio.get("data"):
                import base64

                pcm.append(base64.b64decode(audio["data"]))
            finish = choice.finish_reason or finish
    assert time.monotonic() - start < 30
    assert transcript and pcm and finish in ("stop", "length") and usage is not None
    # the same request, not streamed: the same transcript and the same samples
    whole = client.chat.completions.create(
        model=CARD, messages=[{"role": "user", "content": "Say something."}], modalities=["text", "audio"],
        audio={"voice": "alto", "format": "pcm16"}, seed=3, max_tokens=12)
    import base64

    assert whole.choices[0].message.audio.transcript == "".join(transcript)
    assert base64.b64decode(whole.choices[0].message.audio.data) == b"".join(pcm)
