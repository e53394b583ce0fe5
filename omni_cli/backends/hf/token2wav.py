"""token2wav as audio_chunk WorkUnits: DiT windows over the codes, BigVGAN with overlap, per-request state."""

# A chunk covers codes [start, end) = mel frames [2*start, 2*end). Its DiT window reaches `chunk_past_frames`
# back (rounded down to a 24-frame attention block, so window blocks line up with the utterance's
# blocks) and `chunk_future_frames` ahead; the window's noise is the utterance's one noise tensor,
# sliced. BigVGAN re-reads the last `bigvgan_overlap_frames` kept frames of the previous chunk and
# half of them are trimmed on each inner edge, so samples are emitted for frames
# [previous end - overlap/2, end - overlap/2), and up to the real end on the last chunk (a chunk's
# samples are final, but lag its codes by overlap/2 frames). One chunk covering the whole utterance
# is exactly transformers' `Qwen2_5OmniToken2WavModel`.
#
# Noise: torch's CPU normal stream is prefix-stable (drawing frames block by block gives the frames
# of one draw), so each request draws its noise lazily from its own seeded CPU generator and gets
# what transformers draws after `torch.manual_seed(seed)`. CUDA's stream is not prefix-stable, so
# the noise comes from the CPU on every device (on CUDA it then differs from `generate`'s).

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from omni_cli.backends.base import AUDIO_CHUNK, VocoderChunkInput, VocoderChunkOutput
from omni_cli.backends.hf.ar import module_bytes
from omni_cli.backends.hf.dit import ODESettings, sample_window
from omni_cli.backends.hf.loading import Loaded, Voice
from omni_cli.backends.hf.params import VocoderParams

NOISE_GROWTH_FRAMES = 256  # noise is drawn in blocks; any multiple of 16 floats keeps the stream identical


@dataclass
class VocoderState:
    """One utterance: its voice, its noise stream and what BigVGAN needs from the previous chunk."""

    voice: Voice
    generator: torch.Generator  # CPU, seeded: the noise of frame f never depends on how it was sliced
    noise: torch.Tensor  # [1, frames drawn so far, mel_dim], float32 on CPU
    mel_tail: torch.Tensor | None = None  # last kept mel frames [1, mel_dim, <= overlap]
    next_code: int = 0  # the start the next chunk must have
    emitted_frames: int = 0  # samples were emitted for mel frames [0, emitted_frames)
    is_finished: bool = False


