"""Odd JSON, generated: whatever bytes a client sends, the answer is never a 5xx, and a 4xx is OpenAI-shaped."""

from __future__ import annotations

import json

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from serve_helpers import CARD

SPEECH_FIELDS = ["model", "input", "voice", "response_format", "speed", "instructions", "stream_format", "stream",
                 "seed", "mode", "max_tokens", "sample_rate"]
CHAT_FIELDS = ["model", "messages", "modalities", "audio", "stream", "stream_options", "seed", "max_tokens",
               "max_completion_tokens", "n", "user", "role", "content", "type", "text", "voice", "format", "id"]

# JSON text written directly, so it can hold what json.dumps never writes: integers past Python's int-str
# limit, NaN, 1e999, lone surrogate escapes, nesting past the decoder's recursion limit
ODD_LEAVES = st.one_of(
    st.sampled_from(["null", "true", "false", "NaN", "-Infinity", "1e999", "-0", "0.5", "4.0", "2", "24000",
                     '""', '" "', '"\\ud800"', '"\\u0000"', '"wav"', '"pcm"', '"sse"', '"audio"', '"alto"', '"text"',
                     f'"{CARD}"', '"user"', '"Hello there."', '{"id": "alto"}', '["text", "audio"]']),
    st.integers(-2**70, 2**70).map(str),
    st.integers(30, 6000).map(lambda n: "9" * n),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.text(max_size=20).map(json.dumps),
    st.integers(10, 3000).map(lambda n: "[" * n + "]" * n),
    st.integers(10, 3000).map(lambda n: '{"a":' * n + "1" + "}" * n),
)


def _objects(keys):
    def build(children):
        arrays = st.lists(children, max_size=4).map(lambda xs: "[" + ",".join(xs) + "]")
        objects = st.dictionaries(keys, children, max_size=5).map(
            lambda d: "{" + ",".join(f"{json.dumps(k)}:{v}" for k, v in d.items()) + "}")
        return arrays | objects
    return st.recursive(ODD_LEAVES, build, max_leaves=12)


def _body(fields):
    keys = st.sampled_from(fields) | st.text(max_size=8)
    valid = {"model": json.dumps(CARD), "input": '"Hi."', "messages": '[{"role": "user", "content": "Hi."}]',
             "modalities": '["text", "audio"]', "audio": '{"voice": "alto", "format": "wav"}'}
    # most keys a real one, each value odd; the required ones often valid, so checks past them are reached
    pairs = st.dictionaries(keys, _objects(keys), max_size=6)
    base = st.fixed_dictionaries({}, optional={k: st.just(v) for k, v in valid.items() if k in fields})
    if "messages" in fields:  # a body that passes every check runs: a short reply keeps the test fast
        base = base.map(lambda b: {"max_completion_tokens": "2", **b})
    return st.tuples(base, pairs).map(
        lambda bp: ("{" + ",".join(f"{json.dumps(k)}:{v}" for k, v in {**bp[0], **bp[1]}.items()) + "}").encode())


ANY_BYTES = st.binary(max_size=64) | _objects(st.text(max_size=4)).map(str.encode)


@pytest.fixture(scope="module")
def http(server):
    with httpx.Client(base_url=server.url, timeout=60) as client:
        yield client


def _answer_is_sound(response: httpx.Response) -> None:
    assert response.status_code < 500, response.text[:300]
    if response.status_code >= 400:
        error = response.json()["error"]
        assert set(error) == {"message", "type", "param", "code"} and "\n" not in error["message"]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(raw=_body(SPEECH_FIELDS) | ANY_BYTES)
def test_no_speech_body_is_a_5xx(http, raw):
    _answer_is_sound(http.post("/v1/audio/speech", content=raw))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(raw=_body(CHAT_FIELDS) | ANY_BYTES)
def test_no_chat_body_is_a_5xx(http, raw):
    _answer_is_sound(http.post("/v1/chat/completions", content=raw))


@pytest.mark.parametrize("raw,code", [
    (b'{"model": "%s", "input": "Hi", "seed": %s}' % (CARD.encode(), b"9" * 5000), "invalid_json"),
    (b'{"model": "%s", "input": "Hi", "x": %s}' % (CARD.encode(), b"[" * 5000 + b"]" * 5000), "invalid_json"),
    (b'{"model": "%s", "input": "Hi \\ud800"}' % CARD.encode(), "invalid_json"),
    (b'{"model": "%s", "input": "Hi", "speed": NaN}' % CARD.encode(), "invalid_json"),
    (b'{"model": "%s", "input": "Hi", "speed": 1e999}' % CARD.encode(), "invalid_json"),
    (b'{"model": "%s", "input": "\xff"}' % CARD.encode(), "invalid_json"),
])
def test_the_reported_bodies_are_400(http, raw, code):
    r = http.post("/v1/audio/speech", content=raw)
    assert r.status_code == 400 and r.json()["error"]["code"] == code, r.text[:300]


def test_a_chat_whose_parts_mix_types_is_400_naming_the_part(http):
    body = {"model": CARD, "modalities": ["text", 1], "audio": {"voice": "alto"},
            "messages": [{"role": "user", "content": "Hi"}]}
    r = http.post("/v1/chat/completions", json=body)
    assert r.status_code == 400 and r.json()["error"]["param"] == "modalities[1]", r.text
