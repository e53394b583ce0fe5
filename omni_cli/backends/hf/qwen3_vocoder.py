"""The Qwen3-Omni vocoder: Code2Wav over codec frames, one audio_chunk WorkUnit per chunk, each frame decoded once."""

from __future__ import annotations

import numpy as np
import torch

from omni_cli.backends.base import AUDIO_CHUNK, VocoderChunkInput, VocoderChunkOutput, VocoderModel
from omni_cli.backends.hf.ar import module_bytes, or_error
from omni_cli.backends.hf.code2wav import Code2WavStream, decode_chunks, new_stream
from omni_cli.backends.hf.params import VocoderParams
from omni_cli.backends.hf.qwen3_loading import Qwen3Loaded
from omni_cli.backends.hf.threads import Threads, choose_threads, with_threads


class Qwen3Vocoder(VocoderModel):
    """A chunk's frames (each a tuple of every codebook group's code) through `code2wav.decode_chunks`: the
    request's state carries the transformer's cache and each convolution's left context, so no look-ahead and no
    re-decoded context (`lookahead_codes` and `context_codes` are 0). Several requests' chunks of one length run
    their convolutions as one batch."""

    role = "vocoder"
    sample_rate = 24000
    lookahead_codes = 0
    context_codes = 0

    def __init__(self, loaded: Qwen3Loaded, params: VocoderParams, name: str = "vocoder", threads: Threads | None = None,
                 card_threads: int = 0):
        self.name = name
        self.threads = threads or choose_threads(params.num_threads, card_threads)
        self.module = loaded.model.code2wav
        self.device = loaded.device
        self._voices = loaded.voices
        self.config = self.module.config
        self.num_groups = int(self.config.num_quantizers)
        self.samples_per_code = int(self.module.total_upsample)

    def voices(self) -> list[str]:
        return self._voices.names()

    def new_state(self, voice: str | None, seed: int | None = None) -> Code2WavStream:
        self._voices.codec_id(voice)  # an unknown voice fails here, before any chunk
        return new_stream(self.module)

    def weight_bytes(self) -> int:
        return module_bytes(self.module)

    def state_bytes(self, max_codes: int | None = None) -> int:
        """The transformer's window of keys and values and each convolution's left context: a bound that does not
        grow with the utterance."""
        cfg = self.config
        kv = 2 * cfg.num_hidden_layers * cfg.sliding_window * cfg.hidden_size * 4
        return kv + 64 * cfg.decoder_dim * 4 * len(list(self.module.modules()))

    def step_bytes(self, num_codes: int, *, start: int | None = None, is_final: bool = False) -> int:
        """The widest activations of a chunk: the decoder's channels times its samples, a few copies."""
        samples = max(1, num_codes) * self.samples_per_code
        return 4 * samples * self.config.decoder_dim * 4 + 8 * num_codes * self.config.hidden_size * 4

    def batch_step_bytes(self, kind: str, step_bytes: list[int]) -> int:
        return sum(step_bytes)  # chunks of one length run as one batch

    def kept_bytes(self) -> int:
        return 0

    @with_threads
    def run(self, kind: str, inputs: list[VocoderChunkInput]) -> list[VocoderChunkOutput]:
        if kind != AUDIO_CHUNK:
            raise ValueError(f"the vocoder runs audio_chunk WorkUnits, not {kind!r}")
        outputs: list = [None] * len(inputs)
        groups: dict[tuple[int, bool], list[int]] = {}
        for i, inp in enumerate(inputs):  # chunks of one length (first chunks apart) run as one batch
            problem = self._problem(inp)
            if problem is not None:
                outputs[i] = problem
            else:
                groups.setdefault((inp.end - inp.start, inp.state.num_frames == 0), []).append(i)
        for rows in groups.values():
            made = or_error(self._chunks, [inputs[i] for i in rows])
            for j, i in enumerate(rows):  # a batch that raised: each of its requests gets the error
                outputs[i] = made if isinstance(made, Exception) else made[j]
        return outputs

    @staticmethod
    def _problem(inp: VocoderChunkInput) -> Exception | None:
        stream: Code2WavStream = inp.state
        if inp.start != stream.num_frames or inp.end <= inp.start:
            return ValueError(f"Code2Wav chunks run in order: the next frame is {stream.num_frames}, "
                              f"not {inp.start} (to {inp.end})")
        return None

    @torch.no_grad()
    def _chunks(self, inputs: list[VocoderChunkInput]) -> list[VocoderChunkOutput]:
        chunks = [torch.tensor([inp.codes[i] for i in range(inp.start, inp.end)], dtype=torch.long,
                               device=self.device).T[None] for inp in inputs]  # each [1, groups, n]
        made = decode_chunks(self.module, chunks, [inp.state for inp in inputs])
        return [VocoderChunkOutput(s.reshape(-1).float().cpu().numpy().astype(np.float32)) for s in made]

    def _chunk(self, inp: VocoderChunkInput) -> VocoderChunkOutput:
        problem = self._problem(inp)
        if problem is not None:
            raise problem
        return self._chunks([inp])[0]

    @with_threads
    def synthesize(self, frames: list[tuple[int, ...]], voice: str | None = None, seed: int | None = None) -> np.ndarray:
        """Whole-utterance Code2Wav: one chunk over every frame."""
        if not frames:
            return np.zeros(0, np.float32)
        return self._chunk(VocoderChunkInput(self.new_state(voice), frames, 0, len(frames), True)).samples
