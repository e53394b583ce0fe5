"""The WebSocket stream's session.config: vllm-omni's fields, each honoured, ignored with a warning, or refused.

| field | here |
|---|---|
| model, voice (or speaker), response_format, stream_audio, seed, split_granularity | honoured |
| speed, instructions | honoured where the card can (as POST /v1/audio/speech), else refused naming the field |
| task_type | CustomVoice (a named voice, what every card here has) honoured; VoiceDesign and Base refused |
| word_timestamps | false honoured; true refused (this server has no forced aligner) |
| ref_audio, ref_text, references, speaker_embedding, x_vector_only_mode | refused: no voice cloning here |
| initial_codec_chunk_frames | ignored with a warning: the scheduler sizes first chunks for early audio itself |
| non_streaming_mode | ignored with a warning: a Qwen3-TTS prompt mode; no card here has one |
| language | ignored with a warning: a card speaks its voice's language |
| max_new_tokens | ignored with a warning: a cap on codec tokens; this server caps text tokens with max_tokens |

Ours on top: mode, max_tokens, sample_rate. A field set to null is the same as a field left out.
"""

from __future__ import annotations

from typing import Any

from ..spec import SpeakRequest
from .bodies import STREAMABLE, check_common, check_delivery, check_fields, check_model, check_voice, get
from .clauses import GRANULARITIES, ClauseSplitter
from .errors import ApiError, bad_request

HONOURED = {"type", "model", "voice", "speaker", "response_format", "split_granularity", "stream_audio", "seed",
            "mode", "max_tokens", "speed", "instructions", "sample_rate", "task_type", "word_timestamps"}
IGNORED = {
    "initial_codec_chunk_frames": "the scheduler sizes a request's first audio chunks itself",
    "non_streaming_mode": "it is a Qwen3-TTS prompt mode, and this card has none",
    "language": "the card speaks its voice's language",
    "max_new_tokens": "it caps codec tokens in vllm-omni; this server caps the text with max_tokens",
}
CLONING = ("ref_audio", "ref_text", "references", "speaker_embedding", "x_vector_only_mode")


class StreamConfig:
    """A checked session.config: how each piece is requested and sent, and the warnings for ignored fields."""

    def __init__(self, ctx, msg: dict[str, Any]) -> None:
        check_fields(msg, HONOURED | set(IGNORED) | set(CLONING))
        # (field, message) per field set that this server ignores
        self.warnings = [(name, f"{name!r} is ignored: {why}") for name, why in IGNORED.items()
                         if msg.get(name) is not None]
        _refuse_unsupported(msg)
        model = get(msg, "model", str)
        if model is not None:
            check_model(ctx.info, model)
        voice_key = "speaker" if msg.get("voice") is None and msg.get("speaker") is not None else "voice"
        self.voice = check_voice(ctx.info, msg.get(voice_key), voice_key)
        self.speed, self.instructions, self.sample_rate = check_delivery(ctx.info, msg)
        self.format = get(msg, "response_format", str, "pcm")
        reason = _can_write(ctx, self.format, self.sample_rate) if self.format in STREAMABLE else \
            "it cannot be streamed"
        if reason is not None:
            raise ApiError(400, f"response_format {self.format!r}: {reason} (stream {', '.join(STREAMABLE)})",
                           param="response_format", code="unsupported_value")
        granularity = get(msg, "split_granularity", str, "sentence")
        if granularity not in GRANULARITIES:
            raise bad_request(f"unknown split_granularity {granularity!r} (supported: {', '.join(GRANULARITIES)})",
                              "split_granularity")
        self.splitter = ClauseSplitter(granularity, ctx.info.max_text_chars)
        self.stream_audio = get(msg, "stream_audio", bool, True)  # False: one binary frame per piece, at its end
        self.mode = get(msg, "mode", str)
        if self.mode not in (None, "echo", "chat"):
            raise bad_request(f"unknown mode {self.mode!r} (echo: speak the input; chat: speak a reply to it)", "mode")
        self.common = check_common(ctx.info, msg, "x")  # seed, max_tokens; each piece's length is checked apart

    def request(self, text: str) -> SpeakRequest:
        return SpeakRequest(text, mode=self.mode, voice=self.voice, speed=self.speed,
                            instructions=self.instructions, **self.common)


def _refuse_unsupported(msg: dict[str, Any]) -> None:
    for name in CLONING:
        if msg.get(name) not in (None, False):
            raise bad_request(f"{name!r} is not supported: this server speaks the card's own voices and cannot "
                              "clone one; leave it out and pick a voice", name, "unsupported_parameter")
    task_type = get(msg, "task_type", str)
    if task_type not in (None, "CustomVoice"):
        raise bad_request(f"task_type {task_type!r} is not supported: this server speaks the card's named voices "
                          "(CustomVoice)", "task_type", "unsupported_value")
    if get(msg, "word_timestamps", bool, False):
        raise bad_request("word_timestamps true is not supported: this server has no forced aligner; leave it out",
                          "word_timestamps", "unsupported_value")


def _can_write(ctx, fmt: str, sample_rate: int | None) -> str | None:
    from .speech import can_write

    return can_write(ctx, fmt, sample_rate)
