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
# One chunk covering the whole utterance is exactly transformers' `Qwen2_5OmniToken2WavModel` either way.
#
# Noise: torch's CPU normal stream is prefix-stable (drawing frames block by block gives the frames
# of one draw), so each request draws its noise lazily from its own seeded CPU generator and gets
# what transformers draws after `torch.manual_seed(seed)`. CUDA's stream is not prefix-stable, so
# the noise comes from the CPU on every device (on CUDA it then differs from `generate`'s).

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import torch

from omni_cli.backends.base import (
    AUDIO_CHUNK,
    LoadReporter,
    LoadStep,
    VocoderChunkInput,
    VocoderChunkOutput,
    VocoderModel,
    no_report,
)
from omni_cli.backends.hf import aoti, bigvgan_aot
from omni_cli.backends.hf.ar import module_bytes
from omni_cli.backends.hf.bigvgan import LeanBigVGAN
from omni_cli.backends.hf.dit import DiTCompile, ODESettings, TimeModulation, sample_window, speaker_features
from omni_cli.backends.hf.dit_aot import DiTAheadOfTime, example_inputs, forms_for, load_or_build
from omni_cli.backends.hf.loading import Loaded, Voice
from omni_cli.backends.hf.onednn import ConvCosts
from omni_cli.backends.hf.params import VocoderParams
from omni_cli.backends.hf.rows import RowThreads, choose_row_threads
from omni_cli.backends.hf.threads import Threads, choose_threads, intra_op_threads, with_threads

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
class _Window:
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
    is_finished: bool = False


