"""The speech API's request fields through the official `openai` client: speed, instructions, the voices,
and a per-request sample_rate."""

from __future__ import annotations

import base64
import io
import json

import numpy as np
import pytest
import soundfile
from serve_helpers import CARD, serve

from omni_cli.api import load
from omni_cli.audio.encode import pcm16_bytes
from omni_cli.audio.resample import resample
from omni_cli.engine import Engine
from omni_cli.spec import SpeakRequest

openai = pytest.importorskip("openai")
TEXT = "Speech at the rate the client asks for."
SHORT = "Quick now."  # the voice's syntheses: a few words keep them short


def _client(url: str):
    return openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0, timeout=60)


@pytest.fixture(scope="module")
def client(server):
    with _client(server.url) as c:
        yield c


@pytest.fixture(scope="module")
def voice():
    """A server on the Piper voice card, whose sentence voice has a length scale."""
    program = load("piper_joe")
    served = serve(program)
    with _client(served.url) as c:
        yield c, program
    served.server.stop()


def _wav(response) -> tuple[np.ndarray, int]:
    samples, rate = soundfile.read(io.BytesIO(response.content), dtype="int16")
    return samples, rate


def _bad_request(call) -> dict:
    with pytest.raises(openai.BadRequestError) as caught:
        call()
    return caught.value.body


@pytest.mark.slow
def test_speed_on_the_voice_is_its_length_scale_as_omni_speak_does(voice):
    client, program = voice
    fast = client.audio.speech.create(model="piper_joe", input=SHORT, voice="joe", speed=1.5, response_format="wav")
    plain = client.audio.speech.create(model="piper_joe", input=SHORT, voice="joe", response_format="wav")
    fast_samples, rate = _wav(fast)
    plain_samples, _ = _wav(plain)
    alone = Engine(program).submit(SpeakRequest(SHORT, voice="joe", speed=1.5), collect=True).result()
    assert pcm16_bytes(alone.samples) == fast_samples.tobytes()  # the engine's own speed, not a resampled copy
    assert rate == program.card.sample_rate and fast_samples.size < 0.8 * plain_samples.size


def test_speed_outside_the_range_is_a_400_naming_it(voice):
    client, _ = voice
    body = _bad_request(lambda: client.audio.speech.create(model="piper_joe", input=SHORT, voice="joe", speed=8.0))
    assert body["param"] == "speed" and "between 0.25 and 4" in body["message"]


def test_speed_where_the_card_has_no_speed_control_is_a_400_saying_so(client):
    body = _bad_request(lambda: client.audio.speech.create(model=CARD, input=TEXT, voice="alto", speed=2.0))
    assert body["param"] == "speed" and "no speed control" in body["message"]
    same = client.audio.speech.create(model=CARD, input=TEXT, voice="alto", speed=1.0, response_format="wav")
    assert _wav(same)[0].size > 0  # 1.0 is the default: accepted everywhere


def test_instructions_are_refused_with_the_reason(client):
    body = _bad_request(lambda: client.audio.speech.create(model=CARD, input=TEXT, voice="alto",
                                                           instructions="Speak like a pirate."))
    assert body["param"] == "instructions" and body["code"] == "unsupported_parameter"


def test_the_voices_route_lists_the_cards_voices(client, voice):
    listed = client.get("/audio/voices", cast_to=object)
    assert listed["voices"] == ["alto", "tenor"] and [v["id"] for v in listed["data"]] == ["alto", "tenor"]
    piper_client, program = voice
    assert piper_client.get("/audio/voices", cast_to=object)["voices"] == program.voices()


def test_sample_rate_resamples_the_whole_file_and_the_stream_alike(client, solo_pcm):
    whole = client.audio.speech.create(model=CARD, input=TEXT, voice="alto", response_format="wav",
                                       extra_body={"sample_rate": 16000})
    samples, rate = _wav(whole)
    card_rate = np.frombuffer(solo_pcm(TEXT, "alto"), np.int16).astype(np.float32) / 32767
    expected = np.frombuffer(pcm16_bytes(resample(card_rate, 24000, 16000)), np.int16)
    assert rate == 16000 and samples.size == expected.size
    assert np.abs(samples.astype(np.int32) - expected).max() <= 1  # one int16 step from the rounding
    with client.audio.speech.with_streaming_response.create(
            model=CARD, input=TEXT, voice="alto", response_format="pcm", stream_format="audio",
            extra_body={"sample_rate": 16000}) as streamed:
        assert streamed.read() == samples.tobytes()  # chunk by chunk, the same samples as the whole file
    events = client.audio.speech.create(model=CARD, input=TEXT, voice="alto", response_format="pcm",
                                        stream_format="sse", extra_body={"sample_rate": 16000}).text
    deltas = [json.loads(block[6:]) for block in events.split("\n\n") if block.startswith("data: ")]
    assert deltas[-1]["type"] == "speech.audio.done"
    assert b"".join(base64.b64decode(d["audio"]) for d in deltas[:-1]) == samples.tobytes()


@pytest.mark.parametrize("rate", [4000, 96000, 16000.5, "16000"])
def test_a_sample_rate_out_of_range_or_not_an_integer_is_a_400(client, rate):
    body = _bad_request(lambda: client.audio.speech.create(model=CARD, input=TEXT, voice="alto",
                                                           extra_body={"sample_rate": rate}))
    assert body["param"] == "sample_rate"
