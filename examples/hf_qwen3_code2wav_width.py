"""Qwen3-Omni's Code2Wav at its released widths (random weights): streamed chunks against the whole forward.

    python examples/hf_qwen3_code2wav_width.py [--frames 90] [--threads 2]

Builds `Qwen3OmniMoeCode2Wav` from the default `Qwen3OmniMoeCode2WavConfig` (hidden 1024, 8 sliding-window
layers of 72 frames, upsampling (2, 2) then (8, 5, 4, 3): 1,920 samples a frame, 16 codebooks; about 216 M
parameters), decodes `--frames` random frames whole, then streamed (code2wav.decode_chunk, state carried) at two
chunk schedules, and prints each one's time and largest difference from the whole forward.
"""

from __future__ import annotations

import argparse
import time

import torch
from transformers.models.qwen3_omni_moe.configuration_qwen3_omni_moe import Qwen3OmniMoeCode2WavConfig
from transformers.models.qwen3_omni_moe.modeling_qwen3_omni_moe import Qwen3OmniMoeCode2Wav

from omni_cli.backends.hf.code2wav import decode_chunk, new_stream


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--frames", type=int, default=90)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = Qwen3OmniMoeCode2Wav(Qwen3OmniMoeCode2WavConfig()).eval()
    print(f"{sum(p.numel() for p in model.parameters()) / 1e6:.0f} M parameters, {model.total_upsample} samples a frame")
    codes = torch.randint(0, model.config.codebook_size, (1, model.config.num_quantizers, args.frames))
    with torch.no_grad():
        start = time.perf_counter()
        whole = model(codes)
        print(f"whole: {whole.shape[-1]} samples in {time.perf_counter() - start:.1f} s")
        for sizes in ([1, 2, 4, 8, 24], [13, 30, 47]):
            stream, pieces, first, index = new_stream(model), [], 0, 0
            start = time.perf_counter()
            while first < args.frames:
                size = sizes[min(index, len(sizes) - 1)]
                pieces.append(decode_chunk(model, codes[..., first:first + size], stream))
                first, index = first + size, index + 1
            streamed = torch.cat(pieces, dim=-1)
            print(f"chunks {sizes}: {streamed.shape[-1]} samples in {time.perf_counter() - start:.1f} s, "
                  f"{stream.num_frames} frames decoded, largest difference {(streamed - whole).abs().max().item():.2e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