class HFVocoder(VocoderModel):
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
        self.seam_frames = self.overlap_frames // 2 if params.bigvgan_seam == "lookahead" else 0
        self.tail_frames = self.overlap_frames - self.seam_frames
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
        # BigVGAN's activations through one function compiled ahead of time (bigvgan_ahead_of_time)
        self.bigvgan_ahead: aoti.CompiledFile | None = None
        self.ahead_failed: dict[str, str] = {}  # part -> why it could not be built (it then runs eager)
        if params.bigvgan_ahead_of_time and bigvgan_aot.applies(self.vocode):
            fir = self.vocode.post
            self.bigvgan_ahead = self._ahead_of_time(
                "BigVGAN", on_load, lambda building: bigvgan_aot.load_or_build(
                    fir, self.threads.count, building, models=self.rows.count))
            if self.bigvgan_ahead is not None:
                file = self.bigvgan_ahead
                self.vocode.use(lambda act: bigvgan_aot.CompiledActivation(act, file))
        with intra_op_threads(self.threads.count):  # oneDNN's weight copies and cached primitives per shape
            self.convs = ConvCosts(self.bigvgan, self.mel_dim, self.device, self.threads.count, self.vocode)
        self.ahead: DiTAheadOfTime | None = None  # the velocity compiled ahead of time (dit_ahead_of_time)
        if params.dit_ahead_of_time and loaded.device.type == "cpu":
            voice = self.new_state(self.voices()[0]).voice

            def example(form: str) -> list[torch.Tensor]:
                return example_inputs(self.dit, voice.cond, self._voice_features(voice), self.ode, self.steps, form)

            forms = forms_for(self.dit, self.blocked_from)
            self.ahead = self._ahead_of_time("DiT", on_load, lambda building: load_or_build(
                self.dit, self.threads.count, example, forms, building, models=self.rows.count))
        self.compiled: DiTCompile | None = None  # the DiT's velocity compiled (dit_compile), else eager
        # (where the files compiled ahead of time loaded, they run every window with two rows or more: not this)
        if params.dit_compile and loaded.device.type == "cpu" and self.ahead is None:  # measured on a CPU only
            on_load(LoadStep("compiling the DiT (cached after the first time)"))
            compiled = DiTCompile()
            voice = self.new_state(self.voices()[0]).voice
            with intra_op_threads(self.threads.count):  # inductor's loops take the count they are compiled under
                compiled.warm(self.dit, voice.cond, self._voice_features(voice), self.ode, self.steps, self.blocked_from)
            self.compiled = compiled

    def _ahead_of_time(self, part: str, on_load: LoadReporter, make: Any) -> Any:
        """`make(building)`: a part's file from the cache, or built now (`building(path)` says so and where it
        goes). A machine where it cannot be built or loaded (no C++ compiler for inductor) runs the part eager,
        as without it, and the load says why (kept in `ahead_failed`)."""
        def building(path) -> None:
            on_load(LoadStep(f"compiling the {part} ahead of time, once for this machine (into {path.parent})"))

        try:
            with intra_op_threads(self.threads.count):  # the loops are made for the count they run with
                return make(building)
        except Exception as error:  # noqa: BLE001 - any failure leaves the eager part, which is correct
            text = str(error).strip()
            reason = f"{type(error).__name__}: {text.splitlines()[0] if text else ''}"
            self.ahead_failed[part] = reason
            on_load(LoadStep(f"the {part} runs uncompiled: its ahead-of-time file could not be built or loaded "
                             f"({reason[:160]})", note=True))
            return None

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

    def state_bytes(self, max_codes: int | None = None) -> int:
        """The noise drawn up to the last window's end (in NOISE_GROWTH_FRAMES blocks) for an utterance of
        `max_codes` codes (None: one minute), and the BigVGAN overlap carried between chunks."""
        codes = max_codes if max_codes is not None else 60 * self.sample_rate // self.samples_per_code
        frames = codes * self.repeats + self.future_frames
        frames = -(-frames // NOISE_GROWTH_FRAMES) * NOISE_GROWTH_FRAMES
        return (frames + self.overlap_frames) * self.mel_dim * 4

    def step_bytes(self, num_codes: int, *, start: int | None = None, is_final: bool = False) -> ChunkBytes:
        """A chunk alone (`is_final`: it ends at the utterance's last code, so its window and BigVGAN read no
        look-ahead): the larger of the DiT's activations over its window and BigVGAN's, which upsamples
        the kept frames plus the overlap it reads around them, copies the weight of each convolution oneDNN runs
        (the widest dominates short chunks) and, at a length it has not run, leaves oneDNN primitives
        cached (onednn.py)."""
        kept = num_codes * self.repeats
        if start is None:  # anywhere in the utterance: the most context a window can have
            before, overlap = self.past_frames + self.block_frames, self.overlap_frames
        else:
            first = start * self.repeats
            before = first - max(0, (first - self.past_frames) // self.block_frames * self.block_frames)
            overlap = min(self.tail_frames, first) + (0 if is_final else self.seam_frames)
        frames = before + kept + (0 if is_final else self.future_frames)
        dit_cfg = self.dit.config
        dit = 2 * frames * (8 * dit_cfg.hidden_size + dit_cfg.num_attention_heads * frames) * 4
        act, channels, length = 0, self.bigvgan.config.upsample_initial_channel, kept + overlap
        for rate in self.bigvgan.config.upsample_rates:
            channels, length = channels // 2, length * rate
            act = max(act, 6 * channels * length * 4)  # anti-aliased activations upsample 2x
        frames = kept + overlap
        bigvgan = self._bigvgan_bytes(1, frames) + act
        return ChunkBytes(max(dit, bigvgan), dit, act, frames)

    def _bigvgan_bytes(self, batch: int, frames: int) -> int:
        count = self.threads.count
        return self.convs.reorder_bytes(batch, frames, count) + self.convs.cache_bytes(batch, frames, count)

    def kept_bytes(self) -> int:
        return self.convs.kept_bytes() + self.steps.bytes

    def batch_step_bytes(self, kind: str, step_bytes: list[int]) -> int:
        """The DiT's windows integrate together, then BigVGAN runs once per group of equal length (as
        `_finish` groups them): one weight copy per row thread alive at a time, the primitives of each new shape
        kept."""
        if len(step_bytes) == 1 or not all(isinstance(s, ChunkBytes) for s in step_bytes):
            return step_bytes[0] if len(step_bytes) == 1 else sum(step_bytes)
        groups: dict[int, list[int]] = {}
        for s in step_bytes:
            groups.setdefault(s.frames, []).append(s.act)
        kept, peak = 0, 0
        for frames, acts in groups.items():
            for first, stop in bigvgan_calls(len(acts), frames, self.bigvgan_batch_frames, self.rows.count):
                count = self.threads.count
                parts = self.rows.parts("bigvgan", stop - first, frames)  # run at once, each with its weight copy
                kept += sum(self.convs.cache_bytes(b - a, frames, count) for a, b in parts)  # kept after the call
                reorder = sum(self.convs.reorder_bytes(b - a, frames, count) for a, b in parts)
                peak = max(peak, kept + reorder + sum(acts[first:stop]))
        return max(sum(s.dit for s in step_bytes), peak)

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
    def _finish(self, inputs: list[VocoderChunkInput], windows: list[_Window | None],
                kept: list[torch.Tensor | None]) -> list[np.ndarray]:
        """BigVGAN over each kept mel (after the previous chunk's tail, before any look-ahead context), batched
        where lengths agree; the samples each chunk makes final."""
        plans, later = [], []
        for inp, window, mel in zip(inputs, windows, kept, strict=True):
            state: VocoderState = inp.state
            is_last = inp.is_final and inp.end == len(inp.codes)
            stop = inp.end * self.repeats
            right = 0 if window is None else window.right_to - window.keep_to
            # the window's mel past this chunk, for the chunks up to its window_end; a chunk that used part of
            # such mel leaves the rest
            if window is not None and window.later_to > window.right_to:
                later.append((mel[:, :, window.keep_to - window.keep_from:], stop, inp.window_end * self.repeats))
                mel = mel[:, :, :window.right_to - window.keep_from]
            elif window is not None and window.made is not None and stop < state.later_to:
                later.append((window.made[:, :, stop - state.later_from:], stop, state.later_to))
            else:
                later.append((None, 0, 0))
            pieces = [m for m in (state.mel_tail, mel) if m is not None and m.shape[2]]
            # one piece: the DiT's own view, so a whole utterance reaches BigVGAN as in transformers
            mel_in = None if not pieces else pieces[0] if len(pieces) == 1 else torch.cat(pieces, dim=2)
            emit_from = state.emitted_frames
            emit_to = stop if is_last or self.seam_frames else max(emit_from, stop - self.overlap_frames // 2)
            plans.append((mel_in, emit_from, emit_to, stop + right, is_last))
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
        samples = []
        # the states move on only now: a batch that raised leaves every request as it was
        for inp, (mel_in, emit_from, emit_to, read_to, is_last), wave, (later_mel, later_from, later_to) in zip(
                inputs, plans, waves, later, strict=True):
            state = inp.state
            state.emitted_frames = emit_to
            state.later_mel, state.later_from, state.later_to = later_mel, later_from, later_to
            if mel_in is not None and self.tail_frames:  # the kept frames before the look-ahead context
                kept_in = mel_in[:, :, :mel_in.shape[2] - (read_to - inp.end * self.repeats)]
                state.mel_tail = kept_in[:, :, -self.tail_frames:]
            else:
                state.mel_tail = None
            state.next_code = inp.end
            state.is_finished = is_last
            if wave is None:
                samples.append(np.zeros(0, dtype=np.float32))
                continue
            in_first = read_to - mel_in.shape[2]
            piece = wave[(emit_from - in_first) * self.hop:(emit_to - in_first) * self.hop]
            samples.append(np.ascontiguousarray(piece, dtype=np.float32))
        return samples

    def _window(self, inp: VocoderChunkInput) -> _Window | None:
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
            return _Window(None, None, state.voice, 0, stop - first, right_to, None, made=made)
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
        return _Window(noise, codes, state.voice, first - win_first, stop - win_first, right_to, (win_first, win_stop),
                       later_to)

    @torch.no_grad()
    def _sample(self, windows: list[_Window | None]) -> list[torch.Tensor | None]:
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
