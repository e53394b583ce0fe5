"""What every backend's components look like to the loops: the step inputs and outputs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

import numpy as np

# defined beside this module and named here with the rest of the contract
from .component import Component  # noqa: F401
from .load_steps import BackendUnavailable, LoadReporter, LoadStep, no_report  # noqa: F401
from .prompts import ImageInput, ImageRows, ListenPrompt, Prefill, PromptTurn, ThinkerPrompt  # noqa: F401

# Work-unit kinds. A component's `run(kind, inputs)` takes a batch of inputs of one kind.
AR_PREFILL = "ar_prefill"
AR_TOKEN = "ar_token"
AUDIO_CHUNK = "audio_chunk"
AUDIO_BLOCK = "audio_block"  # one block of the audio encoder: the input speech it covers, encoded
IMAGE = "image"  # one picture through the vision encoder, whole (its full-attention layers see every patch)


class StepInput:
    """A step input that may carry a request's state. `state_field` names the field that holds it (None: none),
    which a placed component keeps on its side (engine/executors/handles.py) rather than receive each step."""

    __slots__ = ()
    state_field: ClassVar[str | None] = None


@dataclass
class AudioBlockInput(StepInput):
    """One request's input to one audio-encoder block: samples [start, stop) of its source at the encoder's rate."""

    state_field: ClassVar[str] = "state"
    state: Any  # per-request state made by `new_state` (hf: the log-mel floor so far)
    source: Any  # an AudioSource (audio/source.py); the block's read waits until its samples have arrived
    index: int  # the block's number within the request's audio
    start: int
    stop: int


@dataclass
class AudioBlockOutput:
    rows: Any  # [n, thinker width]: the block's audio positions as the thinker's input rows (n may be 0)
    num_samples: int  # samples of the block that had arrived (below stop - start: the audio ended inside it)


@dataclass
class ARStepInput(StepInput):
    """One request's input to one AR step (prefill or token)."""

    state_field: ClassVar[str] = "cache"  # the per-request state a placed component keeps on its side
    cache: Any  # per-request state made by `new_cache`: KV cache, positions, rope deltas
    token_ids: list[int]  # tokens consumed by this step (prefill: the prompt; decode: [previous token])
    prefill: Any = None  # backend payload for a prefill that is not plain tokens (talker conditioning)
    cond: Any = None  # per-step conditioning added to the input (talker: one thinker reply vector)
    # how a step that fills its frame's other codebook groups itself (ARModel.residual_groups) chooses each:
    # `choose(group, logits) -> code`, `greedy`, `keeps_logits` (the ar_decode loop's ResidualChoice)
    residuals: Any = None


@dataclass
class ARStepOutput:
    """What one AR step produced for one request."""

    logits: np.ndarray  # float32 [vocab]: scores of the next token (before our sampling)
    hidden: Any = None  # last-layer hidden state of each consumed position (backend-native array)
    embeds: Any = None  # input embedding of each consumed position (backend-native array)
    # what else the step made of the positions it consumed (Qwen3-Omni's talker: the consumed frame's codes of
    # every codebook group, filled by its code predictor inside the step); handed on in ARItem.extra
    extra: Any = None
    # float32 [residual groups, vocab]: the logits each residual code was chosen from, when the step's
    # `residuals` asked to keep them (the rollout profile records their log-probabilities)
    residual_logits: Any = None


@dataclass
class VocoderChunkInput(StepInput):
    """One request's input to one vocoder chunk: codes [start, end) plus whatever context it needs."""

    state_field: ClassVar[str] = "state"  # the per-request state a placed component keeps on its side
    state: Any  # per-request state made by `new_state`: left context, noise, overlap
    codes: Sequence[int]  # every code received so far (the loop never copies it)
    start: int
    end: int
    is_final: bool  # no more codes will come: the chunk may use zero padding on the right
    # the chunk's vocoder window covers codes up to here (>= end); the chunks that follow up to it may reuse
    # what the window made (the audio_decode loop's first_audio_codes). None: up to `end`
    window_end: int | None = None


@dataclass
class VocoderChunkOutput:
    samples: np.ndarray  # float32 mono in [-1, 1], the samples this chunk makes final
    noise_span: tuple[int, int] | None = None  # frames [start, stop) of the request's noise stream it used


@dataclass
class ARItem:
    """What an AR loop publishes after each step: the token it chose and the states behind it.

    Step 0 is the prefill: `consumed_ids` is the whole prompt, `hidden`/`embeds` have one row per
    prompt position. Step k > 0 consumed the token chosen at step k-1.
    """

    step: int
    consumed_ids: list[int]
    token: int  # the token chosen from this step's logits (may be EOS)
    hidden: Any = None
    embeds: Any = None
    extra: Any = None  # ARStepOutput.extra of this step


class ARModel(Component, Protocol):
    """A thinker or talker: decoder-only, one token per `ar_token` WorkUnit."""

    eos_token_ids: frozenset[int]
    suppress_token_ids: frozenset[int]  # never sampled (e.g. codec BOS)
    max_positions: int
    # codebook groups each decode step fills itself after the one the loop samples, choosing them as the
    # step input's `residuals` says (Qwen3-Omni's code predictor: num_code_groups - 1)
    residual_groups: int = 0

    def new_cache(self) -> Any: ...

    def cache_bytes(self, num_positions: int) -> int: ...

    def step_bytes(self, num_new: int, num_positions: int) -> int:
        """Bytes a step holds that adds `num_new` positions to a sequence of `num_positions` in all."""
        ...


