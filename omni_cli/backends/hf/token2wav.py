"""token2wav as audio_chunk WorkUnits: DiT windows over the codes, BigVGAN with overlap, per-request state."""

# A chunk covers codes [start, end) = mel frames [2*start, 2*end). Its DiT window reaches `chunk_past_frames`
# back (rounded down to a 24-frame attention block, so window blocks line up with the utterance's
# blocks) and `chunk_future_frames` ahead; the window's noise is the utterance's one noise tensor,
# sliced. BigVGAN reads `bigvgan_overlap_frames` of context around each seam between chunks, its
# receptive field (under 16 frames each side) plus margin, by `bigvgan_seam`:
# - held: it re-reads the last `overlap` kept frames of the previous chunk and half of them are trimmed on
#   each inner edge, so samples are emitted for frames [previous end - overlap/2, end - overlap/2), and up
#   to the real end on the last chunk: a chunk's samples lag its codes by overlap/2 frames.
# - lookahead: it reads the last overlap/2 kept frames of the previous chunk, the chunk's kept frames and
#   overlap/2 frames of the window's look-ahead past them (mel the next window computes again, with more
#   context), and samples are emitted for the chunk's own frames [start, end): the same work, each
#   chunk's audio overlap/2 frames sooner, and the seam's samples read look-ahead mel.
# - stream: no overlap; BigVGAN's layers carry their context from chunk to chunk and each kept frame is
#   decoded once (token2wav_stream.py), the first chunks within its look-ahead made as lookahead makes them.
# One chunk covering the whole utterance is exactly transformers' `Qwen2_5OmniToken2WavModel` either way
# (stream: to float rounding).
#
# Noise: torch's CPU normal stream is prefix-stable (drawing frames block by block gives the frames
# of one draw), so each request draws its noise lazily from its own seeded CPU generator and gets
# what transformers draws after `torch.manual_seed(seed)`. CUDA's stream is not prefix-stable, so
# the noise comes from the CPU on every device (on CUDA it then differs from `generate`'s).

from __future__ import annotations

from functools import partial

import numpy as np
import torch

from omni_cli.backends.base import (
    AUDIO_CHUNK,
    LoadReporter,
    VocoderChunkInput,
    VocoderChunkOutput,
    VocoderModel,
    no_report,
)
from omni_cli.backends.hf import token2wav_stream
from omni_cli.backends.hf.ar import module_bytes
from omni_cli.backends.hf.bigvgan import LeanBigVGAN
from omni_cli.backends.hf.dit import ODESettings, TimeModulation, sample_window, speaker_features
from omni_cli.backends.hf.loading import Loaded, Voice
from omni_cli.backends.hf.onednn import ConvCosts
from omni_cli.backends.hf.params import VocoderParams
from omni_cli.backends.hf.rows import RowThreads, choose_row_threads
from omni_cli.backends.hf.threads import Threads, choose_threads, intra_op_threads, with_threads
from omni_cli.backends.hf.token2wav_bytes import VocoderBytes
from omni_cli.backends.hf.token2wav_compiled import compile_bigvgan, compile_dit
from omni_cli.backends.hf.token2wav_state import NOISE_GROWTH_FRAMES, VocoderState, Window, bigvgan_calls

__all__ = ["NOISE_GROWTH_FRAMES", "HFVocoder", "VocoderState", "bigvgan_calls"]


