"""token2wav's memory, as the engine's budget asks for it: a request's state, a chunk's step alone, a batch's."""

from __future__ import annotations

from omni_cli.backends.hf.token2wav_state import NOISE_GROWTH_FRAMES, ChunkBytes, bigvgan_calls


class VocoderBytes:
    """The sizing half of `HFVocoder` (its geometry: repeats, frames, overlap; its dit, bigvgan, convs, rows)."""

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