class HFVocoder:
    role = "vocoder"
    sample_rate = 24000

    def __init__(self, loaded: Loaded, params: VocoderParams, name: str = "vocoder"):
        self.name = name
        self.module = loaded.model.token2wav
        self.dit = self.module.code2wav_dit_model
        self.bigvgan = self.module.code2wav_bigvgan_model
        self.device = loaded.device
        self._voices = loaded.voices
        self.ode = ODESettings(params.dit_num_steps, params.dit_guidance_scale, params.dit_sway_coefficient)
        self.repeats = int(self.dit.repeats)  # mel frames per code
        self.block_frames = int(self.dit.block_size)
        self.mel_dim = int(self.dit.mel_dim)
        self.hop = int(np.prod(self.bigvgan.config.upsample_rates))  # samples per mel frame
        self.samples_per_code = self.hop * self.repeats
        self.past_frames = params.chunk_past_frames
        self.future_frames = params.chunk_future_frames
        self.overlap_frames = params.bigvgan_overlap_frames
        self.default_seed = params.noise_seed
        if self.future_frames % self.repeats or self.block_frames % self.repeats:
            raise ValueError(f"chunk_future_frames and the DiT block size must be multiples of {self.repeats}")
        self.lookahead_codes = self.future_frames // self.repeats

    def voices(self) -> list[str]:
        return self._voices.names()

    def new_state(self, voice: str | None, seed: int | None = None) -> VocoderState:
        entry = self._voices.get(voice)
        placed = Voice(entry.name, entry.bos_token, entry.cond.to(self.device), entry.ref_mel.to(self.device))
        generator = torch.Generator().manual_seed(self.default_seed if seed is None else seed)
        return VocoderState(voice=placed, generator=generator, noise=torch.empty(1, 0, self.mel_dim))

    def weight_bytes(self) -> int:
        return module_bytes(self.module)

    def state_bytes(self) -> int:
        # noise of a one-minute utterance, the BigVGAN overlap and the voice
        noise = 60 * self.sample_rate // self.hop * self.mel_dim * 4
        return noise + (self.overlap_frames + 1024) * self.mel_dim * 4

    def step_bytes(self, num_codes: int) -> int:
        frames = num_codes * self.repeats + self.past_frames + self.future_frames + self.block_frames
        dit_cfg = self.dit.config
        dit = 2 * frames * (8 * dit_cfg.hidden_size + dit_cfg.num_attention_heads * frames) * 4
        bigvgan, channels, length = 0, self.bigvgan.config.upsample_initial_channel, frames + self.overlap_frames
        for rate in self.bigvgan.config.upsample_rates:
            channels, length = channels // 2, length * rate
            bigvgan = max(bigvgan, 6 * channels * length * 4)  # anti-aliased activations upsample 2x
        return dit + bigvgan

    def run(self, kind: str, inputs: list[VocoderChunkInput]) -> list[VocoderChunkOutput]:
        if kind != AUDIO_CHUNK:
            raise ValueError(f"the vocoder runs audio_chunk WorkUnits, not {kind!r}")
        return [VocoderChunkOutput(samples=self._chunk(inp)) for inp in inputs]

    def synthesize(self, codes: list[int], voice: str | None = None, seed: int | None = None) -> np.ndarray:
        """Whole-utterance token2wav: one chunk over every code."""
        state = self.new_state(voice, seed)
        return self._chunk(VocoderChunkInput(state=state, codes=codes, start=0, end=len(codes), is_final=True))

    # ---- one chunk ----
    @torch.no_grad()
    def _chunk(self, inp: VocoderChunkInput) -> np.ndarray:
        state: VocoderState = inp.state
        start, end, num_codes = inp.start, inp.end, len(inp.codes)
        if state.is_finished or start != state.next_code or not start <= end <= num_codes:
            raise ValueError(f"chunk [{start}, {end}) does not follow [.., {state.next_code}) of {num_codes} codes")
        is_last = inp.is_final and end == num_codes
        first, stop = start * self.repeats, end * self.repeats
        kept = self._kept_mel(inp, first, stop) if stop > first else None
        pieces = [m for m in (state.mel_tail, kept) if m is not None and m.shape[2]]
        if not pieces:
            mel_in = None
        elif len(pieces) == 1:
            mel_in = pieces[0]  # the DiT's own view: a whole utterance reaches BigVGAN as in transformers
        else:
            mel_in = torch.cat(pieces, dim=2)
        emit_from = state.emitted_frames
        emit_to = stop if is_last else max(emit_from, stop - self.overlap_frames // 2)
        samples = np.zeros(0, dtype=np.float32)
        if mel_in is not None and emit_to > emit_from:
            in_first = stop - mel_in.shape[2]
            wave = self.bigvgan(mel_in).reshape(-1).float().numpy()
            samples = wave[(emit_from - in_first) * self.hop : (emit_to - in_first) * self.hop]
        state.emitted_frames = emit_to
        state.mel_tail = mel_in[:, :, -self.overlap_frames :] if mel_in is not None and self.overlap_frames else None
        state.next_code = end
        state.is_finished = is_last
        return np.ascontiguousarray(samples, dtype=np.float32)

    def _kept_mel(self, inp: VocoderChunkInput, first: int, stop: int) -> torch.Tensor:
        """Mel frames [first, stop) of this chunk, from one DiT window with past and future context."""
        available = len(inp.codes) * self.repeats
        win_first = max(0, (first - self.past_frames) // self.block_frames * self.block_frames)
        win_stop = stop + self.future_frames
        if inp.is_final:
            win_stop = min(win_stop, available)
        elif win_stop > available:
            raise ValueError(f"chunk [{inp.start}, {inp.end}) needs {self.lookahead_codes} codes of look-ahead")
        noise = self._noise(inp.state, win_stop)[:, win_first:win_stop].to(self.device)
        codes = torch.tensor(
            [list(inp.codes[win_first // self.repeats : win_stop // self.repeats])],
            dtype=torch.long,
            device=self.device,
        )
        voice = inp.state.voice
        mel = sample_window(self.dit, noise, codes, voice.cond, voice.ref_mel, self.ode)
        return mel[:, :, first - win_first : stop - win_first]

    def _noise(self, state: VocoderState, frames: int) -> torch.Tensor:
        drawn = state.noise.shape[1]
        if drawn < frames:
            more = -(-(frames - drawn) // NOISE_GROWTH_FRAMES) * NOISE_GROWTH_FRAMES
            extra = torch.randn([1, more, self.mel_dim], generator=state.generator, dtype=torch.float32)
            state.noise = torch.cat([state.noise, extra], dim=1)
        return state.noise
