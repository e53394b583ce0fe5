"""token2wav's BigVGAN as a stream (`bigvgan_seam: stream`): each chunk's kept mel decoded once, context carried.

Each request keeps a `BigVGANStream`'s slots in its state (`VocoderState.bigvgan_slots`). A chunk pushes only
its own kept mel frames (no overlap, no look-ahead mel) and gets the samples whose whole receptive field has
arrived; the rest follow with the next chunk, and the utterance's last chunk flushes them. Together the
chunks' samples are BigVGAN's over the utterance's mel in one forward, to float rounding; a chunk's samples end
`delay_frames` (the layers' look-ahead) before its last mel frame instead of at it. Rows of one length whose
slots have the same lengths (`bigvgan_stream.key`) run as one batch.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np
import torch

from omni_cli.backends.hf import bigvgan_stream
from omni_cli.backends.hf.token2wav_state import bigvgan_calls


def finish(vocoder: Any, inputs: list, windows: list, kept: list) -> list[np.ndarray]:
    """`HFVocoder._finish` for the stream: each chunk's final samples; states move on only once all ran."""
    plans, later = zip(*(vocoder._bigvgan_plan(inp, window, mel) for inp, window, mel
                         in zip(inputs, windows, kept, strict=True)), strict=True)
    stream: bigvgan_stream.BigVGANStream = vocoder.stream
    slots = [inp.state.bigvgan_slots or stream.start() for inp in inputs]
    mels = [_mel(vocoder, plan[0]) for plan in plans]
    groups: dict[tuple, list[int]] = {}
    for i, plan in enumerate(plans):
        groups.setdefault((mels[i].shape[2], plan[4], bigvgan_stream.key(slots[i])), []).append(i)
    results: list[Any] = [None] * len(inputs)
    for (frames, final, _), members in groups.items():
        for first, stop in bigvgan_calls(len(members), max(1, frames), vocoder.bigvgan_batch_frames, vocoder.rows.count):
            rows = members[first:stop]
            parts = vocoder.rows.parts("bigvgan", len(rows), max(1, frames))
            made = vocoder.rows.map(partial(_push, stream, [slots[i] for i in rows], [mels[i] for i in rows], final),
                                    parts)
            for (a, b), (wave, new) in zip(parts, made, strict=True):
                vocoder.convs.ran(b - a, frames, vocoder.threads.count)
                for row, (samples, row_slots) in enumerate(zip(wave, new, strict=True)):
                    results[rows[a + row]] = (samples, row_slots)
    return [_advance(vocoder, inp, plan, result, more) for inp, plan, result, more
            in zip(inputs, plans, results, later, strict=True)]


def _mel(vocoder: Any, mel_in: torch.Tensor | None) -> torch.Tensor:
    if mel_in is not None:
        return mel_in
    return torch.zeros(1, vocoder.mel_dim, 0, device=vocoder.device)


def _push(stream: bigvgan_stream.BigVGANStream, slots: list, mels: list, final: bool, start: int, stop: int
          ) -> tuple[np.ndarray, list]:
    """Rows [start, stop) of one group as one batch: (their samples [rows, n], each row's new slots)."""
    count = stop - start
    mel = mels[start] if count == 1 else torch.cat(mels[start:stop])
    wave, new = stream.push(bigvgan_stream.merge(slots[start:stop]), mel, final)
    return wave.float().cpu().numpy(), bigvgan_stream.split(new, count)


def _advance(vocoder: Any, inp: Any, plan: tuple, result: tuple, later: tuple) -> np.ndarray:
    samples, slots = result
    state = inp.state
    mel_in, is_last = plan[0], plan[4]
    state.bigvgan_slots = None if is_last else slots
    state.bigvgan_frames += 0 if mel_in is None else mel_in.shape[2]
    state.emitted_frames = inp.end * vocoder.repeats if is_last else state.emitted_frames
    state.later_mel, state.later_from, state.later_to = later
    state.mel_tail = None
    state.next_code = inp.end
    state.is_finished = is_last
    return np.ascontiguousarray(samples, dtype=np.float32)
