"""What token2wav carries: a request's state (its voice, noise stream, BigVGAN's tail), one chunk's DiT window,
a chunk's step bytes in parts, and how a batch of mel rows is shared out over BigVGAN calls."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from omni_cli.backends.hf.loading import Voice

NOISE_GROWTH_FRAMES = 256  # noise is drawn in blocks; any multiple of 16 floats keeps the stream identical


def bigvgan_calls(rows: int, frames: int, thread_frames: int, threads: int) -> list[tuple[int, int]]:
    """Row ranges [start, stop) of the BigVGAN calls over `rows` mel of `frames` frames each: as few calls as
    keep each of `threads` row threads within `thread_frames` frames (one row at least), the rows shared out
    evenly (eight rows that take two calls run as four and four, not seven and one)."""
    per_call = threads * max(1, thread_frames // frames)
    calls = -(-rows // per_call)
    bounds = [rows * i // calls for i in range(calls + 1)]
    return list(zip(bounds[:-1], bounds[1:], strict=True))


@dataclass
class Window:
    """One chunk's DiT input: noise and codes over the window, and which frames of its output to keep; or,
    for a chunk whose mel an earlier window made (`made`), no DiT input."""

    noise: torch.Tensor | None  # [1, frames, mel_dim]
    codes: torch.Tensor | None  # [1, frames / repeats]
    voice: Voice
    keep_from: int
    keep_to: int
    right_to: int  # BigVGAN reads the window's mel [keep_from, right_to): past keep_to, look-ahead context
    noise_span: tuple[int, int] | None  # frames [start, stop) of the request's noise stream (rollout records)
    later_to: int = 0  # past right_to: the window's mel kept for the chunks up to its window_end (and their seam)
    made: torch.Tensor | None = None  # [1, mel_dim, frames from keep_from]: the earlier window's mel


class ChunkBytes(int):
    """A chunk's step bytes, with the parts a batch of chunks adds up differently: the DiT's activations,
    BigVGAN's (without its weight copy) and the length of the mel BigVGAN reads."""

    dit: int
    act: int
    frames: int

    def __new__(cls, total: int, dit: int, act: int, frames: int) -> ChunkBytes:
        made = super().__new__(cls, total)
        made.dit, made.act, made.frames = dit, act, frames
        return made

    def __reduce__(self) -> tuple:
        return ChunkBytes, (int(self), self.dit, self.act, self.frames)


@dataclass
class VocoderState:
    """One utterance: its voice, its noise stream and what BigVGAN needs from the previous chunk."""

    voice: Voice
    generator: torch.Generator  # CPU, seeded: the noise of frame f never depends on how it was sliced
    noise: torch.Tensor  # [1, frames drawn so far, mel_dim], float32 on CPU
    mel_tail: torch.Tensor | None = None  # last kept mel frames [1, mel_dim, <= overlap]
    # a window that reached past its chunk (window_end): its mel from frame `later_from` on, for the chunks
    # up to frame `later_to` and their seam's look-ahead
    later_mel: torch.Tensor | None = None
    later_from: int = 0
    later_to: int = 0
    next_code: int = 0  # the start the next chunk must have
    emitted_frames: int = 0  # samples were emitted for mel frames [0, emitted_frames)
    bigvgan_frames: int = 0  # mel frames BigVGAN has read for this utterance (overlap and look-ahead included)
    bigvgan_slots: list | None = None  # bigvgan_seam stream: what BigVGAN's layers carry to the next chunk
    stream_samples: int = 0  # samples the stream has made, and samples sent (a fill sends them before it)
    sent_samples: int = 0
    is_finished: bool = False
