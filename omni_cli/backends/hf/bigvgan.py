"""BigVGAN's forward with the anti-aliased activations made cheap: the same samples, less time.

transformers' `Qwen2_5OmniAntiAliasedActivation1d` recomputes on every call what does not change between
calls: the snake's exp(alpha) and 1 / (exp(beta) + eps), its low-pass filters expanded to the channels, and
the upsampled signal multiplied by the ratio. A forward runs 6 * 3 * 6 + 1 = 109 activations, and a
streamed utterance pays that once per chunk. `LeanBigVGAN` computes those constants once and runs
transformers' forward otherwise unchanged. Scaling the upsampling filter by the ratio (2) instead of its
output is exact in binary floating point (every product and partial sum is doubled exactly).

Each activation filters twice: a 12-tap upsampling filter (a depthwise transposed convolution) and a
12-tap low-pass one (a depthwise strided convolution). torch runs both slowly at BigVGAN's shapes: a fixed
cost each call, and a low rate at its long, narrow late layers (2 channels, 50 000 samples). On a float32
CPU forward both kernels compute each output as a fused multiply-add chain over the taps in ascending
order, starting from zero; `_FirActivation` computes the same chain as 12 `addcmul`s over shifted slices
(torch's `addcmul` is a fused multiply-add), so the samples stay bit-equal to transformers'
(tests/hf/test_hf_bigvgan_lean.py, at 1 and 2 threads, every length and batch it tries) in less time.
How, for ratio 2:

- the upsampled signal's even and odd samples are each a 6-tap chain over the replicate-padded input;
  they are written straight into one buffer, the even phase then the odd one, each with the edge samples
  the down filter's replicate padding reads (the first sample left of both, the last right of both);
- the snake runs over that buffer in place (mul, sin, square, mul, add: the same operations as
  transformers' `x + 1/beta * sin(x * alpha) ** 2`, so the same values);
- the low-pass output is the 12-tap chain over the two phases' slices, in the order of the taps.

Other dtypes and devices (bf16's convolutions accumulate in float32 and round once; CUDA's order is its
own) keep the convolutions, with the constants made once.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F


class _Activation:
    """One anti-aliased snake activation with its per-call constants made once, through torch's convolutions."""

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


def _edge_pad(hidden: torch.Tensor, left: int, right: int) -> torch.Tensor:
    """`F.pad(mode="replicate")` on the last dimension (the same values, without its slow kernel)."""
    rows = hidden.shape[:-1]
    return torch.cat([hidden[..., :1].expand(*rows, left), hidden, hidden[..., -1:].expand(*rows, right)], dim=-1)


