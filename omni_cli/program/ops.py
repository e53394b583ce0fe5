"""The registry of node ops a program may name: tokenize, the hand-offs, and the emitters."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from ..backends.base import ARItem, PromptTurn
from ..loops import ARChannel, AudioPiece, Channel, CodesFeed, TalkerFeed, ThinkerFeed
from ..loops.listen_feed import ListenFeed
from ..spec import CardSpec, SpeakRequest, SpecError, SpecIssue, clean_text
from ..spec.stream import AudioChunk, StreamEvent, TextPiece


@dataclass
class RequestContext:
    """What a node op sees of the request it wires."""

    request_id: str
    request: SpeakRequest
    card: CardSpec
    roles: dict[str, Any]  # component by role: thinker, talker, vocoder
    mode: str  # echo | chat
    voice: str | None
    emit: Callable[[StreamEvent], None]


@dataclass(frozen=True)
class Op:
    name: str
    fn: Callable[[RequestContext, list[Any], str], Any]
    reads: tuple[str, ...]  # the kind of value each input slot must hold (see SLOT_KINDS)
    makes: str | None  # the kind of value its output slot holds; None: no output
    is_handoff: bool = False
    carries_states: bool = False  # it hands one loop's hidden states to the next (a direct hand-off may skip the driver)
    doc: str = ""
    reads_frames: bool | None = None  # a talker hand-off: True reads multi-codebook frames, False single codes
    # the usage a client is billed: the loop whose stream this op reads counts its WorkUnits as these tokens
    counts: Literal["text_tokens", "codec_tokens"] | None = None
    optional: int = 0  # its last this many inputs may be left out (a program without that tower, say)

    @property
    def num_inputs(self) -> int:
        return len(self.reads)

    def takes_inputs(self, n: int) -> bool:
        return self.num_inputs - self.optional <= n <= self.num_inputs

    def describe_inputs(self) -> str:
        low = self.num_inputs - self.optional
        return f"{low} to {self.num_inputs}" if self.optional else str(self.num_inputs)

    @property
    def produces(self) -> bool:
        return self.makes is not None


# What a slot can hold. Ops and loops declare what they read and make, so the compiler
# refuses a mis-wired graph (say, emit_audio reading the thinker's tokens) before any request runs;
# `kind@role` also says whose value it is (graph_rules.py), so the talker's hand-off cannot read the thinker.
SLOT_KINDS = {
    "text": "the request's text",
    "ar_feed": "the input of an ar_decode loop",
    "ar_stream": "the tokens (and states) an ar_decode loop publishes",
    "codes_feed": "the input of an audio_decode loop",
    "audio_stream": "the chunks an audio_decode loop publishes",
    "clean_text": "the request's text, checked and cleaned",
    "phoneme_stream": "the sentences a phonemize loop publishes",
    "phoneme_feed": "the input of a sentence_frames loop",
    "frame_stream": "the latent frames a sentence_frames loop publishes",
    "frame_feed": "the input of a frame_decode loop",
    "audio": "the request's audio (an AudioSource, or none)",
    "audio_rows": "the blocks an audio_encode loop publishes, encoded as the thinker's input rows",
    "images": "the request's pictures (SeenImage, possibly none)",
    "image_rows": "the pictures an image_encode loop publishes, encoded as the thinker's input rows",
}


OPS: dict[str, Op] = {}


def _op(name: str, *, reads: tuple[str, ...], makes: str | None, handoff: bool = False, states: bool = False,
        frames: bool | None = None, counts: Literal["text_tokens", "codec_tokens"] | None = None, optional: int = 0):
    def register(fn):
        OPS[name] = Op(name, fn, reads, makes, handoff, states, (fn.__doc__ or "").strip(), frames, counts, optional)
        return fn
    return register


@_op("tokenize", reads=("text",), makes="ar_feed@thinker")
def tokenize(ctx: RequestContext, inputs: list[Any], mode: str) -> ThinkerFeed:
    """Text → the thinker's prompt (echo: the text's tokens are forced as the reply)."""
    thinker = ctx.roles["thinker"]
    text = clean_text(inputs[0], ctx.card.limits.max_text_chars)
    instructions = (ctx.request.instructions or "").strip() or None
    if instructions is None:
        prompt = thinker.encode(text, ctx.mode)
    elif thinker.takes_instructions:
        prompt = thinker.encode(text, ctx.mode, clean_text(instructions, ctx.card.limits.max_text_chars))
    else:
        raise SpecError([SpecIssue("<request>", None, "instructions",
                                   f"card {ctx.card.model!r} takes no instructions (its thinker has no system prompt)")])
    end = prompt.forced_end_id if prompt.forced_end_id is not None else min(thinker.eos_token_ids)
    return ThinkerFeed(prompt, end, ctx.request.max_tokens)


@_op("tokenize_turn", reads=("text", "audio_rows@audio_encoder", "image_rows@image_encoder"),
     makes="ar_feed@thinker", handoff=True, optional=1)
def tokenize_turn(ctx: RequestContext, inputs: list[Any], mode: str) -> ListenFeed:
    """A chat turn after the conversation's earlier turns: their text, pictures and clips, then this turn's text,
    seen pictures and heard audio (each encoded as it comes) → the thinker's prompt. A program that does not see
    leaves out the pictures' slot."""
    text, heard, seen = (*inputs, None) if len(inputs) == 2 else inputs
    request = ctx.request
    has_audio, num_images, num_videos = request.audio is not None, len(request.images), len(request.videos)
    if ctx.mode == "echo":  # speak the text as it is (a server on this program also answers /v1/audio/speech)
        if has_audio or num_images or num_videos or request.history:
            needs = "heard audio and seen images need" if has_audio or num_images or num_videos \
                else "a conversation's history needs"
            raise SpecError([SpecIssue("<request>", None, "mode", f"echo speaks the text: {needs} chat mode")])
        return tokenize(ctx, [text], mode)
    if text.strip() or not (has_audio or num_images or num_videos):  # a question may come as media alone
        text = clean_text(text, ctx.card.limits.max_text_chars)
    turns = [PromptTurn(t.role, t.text.strip(), len(t.audio), len(t.images)) for t in request.history]
    turns.append(PromptTurn("user", text.strip(), int(has_audio), num_images, num_videos))
    try:
        prompt = ctx.roles["thinker"].chat_prompt(turns)
    except ValueError as exc:
        raise SpecError([SpecIssue("<request>", None, "text", str(exc))]) from None
    encoder, eyes = ctx.roles["audio_encoder"], ctx.roles.get("image_encoder")
    clips, images = request_clips(request), request_images(request)
    rows = sum(_rows_bound(encoder, clip) for clip in clips)
    seen_rows = sum(_seen_rows_bound(eyes, item) for item in images) if eyes is not None else 0
    return ListenFeed(prompt, heard if clips else None, mode, rows, request.max_tokens, seen if images else None,
                      seen_rows)


