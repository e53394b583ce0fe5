"""BigVGAN decoded chunk by chunk with each layer's context carried: every mel frame decoded once.

`BigVGANStream` runs a LeanBigVGAN's layers over the mel as it arrives. Each layer keeps, between chunks, the
input samples its next outputs still read (a convolution's left reach and its look-ahead; an anti-aliased
activation's 5 samples each side; a transposed convolution's taps; a residual branch's pending input) and
emits only the outputs whose inputs have all arrived. The look-ahead the non-causal layers read is therefore
a fixed delay, not recomputation: `delay_frames` of mel (about 33.5 at Qwen2.5-Omni's shape), flushed by the
utterance's last chunk with the edge padding a whole forward uses (zeros for the convolutions, the edge
sample replicated for the activations). The samples equal one forward over the whole mel to float rounding
(each output is the same sum over the same inputs; tests/hf/test_hf_bigvgan_stream.py).

A stream's state is a list of `Slot`s, one per layer that keeps samples, replaced (never changed) by each
`push`: rows of different requests whose slots have the same lengths run as one batch (`merge`, `split`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

ACT_REACH = 5  # an anti-aliased activation's output t reads its input t-5 .. t+5 (12-tap filters, ratio 2)


@dataclass(frozen=True)
class Slot:
    """What one layer kept: its input samples not yet consumed (None: none yet) and whether they start at the
    utterance's first sample (the layer has emitted nothing, so its left edge is still ahead)."""

    buf: torch.Tensor | None = None
    fresh: bool = True


def _joined(slot: Slot, x: torch.Tensor) -> torch.Tensor:
    return x if slot.buf is None else torch.cat([slot.buf, x], dim=-1) if x.shape[-1] else slot.buf


class _Conv:
    """A stride-1 Conv1d with zero padding equal to its reach each side."""

    def __init__(self, conv: torch.nn.Conv1d):
        self.weight, self.bias = conv.weight, conv.bias
        self.dilation = conv.dilation[0]
        self.reach = self.dilation * (conv.kernel_size[0] - 1) // 2
        if conv.stride[0] != 1 or conv.padding[0] != self.reach or conv.padding_mode != "zeros":
            raise ValueError("a streamed Conv1d needs stride 1 and zero padding of its reach")

    def push(self, slot: Slot, x: torch.Tensor, final: bool) -> tuple[torch.Tensor, Slot]:
        if slot.fresh:  # the utterance's left zero padding
            x = torch.cat([x.new_zeros(*x.shape[:-1], self.reach), x], dim=-1)
        buf = _joined(slot, x)
        if final:
            buf = torch.cat([buf, buf.new_zeros(*buf.shape[:-1], self.reach)], dim=-1)
        count = buf.shape[-1] - 2 * self.reach
        if count <= 0:
            return buf.new_empty(buf.shape[0], self.weight.shape[0], 0), Slot(buf, False)
        y = F.conv1d(buf, self.weight, self.bias, dilation=self.dilation)
        return y, Slot(buf[..., count:], False)


class _Act:
    """An anti-aliased activation (any callable over [rows, channels, length] with replicate edges)."""

    def __init__(self, act: Any):
        self.act = act

    def push(self, slot: Slot, x: torch.Tensor, final: bool) -> tuple[torch.Tensor, Slot]:
        buf, r = _joined(slot, x), ACT_REACH
        n = buf.shape[-1]
        if final and n:
            y = self.act(buf)
            return (y if slot.fresh else y[..., r:]), Slot(buf[..., n:], False)
        if final or n <= 2 * r:  # not one output whose reach has arrived (past the left edge)
            return buf[..., :0], Slot(buf, slot.fresh)
        y = self.act(buf)
        y = y[..., :n - r] if slot.fresh else y[..., r:n - r]
        return y, Slot(buf[..., n - 2 * r:], False)


