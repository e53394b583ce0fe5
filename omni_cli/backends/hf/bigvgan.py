"""BigVGAN's forward with the anti-aliased activations' constants made once: the same samples, fewer ops.

transformers' `Qwen2_5OmniAntiAliasedActivation1d` recomputes on every call what does not change between
calls: the snake's exp(alpha) and 1 / (exp(beta) + eps), its low-pass filters expanded to the channels, and
the upsampled signal multiplied by the ratio. That is about 18 tensor ops per activation, and a forward
runs 6 * 3 * 6 + 1 = 109 activations: on the tiny checkpoint a fixed ~50 ms per BigVGAN call, which a
streamed utterance pays once per chunk. `LeanBigVGAN` computes those constants once and runs
transformers' forward otherwise op for op: pad, transposed convolution, slice, snake (mul, sin, pow, mul,
add), pad, convolution. Scaling the upsampling filter by the ratio (2) instead of its output is exact in
binary floating point (every product and partial sum is doubled exactly), so the samples are bit-equal
to transformers' (tests/hf/test_hf_bigvgan_lean.py); the module itself is left untouched.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F


class _Activation:
    """One anti-aliased snake activation with its per-call constants made once."""

    def __init__(self, module: Any, channels: int):
        up, snake, down = module.upsample, module.act, module.downsample
        self.up_pad, self.up_stride = up.pad, up.stride
        self.up_left, self.up_right = up.pad_left, up.pad_right
        self.down_left, self.down_right, self.down_stride = down.pad_left, down.pad_right, down.stride
        self.channels = channels
        with torch.no_grad():
            self.alpha = torch.exp(snake.alpha.unsqueeze(0).unsqueeze(-1))
            self.inv_beta = 1.0 / (torch.exp(snake.beta.unsqueeze(0).unsqueeze(-1)) + snake.no_div_by_zero)
            self.up_filter = (up.filter * up.ratio).expand(channels, -1, -1).contiguous()
            self.down_filter = down.filter.expand(channels, -1, -1).contiguous()

    def __call__(self, hidden: torch.Tensor) -> torch.Tensor:
        hidden = F.pad(hidden, (self.up_pad, self.up_pad), mode="replicate")
        hidden = F.conv_transpose1d(hidden, self.up_filter, stride=self.up_stride, groups=self.channels)
        hidden = hidden[..., self.up_left:-self.up_right]
        hidden = hidden + self.inv_beta * torch.pow(torch.sin(hidden * self.alpha), 2)
        hidden = F.pad(hidden, (self.down_left, self.down_right), mode="replicate")
        return F.conv1d(hidden, self.down_filter, stride=self.down_stride, groups=self.channels)


class LeanBigVGAN:
    """`Qwen2_5OmniToken2WavBigVGANModel.forward` with lean activations; callable like the module."""

    def __init__(self, module: Any):
        self.module = module
        channels = module.config.upsample_initial_channel
        self.blocks: list[list[tuple[Any, Any, _Activation, _Activation]]] = []  # per upsampling layer
        for layer in range(module.num_upsample_layers):
            channels //= 2
            self.blocks.append([])
            for index in range(module.num_residual_blocks):
                block = module.resblocks[layer * module.num_residual_blocks + index]
                acts = [_Activation(a, channels) for a in block.activations]
                self.blocks[-1].append(list(zip(block.convs1, block.convs2, acts[::2], acts[1::2], strict=True)))
        self.post = _Activation(module.activation_post, channels)

    def __call__(self, mel: torch.Tensor) -> torch.Tensor:
        module = self.module
        hidden = module.conv_pre(module.process_mel_spectrogram(mel))
        for layer, blocks in enumerate(self.blocks):
            hidden = module.ups[layer][0](hidden)
            hidden = sum(self._block(hidden, block) for block in blocks) / module.num_residual_blocks
        hidden = module.conv_post(self.post(hidden))
        return torch.clamp(hidden, min=-1.0, max=1.0).squeeze().cpu()

    @staticmethod
    def _block(hidden: torch.Tensor, block: list) -> torch.Tensor:
        for conv1, conv2, act1, act2 in block:
            residual = hidden
            hidden = residual + conv2(act2(conv1(act1(hidden))))
        return hidden
