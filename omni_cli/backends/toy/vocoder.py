"""The numpy vocoder: codec codes → frame parameters (a small conv net) → harmonic-plus-noise audio."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..base import AUDIO_CHUNK, VocoderChunkInput, VocoderChunkOutput, VocoderModel
from .nn import WeightSource, linear, sigmoid, silu, softmax
from .params import VocoderParams

SAMPLES_PER_CODE = 480  # 50 codes a second at 24 kHz, like Qwen2.5-Omni
# each of the card's voices gets a pitch by its place in the card's list, high to low (the shipped
# card's alto and tenor: 210 and 125 Hz); the card is the one source of voice names
F0_HIGH_HZ, F0_LOW_HZ = 210.0, 125.0


def voice_f0_hz(voices: list[str]) -> dict[str, float]:
    if len(voices) < 2:
        return {v: F0_HIGH_HZ for v in voices}
    return {v: F0_HIGH_HZ - (F0_HIGH_HZ - F0_LOW_HZ) * i / (len(voices) - 1) for i, v in enumerate(voices)}
_NOISE_FRAMES = 64


@dataclass
class VocoderState:
    """The left context one request carries from chunk to chunk."""

    base_f0: float
    layer_context: list[np.ndarray]  # per conv layer after the first: its last kernel-1 input rows
    prev_params: np.ndarray | None = None  # [f0, amp, noise, weights…] of the last frame made
    phase: float = 0.0  # radians of the fundamental at the end of the last frame
    frames_done: int = 0
    extra: dict = field(default_factory=dict)


class NumpyVocoder(VocoderModel):
    role = "vocoder"
    samples_per_code = SAMPLES_PER_CODE

    def __init__(self, name: str, params: VocoderParams, seed: int, codebook_size: int, sample_rate: int,
                 voices: list[str]):
        self.name = name
        self.f0_hz = voice_f0_hz(voices)
        self.params = params
        self.sample_rate = sample_rate
        self.lookahead_codes = params.lookahead_codes
        self.context_codes = params.lookahead_codes  # causal: a chunk decodes only its look-ahead beside its own
        ws = WeightSource(seed, 2)
        h, k = params.hidden, params.kernel_codes
        self.code_embedding = ws.table(codebook_size, h)
        self.first = ws.matrix((k + params.lookahead_codes) * h, h)
        self.rest = [ws.matrix(k * h, h) for _ in range(params.num_layers - 1)]
        self.head = ws.matrix(h, 3 + params.num_harmonics, scale=2.0)
        self.noise = ws.rng.uniform(-1.0, 1.0, (_NOISE_FRAMES, SAMPLES_PER_CODE)).astype(np.float32)
        self.harmonic_prior = -np.log(np.arange(1, params.num_harmonics + 1, dtype=np.float32))

    def new_state(self, voice: str | None, seed: int | None = None) -> VocoderState:
        # no per-request randomness: the noise table is part of the weights (seed unused)
        h, k = self.params.hidden, self.params.kernel_codes
        if voice is not None and voice not in self.f0_hz:  # the request was checked against the card's voices
            raise ValueError(f"unknown voice {voice!r} (known: {', '.join(self.f0_hz) or 'none'})")
        return VocoderState(self.f0_hz[voice] if voice is not None else F0_HIGH_HZ,
                            [np.zeros((k - 1, h), np.float32) for _ in self.rest])

    def state_bytes(self, max_codes: int | None = None) -> int:  # carried context: independent of length
        h, k = self.params.hidden, self.params.kernel_codes
        return 4 * (len(self.rest) * (k - 1) * h + 3 + self.params.num_harmonics) + 64

    def step_bytes(self, num_codes: int, *, start: int | None = None, is_final: bool = False) -> int:
        return 8 * num_codes * SAMPLES_PER_CODE * (self.params.num_harmonics + 6)

    def weight_bytes(self) -> int:
        parts = [self.code_embedding, self.first, self.head, self.noise, *self.rest]
        return sum(p.nbytes for p in parts)

    def run(self, kind: str, inputs: list[VocoderChunkInput]) -> list[VocoderChunkOutput]:
        if kind != AUDIO_CHUNK:
            raise ValueError(f"vocoder cannot run {kind!r}")
        outputs = []
        for chunk in inputs:
            first = chunk.state.frames_done  # the noise table is part of the weights: frames index into it
            samples = self._chunk(chunk)
            outputs.append(VocoderChunkOutput(samples, (first, chunk.state.frames_done)))
        return outputs

    def _frame_params(self, chunk: VocoderChunkInput) -> np.ndarray:
        """[frames, 3 + harmonics] raw parameters for codes [start, end)."""
        h, k, ahead = self.params.hidden, self.params.kernel_codes, self.params.lookahead_codes
        st = chunk.state
        lo, hi = chunk.start - (k - 1), chunk.end + ahead
        window = np.zeros((hi - lo, h), np.float32)  # zeros stand for codes before 0 and after the last
        for pos in range(max(lo, 0), min(hi, len(chunk.codes))):
            window[pos - lo] = self.code_embedding[chunk.codes[pos]]
        frames = chunk.end - chunk.start
        taps = k + ahead
        x = silu(linear(np.stack([window[j:j + taps].reshape(-1) for j in range(frames)]), self.first))
        for index, weight in enumerate(self.rest):
            rows = np.concatenate([st.layer_context[index], x], axis=0)
            st.layer_context[index] = rows[rows.shape[0] - (k - 1):]  # causal: carried to the next chunk
            x = x + silu(linear(np.stack([rows[j:j + k].reshape(-1) for j in range(frames)]), weight))
        return linear(x, self.head)

    def _chunk(self, chunk: VocoderChunkInput) -> np.ndarray:
        st = chunk.state
        raw = self._frame_params(chunk)
        frames = raw.shape[0]
        f0 = st.base_f0 * np.exp2(0.4 * np.tanh(raw[:, 0])).astype(np.float64)
        amp = (0.05 + 0.35 * sigmoid(raw[:, 1])).astype(np.float64)
        noise = (0.03 * sigmoid(raw[:, 2])).astype(np.float64)
        weights = softmax(raw[:, 3:] + self.harmonic_prior).astype(np.float64)
        cur = np.concatenate([f0[:, None], amp[:, None], noise[:, None], weights], axis=1)
        # each frame glides from the previous frame's parameters; the very first starts silent
        first = cur[0].copy() if st.prev_params is None else st.prev_params
        if st.prev_params is None:
            first[1] = 0.0
        prev = np.concatenate([first[None], cur[:-1]], axis=0)
        if chunk.is_final and chunk.end == len(chunk.codes):
            cur = cur.copy()
            cur[-1, 1] = 0.0  # fade out over the last frame
        n = SAMPLES_PER_CODE
        ramp = np.arange(1, n + 1, dtype=np.float64) / n  # [n]
        f_prev, f_cur = prev[:, 0:1], cur[:, 0:1]
        step = 2.0 * np.pi / self.sample_rate
        steps = np.arange(1, n + 1, dtype=np.float64)
        within = step * (f_prev * steps + (f_cur - f_prev) * steps * (steps + 1) / (2 * n))  # [frames, n]
        increments = within[:, -1]
        # sequential sums, so a chunk's phase continues exactly where the last one ended
        starts = np.cumsum(np.concatenate([[st.phase], increments]))[:-1]
        phase = starts[:, None] + within
        a = prev[:, 1:2] + (cur[:, 1:2] - prev[:, 1:2]) * ramp
        nz = prev[:, 2:3] + (cur[:, 2:3] - prev[:, 2:3]) * ramp
        w = prev[:, 3:, None] + (cur[:, 3:, None] - prev[:, 3:, None]) * ramp  # [frames, M, n]
        harmonics = np.arange(1, w.shape[1] + 1, dtype=np.float64)[None, :, None]
        voiced = np.sum(w * np.sin(harmonics * phase[:, None, :]), axis=1)
        table = self.noise[(st.frames_done + np.arange(frames)) % _NOISE_FRAMES]
        samples = a * voiced + nz * table
        st.phase = float(starts[-1] + increments[-1])
        st.prev_params = cur[-1]
        st.frames_done += frames
        return samples.reshape(-1).astype(np.float32)