class _Up:
    """A ConvTranspose1d upsampler (stride s, kernel K, padding (K - s) / 2): output j is the sum over inputs
    i with i*s <= j + padding < i*s + K."""

    def __init__(self, up: torch.nn.ConvTranspose1d):
        self.weight, self.bias = up.weight, up.bias
        self.stride, kernel, self.pad = up.stride[0], up.kernel_size[0], up.padding[0]
        if kernel < self.stride or kernel - self.stride != 2 * self.pad or up.output_padding[0] or up.dilation[0] != 1:
            raise ValueError("a streamed ConvTranspose1d needs padding (kernel - stride) / 2")
        self.context = -(-(kernel - self.stride) // self.stride)  # inputs the next output still reads

    def push(self, slot: Slot, x: torch.Tensor, final: bool) -> tuple[torch.Tensor, Slot]:
        buf = _joined(slot, x)
        n, s, c = buf.shape[-1], self.stride, self.context
        first = self.pad if slot.fresh else c * s  # the first output not yet emitted, in the buffer's terms
        stop = n * s + self.pad if final else n * s
        if n == 0 or stop <= first or (slot.fresh and not final and n < c):  # (fresh: the kept context is whole)
            return buf.new_empty(buf.shape[0], self.weight.shape[1], 0), Slot(buf, slot.fresh)
        z = F.conv_transpose1d(buf, self.weight, self.bias, stride=s)
        keep = buf[..., n:] if final else buf[..., max(0, n - c):]
        return z[..., first:stop], Slot(keep, False)


class _Residual:
    """x + branch(x), the branch a chain of layers that lags; x's samples wait for the branch's."""

    def __init__(self, layers: list):
        self.layers = layers
        self.slots = len(layers) + 1  # each layer's, then x's pending samples

    def push(self, slots: list[Slot], x: torch.Tensor, final: bool) -> tuple[torch.Tensor, list[Slot]]:
        new, y = [], x
        for layer, slot in zip(self.layers, slots, strict=False):
            y, kept = layer.push(slot, y, final)
            new.append(kept)
        pending = _joined(slots[-1], x)
        count = y.shape[-1]
        return pending[..., :count] + y, [*new, Slot(pending[..., count:], False)]


class _ResBlocks:
    """An upsampling layer's residual blocks, averaged: each a chain of residual steps; the sum waits for the
    block that lags most."""

    def __init__(self, blocks: list[list[_Residual]]):
        self.blocks = blocks
        self.slots = sum(step.slots for block in blocks for step in block) + len(blocks)

    def push(self, slots: list[Slot], x: torch.Tensor, final: bool) -> tuple[torch.Tensor, list[Slot]]:
        new: list[Slot] = []
        outs, at = [], 0
        for block in self.blocks:
            y = x
            for step in block:
                y, kept = step.push(slots[at:at + step.slots], y, final)
                new.extend(kept)
                at += step.slots
            outs.append(y)
        pending = [_joined(slot, y) for slot, y in zip(slots[at:], outs, strict=True)]
        count = min(p.shape[-1] for p in pending)
        total = sum(p[..., :count] for p in pending) / len(pending)
        return total, new + [Slot(p[..., count:], False) for p in pending]


class BigVGANStream:
    """A LeanBigVGAN's forward, chunk by chunk (the module's note); `push(slots, mel, final)` -> (samples
    [rows, n] now final, the new slots)."""

    def __init__(self, lean: Any):
        module = lean.module
        self.module = module
        self.layers: list[Any] = [_Conv(module.conv_pre)]
        for index, blocks in enumerate(lean.blocks):
            self.layers.append(_Up(module.ups[index][0]))
            self.layers.append(_ResBlocks([[_Residual([_Act(act1), _Conv(conv1), _Act(act2), _Conv(conv2)])
                                            for conv1, conv2, act1, act2 in block] for block in blocks]))
        self.layers += [_Act(lean.post), _Conv(module.conv_post)]
        self.widths = [getattr(layer, "slots", 1) for layer in self.layers]
        self.hop = 1
        for rate in module.config.upsample_rates:
            self.hop *= rate

    def start(self) -> list[Slot]:
        """A new utterance's slots."""
        return [Slot() for _ in range(sum(self.widths))]

    @torch.no_grad()
    def push(self, slots: list[Slot], mel: torch.Tensor | None, final: bool) -> tuple[torch.Tensor, list[Slot]]:
        """mel [rows, mel_dim, frames] (None or 0 frames: nothing new, as a last chunk that only flushes)."""
        if mel is None:
            rows = 1 if slots[0].buf is None else slots[0].buf.shape[0]
            mel = torch.zeros(rows, self.module.config.mel_dim, 0, dtype=self._dtype(), device=self._device())
        x = self.module.process_mel_spectrogram(mel)
        new: list[Slot] = []
        at = 0
        for layer, width in zip(self.layers, self.widths, strict=True):
            if width == 1:
                x, kept = layer.push(slots[at], x, final)
                new.append(kept)
            else:
                x, kept = layer.push(slots[at:at + width], x, final)
                new.extend(kept)
            at += width
        return torch.clamp(x, min=-1.0, max=1.0).reshape(x.shape[0], -1), new

    def _dtype(self) -> torch.dtype:
        return self.module.conv_pre.weight.dtype

    def _device(self) -> torch.device:
        return self.module.conv_pre.weight.device


def key(slots: list[Slot]) -> tuple:
    """Rows whose keys are equal can run as one batch (`merge`)."""
    return tuple((-1 if s.buf is None else s.buf.shape[-1], s.fresh) for s in slots)


def merge(rows: list[list[Slot]]) -> list[Slot]:
    """One batch's slots from rows of equal `key`."""
    if len(rows) == 1:
        return rows[0]
    return [Slot(None if group[0].buf is None else torch.cat([s.buf for s in group]), group[0].fresh)
            for group in zip(*rows, strict=True)]


def split(slots: list[Slot], rows: int) -> list[list[Slot]]:
    """A batch's slots, row by row."""
    if rows == 1:
        return [slots]
    return [[Slot(None if s.buf is None else s.buf[row:row + 1], s.fresh) for s in slots] for row in range(rows)]


def look_ahead(stream: BigVGANStream) -> float:
    """Mel frames the last final sample lags the last mel frame pushed, from the layers' reaches (at most a
    sample off `delay_frames`'s count)."""
    frames, rate = 0.0, 1

    def reach(layer: Any) -> float:
        if isinstance(layer, _Conv):
            return layer.reach
        if isinstance(layer, _Act):
            return ACT_REACH
        if isinstance(layer, _Residual):
            return sum(reach(inner) for inner in layer.layers)
        return max(sum(reach(step) for step in block) for block in layer.blocks)

    for layer in stream.layers:
        if isinstance(layer, _Up):
            frames += layer.pad / layer.stride / rate
            rate *= layer.stride
        else:
            frames += reach(layer) / rate
    return frames


def delay_frames(stream: BigVGANStream, mel_dim: int, probe: int = 200) -> float:
    """Mel frames a chunk's last samples lag its last frame (the layers' look-ahead), measured on zeros."""
    mel = torch.zeros(1, mel_dim, probe, dtype=stream._dtype(), device=stream._device())
    out, _ = stream.push(stream.start(), mel, False)
    return probe - out.shape[-1] / stream.hop