def request_clips(request: SpeakRequest) -> tuple:
    """Every clip a chat request hears, in prompt order: its earlier turns' clips, then its own audio."""
    earlier = tuple(clip for turn in request.history for clip in turn.audio)
    return earlier if request.audio is None else (*earlier, request.audio)


def request_images(request: SpeakRequest) -> tuple:
    """Every picture and video a chat request sees, in prompt order: its earlier turns' pictures, then its own
    pictures, then its videos."""
    return (*(image for turn in request.history for image in turn.images), *request.images, *request.videos)


def _seen_rows_bound(eyes: Any, item: Any) -> int:
    """The thinker positions a picture (at most the largest picture's) or a video (exactly) takes."""
    if item.kind == "video":
        return eyes.video_rows(*item.size, item.num_frames, item.fps)
    return eyes.max_rows()


def _rows_bound(encoder: Any, clip: Any) -> int:
    """The audio positions a clip takes: exact once it has arrived whole, else the encoder's longest clip's."""
    arrived, ended = clip.known(encoder.sample_rate)
    return encoder.tokens_for(min(arrived, encoder.max_samples) if ended else encoder.max_samples)


@_op("emit_text", reads=("ar_stream@thinker",), makes=None, counts="text_tokens")
def emit_text(ctx: RequestContext, inputs: list[Any], mode: str) -> None:
    """Stream the thinker's reply as text pieces (whole characters only)."""
    thinker = ctx.roles["thinker"]
    channel: ARChannel[ARItem] = inputs[0]
    unsent: list[int] = []  # tokens since the last whole character

    def on_item(item: ARItem | None) -> None:
        if item is not None and item.token not in thinker.eos_token_ids:
            unsent.append(item.token)
        if not unsent:
            return
        text = thinker.decode_text(unsent)
        if item is not None and text.endswith("\ufffd"):
            return  # a multi-byte character is not complete yet
        ctx.emit(TextPiece(ctx.request_id, text))
        unsent.clear()

    channel.listen(on_item)


@_op("thinker_to_talker", reads=("ar_stream@thinker",), makes="ar_feed@talker", handoff=True, states=True)
def thinker_to_talker(ctx: RequestContext, inputs: list[Any], mode: str) -> TalkerFeed:
    """Full payload: the thinker's tokens and hidden states become the talker's conditioning."""
    return TalkerFeed(ctx.roles["talker"], inputs[0], mode, ctx.voice)


@_op("talker_to_vocoder", reads=("ar_stream@talker",), makes="codes_feed@vocoder", handoff=True, frames=False,
     counts="codec_tokens")
def talker_to_vocoder(ctx: RequestContext, inputs: list[Any], mode: str) -> CodesFeed:
    """The talker's codec tokens, special ids stripped, as the vocoder's codes."""
    return CodesFeed(ctx.roles["talker"], inputs[0], mode)


@_op("emit_audio", reads=("audio_stream",), makes=None)
def emit_audio(ctx: RequestContext, inputs: list[Any], mode: str) -> None:
    """Stream the vocoder's chunks as audio chunks with their samples."""
    channel: Channel[AudioPiece] = inputs[0]
    rate = ctx.roles["vocoder"].sample_rate

    def on_piece(piece: AudioPiece | None) -> None:
        if piece is not None:
            ctx.emit(AudioChunk(ctx.request_id, piece.index, rate, piece.samples))

    channel.listen(on_piece)