class ThinkerModel(ARModel, Protocol):
    takes_instructions = False  # True: `encode` takes a request's instructions (a chat model's system prompt)

    def encode(self, text: str, mode: str) -> ThinkerPrompt:
        """Prompt for `mode` = "echo" (speak exactly `text`) or "chat" (answer `text`); a thinker that takes
        instructions has a third argument, `instructions` (str or None)."""
        ...

    def chat_prompt(self, turns: Sequence[PromptTurn]) -> ListenPrompt:
        """A conversation (its last turn the user's) through the chat template: the ids around its media's rows."""
        ...

    def listen_prompt(self, text: str, has_audio: bool, num_images: int = 0) -> ListenPrompt:
        """A single chat turn that may hold seen images and heard audio: the ids around their rows."""
        return self.chat_prompt([PromptTurn("user", text, int(has_audio), num_images)])

    def join_rows(self, parts: list[Any]) -> Any:
        """The per-position rows of a chunked prefill's parts (hidden states, embeddings) as one array."""
        return np.concatenate(parts, axis=0)

    def decode_text(self, token_ids: list[int]) -> str: ...

    def embed_tokens(self, token_ids: list[int]) -> Any: ...


class TalkerModel(ARModel, Protocol):
    """Hand-off side: how thinker items become talker conditioning (model-specific pairing)."""

    makes_frames: ClassVar[bool] = False  # True: each step completes a frame of every codebook group (Qwen3)

    # whether codes_bounds()'s `most` is a cap that cuts speech short (hf: generate's max_new_tokens)
    # or the model's own length rule for the reply (toy: codes per reply token)
    codes_bound_is_cap: bool

    def voices(self) -> list[str]:
        """The voice names this talker knows (the request's voice is checked against them once)."""
        ...

    def prefill_from(self, items: Sequence[ARItem], is_closed: bool, voice: str | None) -> Prefill | None:
        """The talker prefill, or None while `items` is too short and more may come."""
        ...

    def cond_for_step(self, items: Sequence[ARItem], is_closed: bool, step: int) -> Any | None:
        """The conditioning of talker decode step `step` (>= 1), or None while it is not there yet."""
        ...

    def codes_bounds(self, items: Sequence[ARItem]) -> tuple[int, int]:
        """(fewest, most) codec tokens for a reply of `items`; EOS is suppressed below the first.

        Must be monotone in len(items) and at least len(items): the talker takes one item per
        step, so while the thinker still runs the talker is below both bounds, and stream and
        barrier hand-offs stop at the same step.
        """
        ...

    def max_codes_for(self, num_reply_tokens: int) -> int:
        """Upper bound of codes_bounds for a reply of that many tokens (sizes the KV cache at admission)."""
        ...

    def code_of(self, token: int) -> int | None:
        """The vocoder code of a talker token, None for special tokens."""
        ...


class AudioEncoderModel(Component, Protocol):
    """An input tower: audio at `sample_rate` in blocks of `block_samples`, each encoded alone (block-local
    attention), so a block can run as soon as its audio has arrived and block by block equals the whole clip."""

    sample_rate: int
    block_samples: int
    max_samples: int  # the longest audio one request may carry

    def new_state(self) -> Any: ...

    def tokens_for(self, num_samples: int) -> int:
        """Audio positions the thinker gets for a clip of `num_samples` samples."""
        ...

    def step_bytes(self, num_samples: int) -> int: ...

    def identity(self) -> dict:
        """What its rows depend on besides the audio (the weights' digest, its and the feature extractor's settings,
        dtype, device type, library versions), as JSON values: rows kept across runs (omni_cli/encoded.py) are
        reused only under an equal identity."""
        ...

    def rows_to_numpy(self, rows: Any) -> np.ndarray:
        """Its rows as float32, exactly (to keep them)."""

    def rows_from_numpy(self, array: np.ndarray) -> Any:
        """Rows kept as float32 as its own again: the same values, array type, dtype and device."""


class ImageEncoderModel(Component, Protocol):
    """A vision tower: one picture or one video per WorkUnit, encoded whole (an IMAGE step returns ImageRows; an
    input's `kind` says which: "image" or "video")."""

    max_images: int  # the most pictures and videos one request may carry

    def rows_for(self, width: int, height: int) -> tuple[int, int, int]:
        """The grid (t, h, w) of thinker positions a picture of that size becomes."""
        ...

    def max_rows(self) -> int:
        """Thinker positions the largest picture takes (sizes a request at admission)."""
        ...

    def step_bytes(self, width: int, height: int) -> int: ...

    def video_rows(self, width: int, height: int, num_frames: int, fps: float) -> int:
        """Thinker positions a video of `num_frames` frames at `fps` takes (its frames sampled, then grouped)."""
        ...

    def video_step_bytes(self, width: int, height: int, num_frames: int, fps: float) -> int: ...

    # as AudioEncoderModel's, for a picture's rows
    def identity(self) -> dict: ...
    def rows_to_numpy(self, rows: Any) -> np.ndarray: ...
    def rows_from_numpy(self, array: np.ndarray) -> Any: ...


class VocoderModel(Component, Protocol):
    sample_rate: int
    samples_per_code: int
    lookahead_codes: int  # codes past a chunk's end it needs before it can run (unless final)
    context_codes: int  # codes a chunk decodes beside its own (left context and look-ahead): what a chunk costs more

    def new_state(self, voice: str | None, seed: int | None = None) -> Any:
        """Per-request state; `seed` is the request's (for vocoders that draw noise)."""
        ...

    def state_bytes(self, max_codes: int | None = None) -> int:
        """Bytes one request's state holds at most, for an utterance of up to `max_codes` codes."""
        ...

    def step_bytes(self, num_codes: int, *, start: int | None = None, is_final: bool = False) -> int:
        """Bytes a chunk of `num_codes` codes holds while it runs alone; `start` (its first code) None:
        anywhere in the utterance (an upper bound); `is_final`: the chunk ends at the utterance's last code."""
        ...