def _up_offsets(up_left: int, kernel: int, phase: int) -> list[tuple[int, int]]:
    """(tap, offset) of upsampled sample 2s + phase: the taps k of that parity, ascending, each times padded
    input sample s + offset, offset = (phase + up_left - k) / 2 (the transposed convolution, cropped by up_left)."""
    return [(k, (phase + up_left - k) // 2) for k in range(kernel) if (phase + up_left - k) % 2 == 0]


class _FirActivation(_Activation):
    """The same activation with both filters as fused multiply-add chains over slices (the module's note)."""

    def __init__(self, module: Any, channels: int):
        super().__init__(module, channels)
        up, down = module.upsample, module.downsample
        with torch.no_grad():
            up_taps = (up.filter * up.ratio).flatten()
            down_taps = down.filter.flatten().clone()
        self.up_terms = [[(offset, up_taps[k]) for k, offset in _up_offsets(up.pad_left, len(up_taps), phase)]
                         for phase in (0, 1)]
        # low-pass output t = sum over every tap k, ascending, of tap k times upsampled sample 2t + k - down_left
        # (past either end: the first or the last sample), which is one phase's sample t + offset
        self.down_terms = [((k - self.down_left) % 2, (k - self.down_left) // 2, down_taps[k]) for k in range(len(down_taps))]
        self.lead = [max(0, -min(o for p, o, _ in self.down_terms if p == phase)) for phase in (0, 1)]
        self.trail = [max(0, max(o for p, o, _ in self.down_terms if p == phase)) for phase in (0, 1)]

    @staticmethod
    def applies(module: Any) -> bool:
        """Ratio 2 each way, float32 on a CPU: the case whose kernels the chains reproduce (tested)."""
        up, down = module.upsample, module.downsample
        return (up.ratio == up.stride == 2 and down.stride == 2 and up.filter.dtype == torch.float32
                and up.filter.device.type == "cpu"
                and all(0 <= offset <= 2 * up.pad for phase in (0, 1)
                        for _, offset in _up_offsets(up.pad_left, up.filter.shape[-1], phase)))

    def __call__(self, hidden: torch.Tensor) -> torch.Tensor:
        rows, length = hidden.shape[:-1], hidden.shape[-1]
        padded = _edge_pad(hidden, self.up_pad, self.up_pad)
        widths = [self.lead[p] + length + self.trail[p] for p in (0, 1)]
        both = torch.empty(*rows, widths[0] + widths[1], dtype=hidden.dtype, device=hidden.device)
        phases = (both[..., :widths[0]], both[..., widths[0]:])
        for phase, terms in enumerate(self.up_terms):
            out = phases[phase][..., self.lead[phase]:self.lead[phase] + length]
            (offset, tap), *rest = terms
            torch.mul(padded[..., offset:offset + length], tap, out=out)
            for offset, tap in rest:
                out.addcmul_(padded[..., offset:offset + length], tap)
        first = phases[0][..., self.lead[0]:self.lead[0] + 1]
        last = phases[1][..., self.lead[1] + length - 1:self.lead[1] + length]
        for phase in (0, 1):
            phases[phase][..., :self.lead[phase]].copy_(first.expand(*rows, self.lead[phase]))
            phases[phase][..., self.lead[phase] + length:].copy_(last.expand(*rows, self.trail[phase]))
        snaked = torch.mul(both, self.alpha)
        snaked.sin_().square_().mul_(self.inv_beta).add_(both)
        snaked_phases = (snaked[..., :widths[0]], snaked[..., widths[0]:])
        (phase, offset, tap), *rest = self.down_terms
        start = self.lead[phase] + offset
        out = torch.mul(snaked_phases[phase][..., start:start + length], tap)
        for phase, offset, tap in rest:
            start = self.lead[phase] + offset
            out.addcmul_(snaked_phases[phase][..., start:start + length], tap)
        return out


class LeanBigVGAN:
    """`Qwen2_5OmniToken2WavBigVGANModel.forward` with lean activations; callable like the module.
    `fir`: the filters as multiply-add chains (None: where they are bit-equal to the convolutions)."""

    def activations(self) -> list[Any]:
        """Every activation, in the order the forward runs them."""
        return [act for blocks in self.blocks for block in blocks for _, _, first, second in block
                for act in (first, second)] + [self.post]

    def use(self, replace: Any) -> None:
        """Each activation `act` replaced by `replace(act)` (bigvgan_aot.CompiledActivation: the same values to
        float rounding, through a compiled file)."""
        self.blocks = [[[(conv1, conv2, replace(act1), replace(act2)) for conv1, conv2, act1, act2 in block]
                        for block in blocks] for blocks in self.blocks]
        self.post = replace(self.post)

    def __init__(self, module: Any, fir: bool | None = None):
        self.module = module
        channels = module.config.upsample_initial_channel

        def lean(activation: Any) -> _Activation:
            chains = _FirActivation.applies(activation) if fir is None else fir
            return (_FirActivation if chains else _Activation)(activation, channels)

        self.blocks: list[list[tuple[Any, Any, _Activation, _Activation]]] = []  # per upsampling layer
        for layer in range(module.num_upsample_layers):
            channels //= 2
            self.blocks.append([])
            for index in range(module.num_residual_blocks):
                block = module.resblocks[layer * module.num_residual_blocks + index]
                acts = [lean(a) for a in block.activations]
                self.blocks[-1].append(list(zip(block.convs1, block.convs2, acts[::2], acts[1::2], strict=True)))
        self.post = lean(module.activation_post)

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
