"""The hf card continues a conversation: the earlier turns (a heard clip, a reply) and a new heard turn give the
thinker ids generate gives for the chat template's rendering of the whole conversation with both clips' features;
a clip heard in an earlier request is published again, not encoded again, with the same reply."""

from __future__ import annotations

import numpy as np
import torch
from test_hf_listen import chat, clip, features, streamed  # noqa: F401 - fixtures

from omni_cli.audio.source import AudioSource
from omni_cli.engine import Engine
from omni_cli.spec import PriorTurn, SpeakRequest

RATE = 16000


def reference_ids(thinker, first_rows: int, second_rows: int) -> list[int]:
    """The processor's rendering of the conversation, typed out (its audio parts widened to their rows) and
    tokenized at once, as the processor tokenizes it."""
    system = thinker.prompts.system_prompt
    text = (f"<|im_start|>system\n{system}<|im_end|>\n"
            f"<|im_start|>user\n<|audio_bos|>{'<|AUDIO|>' * first_rows}<|audio_eos|>what is it?<|im_end|>\n"
            "<|im_start|>assistant\nA tone.<|im_end|>\n"
            f"<|im_start|>user\n<|audio_bos|>{'<|AUDIO|>' * second_rows}<|audio_eos|>and this?<|im_end|>\n"
            "<|im_start|>assistant\n")
    return thinker.prompts.tokenizer(text, add_special_tokens=False)["input_ids"]


def generate_reply(chat, features, clips: list[np.ndarray], max_new: int = 10) -> list[int]:  # noqa: F811
    thinker, encoder = chat.roles["thinker"], chat.roles["audio_encoder"]
    feats = features(clips)  # both clips through Whisper's feature extractor, each floored at its own maximum
    ids = reference_ids(thinker, *(encoder.tokens_for(len(c)) for c in clips))
    with torch.no_grad():
        seq = thinker.module.generate(torch.tensor([ids]), input_features=feats["input_features"],
                                      feature_attention_mask=feats["attention_mask"], max_new_tokens=max_new,
                                      do_sample=False)
    return seq[0, len(ids):].tolist()


def test_a_conversation_equals_generate_on_the_templates_rendering(chat, features):  # noqa: F811
    first, second = clip(4.57, 1), clip(2.3, 2)
    expected = generate_reply(chat, features, [first, second])
    assert expected  # an empty reply never counts as parity
    history = (PriorTurn("user", "what is it?", (AudioSource.whole(first, RATE),)), PriorTurn("assistant", "A tone."))
    request = SpeakRequest("and this?", mode="chat", max_tokens=10, history=history, audio=streamed(second))
    engine = Engine(chat, max_batch=8)
    handles = [engine.submit(request, collect=True),
               engine.submit(SpeakRequest("hello there", mode="chat", max_tokens=10), collect=True)]  # beside it
    for _ in engine.events():
        pass
    ours = handles[0].result()
    assert ours.error is None and ours.tokens["thinker_decode"] == expected
    assert ours.loops["audio_encode"].outputs["clips"] == 2 and handles[1].result().error is None

    again = Engine(chat).submit(SpeakRequest("and this?", mode="chat", max_tokens=10, history=history,
                                             audio=AudioSource.whole(second, RATE)), collect=True).result()
    heard, before = again.loops["audio_encode"], ours.loops["audio_encode"]
    assert heard.outputs["clips_reused"] == 1 and 0 < heard.num_steps < before.num_steps  # the new clip's only
    assert again.tokens["thinker_decode"] == expected
