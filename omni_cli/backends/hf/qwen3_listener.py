"""Qwen3-Omni's audio encoder stepped one attention window at a time, on the log-mel frames listener.py makes.

`Qwen3OmniMoeAudioEncoder` convolves each chunk of 2 * n_window mel frames alone (its positions restart per chunk)
and attends within windows of n_window_infer frames counted from the clip's start (`get_audio_cu_seqlens`: a window
is max-chunk-rows x n_window_infer / (2 * n_window) rows, every chunk but the last being full). So a block of
n_window_infer frames encoded alone is the whole clip's rows for it, and the last block (the remainder, whatever
its length) is the clip's last window: block by block equals the whole clip, as for Qwen2.5-Omni's 2-second blocks.
"""

from __future__ import annotations

import torch

from omni_cli.backends.hf.listener import HFAudioEncoder, ListenerUnavailable

ROWS_PER_CHUNK = 13  # rows of a full 100-frame chunk after the three stride-2 convolutions (transformers' constant)


class Qwen3AudioEncoder(HFAudioEncoder):
    """The thinker's audio tower of a Qwen3-Omni checkpoint as the audio_encode loop's component."""

    @staticmethod
    def frames_per_block(config) -> int:
        chunk, window = 2 * int(config.n_window), int(config.n_window_infer)
        if chunk != 100 or window % chunk:
            raise ListenerUnavailable(f"the audio tower attends in windows of {window} mel frames over chunks of "
                                      f"{chunk}: block by block needs chunks of 100 and windows a multiple of them")
        return window

    def rows_for(self, frames: int) -> int:
        """Audio positions of `frames` mel frames (transformers' `_get_feat_extract_output_lengths`)."""
        leave = frames % 100
        return ((((leave - 1) // 2 + 1) - 1) // 2 + 1 - 1) // 2 + 1 + (frames // 100) * ROWS_PER_CHUNK

    def tokens_for(self, num_samples: int) -> int:
        return self.rows_for(self.frames_for(min(num_samples, self.max_samples)))

    def encode(self, mel: torch.Tensor) -> torch.Tensor:
        """One block's [n_mels, f] log-mel frames through the tower: [rows, thinker width]."""
        f = mel.shape[1]
        if self.rows_for(f) <= 0:
            return self._rows(0)
        lens = torch.tensor([f], device=self.device)
        return self.tower(mel.to(self.device, self.dtype), feature_lens=lens).last_hidden_state
