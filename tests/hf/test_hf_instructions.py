"""A request's `instructions` on a Qwen card: they join the thinker's system prompt, through the library and
through `omni serve` with the official `openai` client; a card without a system prompt refuses them."""

from __future__ import annotations

import pytest

from omni_cli.api import load
from omni_cli.engine import Engine
from omni_cli.spec import SpeakRequest, SpecError

pytest.importorskip("torch")
pytest.importorskip("transformers")

TEXT = "Hello there."
INSTRUCTIONS = "Speak slowly and warmly."


@pytest.fixture(scope="module")
def qwen(tiny_checkpoint):
    return load("qwen2_5_omni", settings={"model_path": str(tiny_checkpoint)})


def test_instructions_join_the_system_prompt_the_rest_of_the_prompt_unchanged(qwen):
    thinker = qwen.roles["thinker"]
    tokenizer = thinker.prompts.tokenizer
    for mode in ("echo", "chat"):
        plain = thinker.encode(TEXT, mode).prefill_ids
        told = thinker.encode(TEXT, mode, INSTRUCTIONS).prefill_ids
        assert tokenizer.decode(told) == tokenizer.decode(plain).replace(
            thinker.prompts.system_prompt, f"{thinker.prompts.system_prompt} {INSTRUCTIONS}", 1)


def test_a_card_without_a_system_prompt_refuses_instructions_naming_the_field():
    with pytest.raises(SpecError) as caught:
        Engine(load("qwen2_5_omni_toy")).submit(SpeakRequest(TEXT, instructions=INSTRUCTIONS))
    assert caught.value.issues[0].key == "instructions" and "takes no instructions" in str(caught.value)


def test_the_openai_client_sends_instructions_and_they_change_what_the_talker_hears(qwen):
    openai = pytest.importorskip("openai")
    pytest.importorskip("uvicorn")
    from omni_cli.serve.server import start_background

    served = start_background(Engine(qwen), "qwen2_5_omni")
    try:
        with openai.OpenAI(base_url=served.url + "/v1", api_key="unused", max_retries=0, timeout=120) as client:
            def speak(**extra):
                return client.audio.speech.create(model="qwen2_5_omni", input=TEXT, voice="Chelsie",
                                                  response_format="pcm", extra_body={"mode": "echo", "seed": 1},
                                                  **extra).content
            plain, told = speak(), speak(instructions=INSTRUCTIONS)
        # echo mode: the same words, spoken from the thinker's states under another system prompt
        assert plain and told and plain != told
    finally:
        served.stop()