class HFVocoder(VocoderBytes, VocoderModel):
    keeps_bytes = True  # oneDNN's primitive cache grows per new input shape
    role = "vocoder"
    sample_rate = 24000

    def __init__(self, loaded: Loaded, params: VocoderParams, name: str = "vocoder", threads: Threads | None = None,
                 on_load: LoadReporter = no_report):
        self.name = name
        self.threads = threads or choose_threads(params.num_threads, 0)
        self.module = loaded.model.token2wav
        self.dit = self.module.code2wav_dit_model
        self.bigvgan = self.module.code2wav_bigvgan_model
        self.vocode = LeanBigVGAN(self.bigvgan)  # BigVGAN's forward, its per-call constants made once
        self.device = loaded.device
        self._voices = loaded.voices
        self.ode = ODESettings(params.dit_num_steps, params.dit_guidance_scale, params.dit_sway_coefficient)
        # block-by-block DiT attention: measured on a CPU only (on a GPU, transformers' attention as it is)
        self.blocked_from = params.dit_block_attention_from if loaded.device.type == "cpu" else 0
        self.repeats = int(self.dit.repeats)  # mel frames per code
        self.block_frames = int(self.dit.block_size)
        self.mel_dim = int(self.dit.mel_dim)
        self.hop = int(np.prod(self.bigvgan.config.upsample_rates))  # samples per mel frame
        self.samples_per_code = self.hop * self.repeats
        self.past_frames = params.chunk_past_frames
        self.future_frames = params.chunk_future_frames
        self.overlap_frames = params.bigvgan_overlap_frames
        # look-ahead mel frames BigVGAN reads past a chunk's end, and kept frames carried to the next chunk
        ahead = params.bigvgan_seam == "lookahead" or params.bigvgan_seam == "stream" and params.bigvgan_stream_fill
        self.seam_frames = self.overlap_frames // 2 if ahead else 0
        self.tail_frames = 0 if params.bigvgan_seam == "stream" else self.overlap_frames - self.seam_frames
        self.bigvgan_batch_frames = params.bigvgan_batch_frames
        # a batch's rows over Python threads
        count = choose_row_threads(params.row_threads, self.threads.count, on_cpu=loaded.device.type == "cpu")
        self.rows = RowThreads(count, self.threads.count)
        if self.future_frames % self.repeats or self.block_frames % self.repeats:
            raise ValueError(f"chunk_future_frames and the DiT block size must be multiples of {self.repeats}")
        self.lookahead_codes = self.future_frames // self.repeats
        # codes of context a window reads besides its chunk's own: the cost of a chunk, whatever its size
        self.context_codes = (self.past_frames + self.future_frames) // self.repeats
        self._features: dict[str, torch.Tensor] = {}  # voice name -> its speaker-encoder output
        # the time embedding's products at each ODE time, for a request alone (voices' cond: float32)
        self.steps = TimeModulation(self.dit, self.ode, self.device, torch.float32)
        # the parts compiled ahead of time or by torch.compile, as the params ask (None: eager)
        self.ahead_failed: dict[str, str] = {}  # part -> why it could not be built (it then runs eager)
        self.bigvgan_ahead = compile_bigvgan(self, params, on_load)
        token2wav_stream.attach(self, params)  # stream: BigVGAN's layers carry their context chunk to chunk
        with intra_op_threads(self.threads.count):  # oneDNN's weight copies and cached primitives per shape
            self.convs = ConvCosts(self.bigvgan, self.mel_dim, self.device, self.threads.count, self.vocode)
        self.ahead, self.compiled = compile_dit(self, params, on_load)

    @property
    def row_threads(self) -> int:
        return self.rows.count

    def _voice_features(self, voice: Voice) -> torch.Tensor:
        features = self._features.get(voice.name)
        if features is None:
            features = self._features[voice.name] = speaker_features(self.dit, voice.ref_mel, self.ode.is_guided)
        return features

    def voices(self) -> list[str]:
        return self._voices.names()

    def new_state(self, voice: str | None, seed: int | None = None) -> VocoderState:
        entry = self._voices.get(voice)
        placed = Voice(entry.name, entry.bos_token, entry.cond.to(self.device), entry.ref_mel.to(self.device))
        generator = torch.Generator().manual_seed(0 if seed is None else seed)  # the engine always gives the request's
        return VocoderState(voice=placed, generator=generator, noise=torch.empty(1, 0, self.mel_dim))

    def weight_bytes(self) -> int:
        return module_bytes(self.module)

    @with_threads
    def run(self, kind: str, inputs: list[VocoderChunkInput]) -> list[VocoderChunkOutput]:
        """A batch of chunks: DiT windows of equal length and voice are integrated as one batch."""
        if kind != AUDIO_CHUNK:
            raise ValueError(f"the vocoder runs audio_chunk WorkUnits, not {kind!r}")
        windows = [self._window(inp) for inp in inputs]
        samples = self._finish(inputs, windows, self._sample(windows))
        return [VocoderChunkOutput(s, None if w is None else w.noise_span) for s, w in zip(samples, windows, strict=True)]

    @with_threads
    def synthesize(self, codes: list[int], voice: str | None = None, seed: int | None = None) -> np.ndarray:
        """Whole-utterance token2wav: one chunk over every code."""
        state = self.new_state(voice, seed)
        return self._chunk(VocoderChunkInput(state=state, codes=codes, start=0, end=len(codes), is_final=True))

    # ---- one chunk ----
    def _chunk(self, inp: VocoderChunkInput) -> np.ndarray:
        windows = [self._window(inp)]
        return self._finish([inp], windows, self._sample(windows))[0]

    @torch.no_grad()
    def _finish(self, inputs: list[VocoderChunkInput], windows: list[Window | None],
                kept: list[torch.Tensor | None]) -> list[np.ndarray]:
        """BigVGAN over each kept mel (after the previous chunk's tail, before any look-ahead context), batched
        where lengths agree; the samples each chunk makes final."""
        if self.stream is not None:
            return token2wav_stream.finish(self, inputs, windows, kept)
        plans, later = zip(*(self._bigvgan_plan(inp, window, mel) for inp, window, mel
                             in zip(inputs, windows, kept, strict=True)), strict=True)
        waves = self._bigvgan(plans)
        # the states move on only now: a batch that raised leaves every request as it was
        return [self._advance(inp, plan, wave, more) for inp, plan, wave, more
                in zip(inputs, plans, waves, later, strict=True)]

    def _bigvgan_plan(self, inp: VocoderChunkInput, window: Window | None, mel: torch.Tensor | None
                      ) -> tuple[tuple, tuple]:
        """What BigVGAN reads for one chunk and which frames it emits: (mel_in, emit_from, emit_to, read_to,
        is_last); and the window's mel kept past the chunk for the chunks after it: (mel, from, to)."""
        state: VocoderState = inp.state
        is_last = inp.is_final and inp.end == len(inp.codes)
        stop = inp.end * self.repeats
        right = 0 if window is None else window.right_to - window.keep_to
        # the window's mel past this chunk, for the chunks up to its window_end; a chunk that used part of
        # such mel leaves the rest
        if window is not None and window.later_to > window.right_to:
            later = (mel[:, :, window.keep_to - window.keep_from:], stop, inp.window_end * self.repeats)
            mel = mel[:, :, :window.right_to - window.keep_from]
        elif window is not None and window.made is not None and stop < state.later_to:
            later = (window.made[:, :, stop - state.later_from:], stop, state.later_to)
        else:
            later = (None, 0, 0)
        pieces = [m for m in (state.mel_tail, mel) if m is not None and m.shape[2]]
        # one piece: the DiT's own view, so a whole utterance reaches BigVGAN as in transformers
        mel_in = None if not pieces else pieces[0] if len(pieces) == 1 else torch.cat(pieces, dim=2)
        emit_from = state.emitted_frames
        emit_to = stop if is_last or self.seam_frames else max(emit_from, stop - self.overlap_frames // 2)
        return (mel_in, emit_from, emit_to, stop + right, is_last), later

    def _bigvgan(self, plans: tuple) -> list[np.ndarray | None]:
        """Each plan's waveform over its mel_in (None: nothing to emit), rows of one length batched."""
        waves: list[np.ndarray | None] = [None] * len(plans)
        groups: dict[int, list[int]] = {}
        for i, (mel_in, emit_from, emit_to, *_) in enumerate(plans):
            if mel_in is not None and emit_to > emit_from:
                groups.setdefault(mel_in.shape[2], []).append(i)
        for frames, same_length in groups.items():
            for first, stop in bigvgan_calls(len(same_length), frames, self.bigvgan_batch_frames, self.rows.count):
                members = same_length[first:stop]
                batch = plans[members[0]][0] if len(members) == 1 else torch.cat([plans[i][0] for i in members])
                parts = self.rows.parts("bigvgan", len(members), frames)
                made = self.rows.map(partial(self._vocode_rows, batch), parts)
                out = (made[0] if len(made) == 1 else torch.cat(made)).float().numpy()
                for a, b in parts:
                    self.convs.ran(b - a, frames, self.threads.count)
                for row, i in enumerate(members):
                    waves[i] = out[row]
        return waves

    def _advance(self, inp: VocoderChunkInput, plan: tuple, wave: np.ndarray | None, later: tuple) -> np.ndarray:
        """The request's state after its chunk, and the samples the chunk makes final."""
        mel_in, emit_from, emit_to, read_to, is_last = plan
        state = inp.state
        state.emitted_frames = emit_to
        state.bigvgan_frames += 0 if wave is None else mel_in.shape[2]
        state.later_mel, state.later_from, state.later_to = later
        if mel_in is not None and self.tail_frames:  # the kept frames before the look-ahead context
            kept_in = mel_in[:, :, :mel_in.shape[2] - (read_to - inp.end * self.repeats)]
            state.mel_tail = kept_in[:, :, -self.tail_frames:]
        else:
            state.mel_tail = None
        state.next_code = inp.end
        state.is_finished = is_last
        if wave is None:
            return np.zeros(0, dtype=np.float32)
        in_first = read_to - mel_in.shape[2]
        piece = wave[(emit_from - in_first) * self.hop:(emit_to - in_first) * self.hop]
        return np.ascontiguousarray(piece, dtype=np.float32)

    def _window(self, inp: VocoderChunkInput) -> Window | None:
        """The DiT window that yields mel frames [2*start, 2*end) of this chunk (None: no frames)."""
        state: VocoderState = inp.state
        start, end, num_codes = inp.start, inp.end, len(inp.codes)
        if state.is_finished or start != state.next_code or not start <= end <= num_codes:
            raise ValueError(f"chunk [{start}, {end}) does not follow [.., {state.next_code}) of {num_codes} codes")
        first, stop = start * self.repeats, end * self.repeats
        if stop <= first:
            return None
        if state.later_mel is not None and first == state.later_from and stop <= state.later_to:
            # the window before made this chunk's mel and its seam's look-ahead: no DiT
            made = state.later_mel
            right_to = min(stop + self.seam_frames, first + made.shape[2]) - first
            return Window(None, None, state.voice, 0, stop - first, right_to, None, made=made)
        available = num_codes * self.repeats
        reach = max(end, inp.window_end or end) * self.repeats  # the window's kept frames end here
        win_first = max(0, (first - self.past_frames) // self.block_frames * self.block_frames)
        win_stop = reach + self.future_frames
        if inp.is_final:
            win_stop = min(win_stop, available)
        elif win_stop > available:
            raise ValueError(f"chunk [{start}, {end}) needs {self.lookahead_codes} codes of look-ahead")
        noise = self._noise(state, win_stop)[:, win_first:win_stop].to(self.device)
        codes = torch.tensor([list(inp.codes[win_first // self.repeats: win_stop // self.repeats])],
                             dtype=torch.long, device=self.device)
        right_to = min(stop + self.seam_frames, win_stop) - win_first
        later_to = min(reach + self.seam_frames, win_stop) - win_first if reach > stop else 0
        return Window(noise, codes, state.voice, first - win_first, stop - win_first, right_to, (win_first, win_stop),
                       later_to)

    @torch.no_grad()
    def _sample(self, windows: list[Window | None]) -> list[torch.Tensor | None]:
        """Each window's mel [1, mel_dim, frames]: its kept frames, then any look-ahead context, then (a window
        reaching past its chunk) the mel kept for the chunks after it; windows of one length and voice run as
        one batch, and a chunk whose mel an earlier window made runs none."""
        groups: dict[tuple, list[int]] = {}
        out: list[torch.Tensor | None] = [None] * len(windows)
        for i, w in enumerate(windows):
            if w is not None and w.made is not None:
                out[i] = w.made[:, :, w.keep_from:w.right_to]
            elif w is not None:
                groups.setdefault((w.noise.shape[1], w.voice.name), []).append(i)
        for members in groups.values():
            ws = [windows[i] for i in members]
            voice = ws[0].voice
            features = self._voice_features(voice)
            if len(ws) == 1:  # alone: the call whose whole-utterance form equals transformers (eager, no files)
                mel = sample_window(self.dit, ws[0].noise, ws[0].codes, voice.cond, features, self.ode, self.steps,
                                    self.blocked_from, self.compiled, self.ahead)
            else:
                noise, codes = torch.cat([w.noise for w in ws]), torch.cat([w.codes for w in ws])
                parts = self.rows.parts("dit", len(ws), noise.shape[1])
                made = self.rows.map(partial(self._sample_rows, noise, codes, voice, features), parts)
                mel = made[0] if len(made) == 1 else torch.cat(made)
            for row, (i, w) in enumerate(zip(members, ws, strict=True)):
                out[i] = mel[row:row + 1, :, w.keep_from:max(w.right_to, w.later_to)]
        return out

    def _sample_rows(self, noise: torch.Tensor, codes: torch.Tensor, voice: Voice, features: torch.Tensor,
                     start: int, stop: int) -> torch.Tensor:
        """Rows [start, stop) of a batch of windows of one length and voice (a part for `self.rows`)."""
        return sample_window(self.dit, noise[start:stop], codes[start:stop], voice.cond.expand(stop - start, -1),
                             features, self.ode, self.steps, self.blocked_from, self.compiled, self.ahead)

    def _vocode_rows(self, mel: torch.Tensor, start: int, stop: int) -> torch.Tensor:
        """BigVGAN over rows [start, stop) of a batch of mel of one length, one row of samples each."""
        return self.vocode(mel[start:stop]).reshape(stop - start, -1)

    def _noise(self, state: VocoderState, frames: int) -> torch.Tensor:
        drawn = state.noise.shape[1]
        if drawn < frames:
            more = -(-(frames - drawn) // NOISE_GROWTH_FRAMES) * NOISE_GROWTH_FRAMES
            extra = torch.randn([1, more, self.mel_dim], generator=state.generator, dtype=torch.float32)
            state.noise = torch.cat([state.noise, extra], dim=1)
        return state.noise
