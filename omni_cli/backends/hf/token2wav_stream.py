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


def attach(vocoder: Any, params: Any) -> None:
    """The vocoder's stream (`bigvgan_seam: stream`; None otherwise), over its activations as they are now
    (compiled or eager), with its look-ahead in mel frames and whether the first chunks are filled."""
    vocoder.stream = bigvgan_stream.BigVGANStream(vocoder.vocode) if params.bigvgan_seam == "stream" else None
    vocoder.stream_fill = params.bigvgan_stream_fill
    vocoder.stream_delay = 0.0 if vocoder.stream is None else bigvgan_stream.look_ahead(vocoder.stream)


def finish(vocoder: Any, inputs: list, windows: list, kept: list) -> list[np.ndarray]:
    """`HFVocoder._finish` for the stream: each chunk's final samples; states move on only once all ran."""
    plans, later = zip(*(vocoder._bigvgan_plan(inp, window, mel) for inp, window, mel
                         in zip(inputs, windows, kept, strict=True)), strict=True)
    stream: bigvgan_stream.BigVGANStream = vocoder.stream
    split = [_split(vocoder, inp, plan) for inp, plan in zip(inputs, plans, strict=True)]
    fills = [_fills(vocoder, inp, plan) for inp, plan in zip(inputs, plans, strict=True)]
    slots = [inp.state.bigvgan_slots or stream.start() for inp in inputs]
    results: list[Any] = [None] * len(inputs)
    groups: dict[tuple, list[int]] = {}
    for i, (plan, (mel, _)) in enumerate(zip(plans, split, strict=True)):
        if fills[i]:
            results[i] = _fill(vocoder, inputs[i], plan, split[i])
        elif plan[4] and inputs[i].state.bigvgan_slots is None:  # the last chunk, the stream not started
            results[i] = _whole(vocoder, mel)
        else:
            groups.setdefault((mel.shape[2], plan[4], bigvgan_stream.key(slots[i])), []).append(i)
    for (frames, final, _), members in groups.items():
        for first, stop in bigvgan_calls(len(members), max(1, frames), vocoder.bigvgan_batch_frames, vocoder.rows.count):
            rows = members[first:stop]
            parts = vocoder.rows.parts("bigvgan", len(rows), max(1, frames))
            made = vocoder.rows.map(partial(_push, stream, [slots[i] for i in rows], [split[i][0] for i in rows],
                                            final), parts)
            for (a, b), (wave, new) in zip(parts, made, strict=True):
                vocoder.convs.ran(b - a, frames, vocoder.threads.count)
                for row, (samples, row_slots) in enumerate(zip(wave, new, strict=True)):
                    results[rows[a + row]] = (samples, row_slots, frames)
    return [_advance(vocoder, inp, plan, result, more) for inp, plan, result, more
            in zip(inputs, plans, results, later, strict=True)]


def _split(vocoder: Any, inp: Any, plan: tuple) -> tuple[torch.Tensor, torch.Tensor | None]:
    """(the kept mel not yet pushed, any the fills held first, as `_bigvgan_plan` joins them; the look-ahead
    mel after it)."""
    mel_in, read_to = plan[0], plan[3]
    ahead = read_to - inp.end * vocoder.repeats
    if mel_in is None:
        mine, after = torch.zeros(1, vocoder.mel_dim, 0, device=vocoder.device), None
    else:
        mine, after = mel_in[:, :, :mel_in.shape[2] - ahead], mel_in[:, :, mel_in.shape[2] - ahead:]
    return mine, after


def _fills(vocoder: Any, inp: Any, plan: tuple) -> bool:
    """Whether the chunk is made as `lookahead` makes it: `bigvgan_stream_fill`, the stream not started and
    its samples for this chunk not reaching past the audio already sent (an utterance's first chunks)."""
    state, is_last = inp.state, plan[4]
    return (vocoder.stream_fill and not is_last and state.bigvgan_slots is None and plan[0] is not None
            and inp.end * vocoder.repeats - vocoder.stream_delay <= state.sent_samples / vocoder.hop)


def _fill(vocoder: Any, inp: Any, plan: tuple, split: tuple) -> tuple:
    """One call over the held kept mel from half the overlap before the audio sent, the chunk's and its
    look-ahead: the samples of the chunk's frames not yet sent (none of the stream's)."""
    held, after = split
    sent, stop, half = inp.state.sent_samples // vocoder.hop, inp.end * vocoder.repeats, vocoder.overlap_frames // 2
    lo = max(0, sent - half)  # the held mel starts at frame 0: the stream has not started
    mel = torch.cat([held[:, :, lo:], after], dim=2)
    wave = vocoder.vocode(mel).reshape(-1).float().cpu().numpy()
    vocoder.convs.ran(1, mel.shape[2], vocoder.threads.count)
    return wave[(sent - lo) * vocoder.hop:(stop - lo) * vocoder.hop], None, mel.shape[2]


def _whole(vocoder: Any, mel: torch.Tensor) -> tuple:
    """One forward over the utterance's kept mel: a one-chunk utterance is transformers' token2wav exactly."""
    if not mel.shape[2]:
        return np.zeros(0, dtype=np.float32), None, 0
    wave = vocoder.vocode(mel).reshape(-1).float().cpu().numpy()
    vocoder.convs.ran(1, mel.shape[2], vocoder.threads.count)
    return wave, None, mel.shape[2]


def _push(stream: bigvgan_stream.BigVGANStream, slots: list, mels: list, final: bool, start: int, stop: int
          ) -> tuple[np.ndarray, list]:
    """Rows [start, stop) of one group as one batch: (their samples [rows, n], each row's new slots)."""
    count = stop - start
    mel = mels[start] if count == 1 else torch.cat(mels[start:stop])
    wave, new = stream.push(bigvgan_stream.merge(slots[start:stop]), mel, final)
    return wave.float().cpu().numpy(), bigvgan_stream.split(new, count)


def _advance(vocoder: Any, inp: Any, plan: tuple, result: tuple, later: tuple) -> np.ndarray:
    samples, slots, frames = result
    state, stop, is_last = inp.state, inp.end * vocoder.repeats, plan[4]
    state.bigvgan_frames += frames
    if slots is None and not is_last:  # filled: every kept frame is held for the stream, which has not started
        held, _ = _split(vocoder, inp, plan)
        state.mel_tail, state.sent_samples = held, stop * vocoder.hop
    else:  # the stream's samples from the first not yet sent (it starts behind what the fills sent)
        skip = max(0, state.sent_samples - state.stream_samples)
        state.stream_samples += len(samples)
        samples = samples[skip:]
        state.sent_samples = max(state.sent_samples, state.stream_samples)
        state.mel_tail = None
        state.bigvgan_slots = None if is_last else slots
    state.later_mel, state.later_from, state.later_to = later
    state.next_code = inp.end
    state.is_finished = is_last
    return np.ascontiguousarray(samples, dtype=np.float32)
