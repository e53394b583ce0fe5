"""Node ops of a sentence cascade (a VITS voice): the hand-offs between its loops and the sentence text."""

from __future__ import annotations

from typing import Any

from ..backends.sentence_types import SentenceFrames, SentencePhonemes
from ..loops.channel import Channel
from ..loops.sentences import SentenceFeed
from ..spec import SpecError, SpecIssue, clean_text
from ..spec.stream import Notice, TextPiece
from .ops import RequestContext, _op


@_op("check_text", reads=("text",), makes="clean_text")
def check_text(ctx: RequestContext, inputs: list[Any], mode: str) -> str:
    """The request's text, control characters dropped; empty text, text over the card's limit and text with
    nothing the phonemizer can read (punctuation only, another script) are refused before anything runs."""
    text = clean_text(inputs[0], ctx.card.limits.max_text_chars)
    why = ctx.roles["phonemizer"].unreadable(text)
    if why is not None:
        raise SpecError([SpecIssue("<request>", None, "text", why)])
    return text


@_op("phonemes_to_frames", reads=("phoneme_stream",), makes="phoneme_feed", handoff=True)
def phonemes_to_frames(ctx: RequestContext, inputs: list[Any], mode: str) -> SentenceFeed[SentencePhonemes]:
    """Each sentence's phoneme ids to the acoustic model, as soon as it is phonemised (stream) or all at once."""
    return SentenceFeed(inputs[0], mode)


@_op("frames_to_vocoder", reads=("frame_stream",), makes="frame_feed", handoff=True)
def frames_to_vocoder(ctx: RequestContext, inputs: list[Any], mode: str) -> SentenceFeed[SentenceFrames]:
    """Each sentence's latent frames to the decoder, as soon as they are made (stream) or all at once."""
    return SentenceFeed(inputs[0], mode)


@_op("emit_sentences", reads=("phoneme_stream",), makes=None)
def emit_sentences(ctx: RequestContext, inputs: list[Any], mode: str) -> None:
    """Stream each sentence's text as read (numbers spelled out); warn once about unreadable characters."""
    channel: Channel[SentencePhonemes] = inputs[0]

    def on_sentence(item: SentencePhonemes | None) -> None:
        if item is None:
            return
        if item.dropped:
            ctx.emit(Notice(ctx.request_id, f"dropped characters the phonemizer cannot read: {item.dropped}"))
        ctx.emit(TextPiece(ctx.request_id, item.text if item.index == 0 else " " + item.text))

    channel.listen(on_sentence)
