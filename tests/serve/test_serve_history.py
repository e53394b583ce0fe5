"""`/v1/chat/completions` hears the whole conversation in `messages`, through the official `openai` client against a
real server on loopback: earlier messages are the request's history, and the answer equals the library's given it."""

from __future__ import annotations

import base64
import io

import numpy as np
import pytest
import soundfile
from serve_helpers import CARD, serve
from test_serve_listen import audio_part, question_wav
from test_serve_see import encoded, image_part

openai = pytest.importorskip("openai")

from omni_cli.api import load  # noqa: E402
from omni_cli.audio.heard import read_wav_bytes  # noqa: E402
from omni_cli.audio.seen import read_image_bytes  # noqa: E402
from omni_cli.engine import Engine  # noqa: E402
from omni_cli.serve.messages import MAX_TURNS  # noqa: E402
from omni_cli.spec import PriorTurn, SpeakRequest  # noqa: E402

ASK = {"model": CARD, "modalities": ["text", "audio"], "audio": {"voice": "alto", "format": "wav"}, "seed": 5,
       "max_tokens": 6}


@pytest.fixture(scope="module")
def chat_program():
    return load(CARD, "chat")


@pytest.fixture(scope="module")
def client(chat_program):
    served = serve(chat_program, concurrency=4, max_queue=8)
    with openai.OpenAI(base_url=served.url + "/v1", api_key="unused", max_retries=0, timeout=60) as c:
        yield c
    served.server.stop()


def library(program, text: str, history: tuple) -> tuple[str, np.ndarray]:
    result = Engine(program).submit(SpeakRequest(text, mode="chat", voice="alto", seed=5, max_tokens=6,
                                                 history=history), collect=True).result()
    assert result.error is None and result.samples.size
    return result.text, result.samples


def answer(reply) -> tuple[str, np.ndarray]:
    samples, rate = soundfile.read(io.BytesIO(base64.b64decode(reply.choices[0].message.audio.data)), dtype="float32")
    assert rate == 24000
    return reply.choices[0].message.audio.transcript, samples


def same(got: tuple[str, np.ndarray], want: tuple[str, np.ndarray]) -> bool:
    return (got[0] == want[0] and got[1].size == want[1].size
            and bool(np.max(np.abs(got[1] - want[1])) <= 1 / 32767 + 1e-6))  # the same answer, through a 16-bit WAV


def test_a_two_turn_conversation_is_answered_as_the_library_answers_its_history(client, chat_program):
    wav, png = question_wav(), encoded(20, 14)
    messages = [{"role": "system", "content": "Be brief."},
                {"role": "user", "content": [image_part(png), audio_part(wav), {"type": "text", "text": "What?"}]},
                {"role": "assistant", "content": "A tone."},
                {"role": "user", "content": "And then?"}]
    got = answer(client.chat.completions.create(messages=messages, **ASK))
    history = (PriorTurn("user", "What?", (read_wav_bytes(wav),), (read_image_bytes(png),)),
               PriorTurn("assistant", "A tone."))
    assert same(got, library(chat_program, "And then?", history))
    assert not same(got, library(chat_program, "And then?", ()))  # the history was heard, not dropped


def test_an_assistant_turn_by_its_transcript(client, chat_program):
    messages = [{"role": "user", "content": "Hi."},
                {"role": "assistant", "audio": {"id": "audio-kept-elsewhere", "transcript": "Hello there."}},
                {"role": "user", "content": [{"type": "text", "text": "Again."}]}]
    got = answer(client.chat.completions.create(messages=messages, **ASK))
    history = (PriorTurn("user", "Hi."), PriorTurn("assistant", "Hello there."))
    assert same(got, library(chat_program, "Again.", history))


@pytest.mark.parametrize("messages, param", [
    ([{"role": "user", "content": [audio_part(b"not a wav")]}, {"role": "assistant", "content": "Yes."},
      {"role": "user", "content": "Go on."}], "messages[0].content[0].input_audio.data"),
    ([{"role": "user", "content": "Hi."}, {"role": "assistant", "audio": {"id": "audio-abc"}},
      {"role": "user", "content": "Go on."}], "messages[1].audio.id"),
    ([{"role": "user", "content": "Hi."}, {"role": "assistant", "content": [audio_part(question_wav())]},
      {"role": "user", "content": "Go on."}], "messages[1].content[0]"),
    ([{"role": "user", "content": " "}, {"role": "user", "content": "Go on."}], "messages[0].content"),
    ([{"role": "user", "content": "Hi.", "audio": {"id": "x"}}, {"role": "user", "content": "Go on."}],
     "messages[0].audio"),
    ([{"role": "user", "content": "Hi."}, {"role": "assistant", "content": "Hello."}], "messages[1].role"),
    ([{"role": "user", "content": "Hi."}, {"role": "assistant", "content": "Hello."}] * (MAX_TURNS // 2 + 1)
     + [{"role": "user", "content": "Go on."}], "messages"),
    ([{"role": "user", "content": "word " * 300}, {"role": "assistant", "content": "word " * 300},
      {"role": "user", "content": "Go on."}], "messages"),
])
def test_a_bad_earlier_message_is_a_400_naming_it(client, messages, param):
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(messages=messages, **ASK)
    assert caught.value.status_code == 400 and caught.value.body["param"] == param
    assert caught.value.message  # one line, OpenAI's error shape


def test_a_server_that_does_not_listen_names_the_messages(toy):
    served = serve(toy, concurrency=2, max_queue=4)  # the toy card's default program: speak
    try:
        with openai.OpenAI(base_url=served.url + "/v1", api_key="unused", max_retries=0, timeout=60) as c:
            with pytest.raises(openai.BadRequestError) as caught:
                c.chat.completions.create(messages=[{"role": "user", "content": "Hi."},
                                                    {"role": "assistant", "content": "Hello."},
                                                    {"role": "user", "content": "Go on."}], **ASK)
    finally:
        served.server.stop()
    assert caught.value.body["param"] == "messages" and "does not listen" in caught.value.message
