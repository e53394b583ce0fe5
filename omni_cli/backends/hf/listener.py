"""Qwen2.5-Omni's audio tower stepped one `n_window` block at a time, on log-mel frames made as the audio arrives.

The tower attends within chunks of 2 * n_window mel frames (conv1/conv2 pad each chunk alone), and with n_window
even its stride-2 pooling never pairs rows of two chunks: a block encoded alone is the whole clip's rows for it.
The log-mel frames are WhisperFeatureExtractor's (the checkpoint's preprocessor_config.json), with one difference a
stream cannot avoid: Whisper floors every value at the clip's maximum minus 8 (log10 units: 80 dB), and a stream
knows only the maximum so far. Each block floors at the maximum up to its end, which is at most the clip's: a value
differs from the whole clip's only where it lies more than 80 dB below the clip's loudest frame.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from omni_cli.backends.base import AUDIO_BLOCK, AudioBlockInput, AudioBlockOutput, AudioEncoderModel
from omni_cli.backends.hf import kept_rows
from omni_cli.backends.hf.ar import module_bytes
from omni_cli.backends.hf.loading import Loaded
from omni_cli.backends.hf.threads import Threads, choose_threads, with_threads

FEATURE_FILE = "preprocessor_config.json"
FLOOR_LOG10 = 8.0  # Whisper's dynamic range below the clip's maximum, in log10 units (80 dB)


class ListenerUnavailable(ValueError):
    """The checkpoint lacks what hearing needs (its feature extractor's config)."""


@dataclass
class FloorState:
    """One request's loudest log10 mel value so far (the stream's floor is this minus FLOOR_LOG10)."""

    max_log10: float = -np.inf


class HFAudioEncoder(AudioEncoderModel):
    """The thinker's audio tower as an input loop's component: block k is mel frames [k * B, (k + 1) * B) with
    B = 2 * n_window, which need samples up to B * hop + n_fft / 2 past the block's start."""

    role = "audio_encoder"

    def __init__(self, loaded: Loaded, model_path: str, name: str = "audio_encoder", threads: Threads | None = None,
                 num_threads: int = 0):
        self.name = name
        self.threads = threads or choose_threads(num_threads, 0)
        self.tower = loaded.model.thinker.model.audio_tower
        self.device, self.dtype = loaded.device, loaded.dtype
        fe = _feature_config(Path(model_path).expanduser())
        self.sample_rate = int(fe["sampling_rate"])
        self.hop = int(fe["hop_length"])
        self.n_fft = int(fe["n_fft"])
        self.max_samples = int(fe.get("chunk_length", 30)) * self.sample_rate  # Whisper pads (and cuts) to this
        self.mel_filters = torch.tensor(np.asarray(fe["mel_filters"], dtype=np.float32))  # [n_fft/2 + 1, n_mels]
        if self.mel_filters.shape[1] != self.tower.config.num_mel_bins:
            raise ListenerUnavailable(f"{FEATURE_FILE} makes {self.mel_filters.shape[1]} mel bins, the audio tower "
                                      f"reads {self.tower.config.num_mel_bins}")
        self.block_frames = self.frames_per_block(self.tower.config)
        self.block_samples = self.block_frames * self.hop
        self.window = torch.hann_window(self.n_fft)
        self.model_path, self._identity = model_path, None

    @staticmethod
    def frames_per_block(config) -> int:
        """Mel frames a block encoded alone covers: the tower's attention chunk, 2 * n_window."""
        n_window = int(config.n_window)
        if n_window % 2:
            raise ListenerUnavailable(f"the audio tower's n_window is {n_window}: block by block needs it even")
        return 2 * n_window

    # resources
    def weight_bytes(self) -> int:
        return module_bytes(self.tower)

    def new_state(self) -> FloorState:
        return FloorState()

    def step_bytes(self, num_samples: int) -> int:
        frames = num_samples // self.hop + 1
        width = int(self.tower.config.d_model)
        return 4 * (num_samples + frames * (self.n_fft + 8 * width)) + 4 * frames * frames

    def frames_for(self, num_samples: int) -> int:
        """Mel frames Whisper's attention mask keeps for a clip of `num_samples` (one per started hop)."""
        return -(-num_samples // self.hop)

    def tokens_for(self, num_samples: int) -> int:
        frames = self.frames_for(min(num_samples, self.max_samples))
        return 0 if frames == 0 else ((frames - 1) // 2 + 1 - 2) // 2 + 1

    # rows kept across runs
    def identity(self) -> dict:
        if self._identity is None:
            settings = {"sampling_rate": self.sample_rate, "hop_length": self.hop, "n_fft": self.n_fft,
                        "max_samples": self.max_samples, "mel_filters": kept_rows.array_digest(self.mel_filters),
                        "floor_log10": FLOOR_LOG10, "block_frames": self.block_frames}
            self._identity = kept_rows.tower_identity(self, self.tower, self.model_path, settings)
        return self._identity

    def rows_to_numpy(self, rows: torch.Tensor) -> np.ndarray:
        return kept_rows.rows_to_numpy(rows)

    def rows_from_numpy(self, array: np.ndarray) -> torch.Tensor:
        return kept_rows.rows_from_numpy(array, self.device, self.dtype)

    # work
    @with_threads
    @torch.no_grad()
    def run(self, kind: str, inputs: list[AudioBlockInput]) -> list[AudioBlockOutput]:
        if kind != AUDIO_BLOCK:
            raise ValueError(f"the audio encoder runs audio_block WorkUnits, not {kind!r}")
        return [self._block(i) for i in inputs]

    def _block(self, inp: AudioBlockInput) -> AudioBlockOutput:
        half = self.n_fft // 2
        # the block's frames are centred on its hops: half a window on each side (reflected before the clip's start)
        got = inp.source.read(self.sample_rate, max(0, inp.start - half), inp.stop + half)
        first, arrived = max(0, inp.start - half), None
        arrived = first + len(got)
        num_samples = max(0, min(arrived, inp.stop) - inp.start)
        total = arrived if arrived < inp.stop + half else None  # the clip's length, once the audio has ended
        frames = self.block_frames if total is None else min(self.block_frames,
                                                             self.frames_for(total) - inp.start // self.hop)
        if frames <= 0:
            return AudioBlockOutput(self._rows(0), num_samples)
        mel = self.log_mel(got, inp.start - first, frames, inp.state)
        return AudioBlockOutput(self.encode(mel), num_samples)

    def log_mel(self, samples: np.ndarray, offset: int, frames: int, state: FloorState) -> torch.Tensor:
        """[n_mels, frames] of the frames centred at samples offset, offset + hop, ... of `samples` (whose first
        sample is the clip's when offset < n_fft / 2: reflected there, as Whisper's centred STFT does); zeros
        past the end, as Whisper's padding to 30 s gives; floored at the running maximum minus 80 dB."""
        half = self.n_fft // 2
        x = torch.from_numpy(np.ascontiguousarray(samples, dtype=np.float32))
        if offset < half:  # the clip's start: reflect, as torch.stft(center=True, pad_mode="reflect")
            x = torch.cat([x[1:half - offset + 1].flip(0), x])
            offset = half
        need = offset - half + (frames - 1) * self.hop + self.n_fft
        x = torch.nn.functional.pad(x, (0, max(0, need - len(x))))[offset - half:need]
        stft = torch.stft(x, self.n_fft, self.hop, window=self.window, center=False, return_complex=True)
        power = stft.abs() ** 2  # [n_fft/2 + 1, frames]
        log_spec = torch.clamp(self.mel_filters.T @ power, min=1e-10).log10()
        state.max_log10 = max(state.max_log10, float(log_spec.max()))
        log_spec = torch.maximum(log_spec, torch.tensor(state.max_log10 - FLOOR_LOG10))
        return (log_spec + 4.0) / 4.0

    def encode(self, mel: torch.Tensor) -> torch.Tensor:
        """One block's [n_mels, f] log-mel frames through the tower: [rows, thinker width]."""
        f = mel.shape[1]
        if ((f - 1) // 2 + 1 - 2) // 2 + 1 <= 0:
            return self._rows(0)
        lens = torch.tensor([f], device=self.device)
        out = self.tower(mel.to(self.device, self.dtype), feature_lens=lens, aftercnn_lens=(lens - 1) // 2 + 1)
        return out.last_hidden_state

    def _rows(self, n: int) -> torch.Tensor:
        return torch.zeros(n, int(self.tower.config.output_dim), dtype=self.dtype, device=self.device)


def _feature_config(path: Path) -> dict:
    """The checkpoint's WhisperFeatureExtractor settings, with its mel filters; refused in one line when missing."""
    file = path / FEATURE_FILE
    if not file.is_file():
        raise ListenerUnavailable(f"{path} has no {FEATURE_FILE}: the audio encoder needs the checkpoint's feature "
                                  "extractor (WhisperFeatureExtractor) to hear")
    from transformers import WhisperFeatureExtractor

    fe = WhisperFeatureExtractor.from_pretrained(str(path))
    config = json.loads(file.read_text())
    return {**config, "sampling_rate": fe.sampling_rate, "hop_length": fe.hop_length, "n_fft": fe.n_fft,
            "chunk_length": fe.chunk_length, "mel_filters": fe.mel_filters}
