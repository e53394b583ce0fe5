"""Qwen3-Omni's Code2Wav decoded chunk by chunk with its state carried: every frame is decoded once.

Code2Wav is causal end to end: a sliding-window transformer over the codes' embeddings, then causal
convolutions (left padding only), causal transposed convolutions and pointwise activations. So a chunk needs
no frames of left context re-decoded (transformers' `chunked_decode` re-decodes 25 per chunk): the transformer
keeps its KV cache (the window's keys and values) and every convolution keeps the last inputs its kernel
reaches back to. A transposed convolution whose kernel is twice its stride makes each output block from two
consecutive inputs, of which the whole-utterance forward trims the first block and the last; streamed, it holds
its last input back until the next chunk brings the one after it, so a chunk's samples stop one input short of
its end at every such layer (the delay is fixed and small: `held_samples`). Concatenated chunks equal the
whole-utterance forward to float rounding (tests/hf/test_hf_qwen3_code2wav.py states the bound measured).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
from transformers import DynamicCache
from transformers.models.qwen3_omni_moe.modeling_qwen3_omni_moe import (
    Qwen3OmniMoeCausalConvNet,
    Qwen3OmniMoeCausalTransConvNet,
    Qwen3OmniMoeCode2WavDecoderBlock,
    Qwen3OmniMoeCode2WavDecoderResidualUnit,
    Qwen3OmniMoeConvNeXtBlock,
    Qwen3OmniMoeSnakeBeta,
)


@dataclass
class Code2WavStream:
    """One request's decoding state: the transformer's cache and position, each convolution's left context."""

    kv: Any
    num_frames: int = 0  # frames decoded so far (the next frame's position)
    tails: list[torch.Tensor | None] = field(default_factory=list)  # per convolution, in the order they run
    _next_tail: int = 0

    def take(self) -> torch.Tensor | None:
        index = self._next_tail
        self._next_tail += 1
        return self.tails[index] if index < len(self.tails) else None

    def keep(self, tail: torch.Tensor | None) -> None:
        index = self._next_tail - 1
        if index < len(self.tails):
            self.tails[index] = tail
        else:
            self.tails.append(tail)


def new_stream(code2wav: Any) -> Code2WavStream:
    return Code2WavStream(kv=DynamicCache(config=code2wav.config))


@torch.no_grad()
def decode_chunk(code2wav: Any, codes: torch.Tensor, stream: Code2WavStream) -> torch.Tensor:
    """The samples that frames `codes` [1, num_quantizers, n] make final, given every frame before them went
    through `stream`: [1, 1, m]."""
    if codes.shape[1] != code2wav.config.num_quantizers or codes.shape[-1] < 1:
        raise ValueError(f"a Code2Wav chunk takes [1, {code2wav.config.num_quantizers}, n >= 1] codes, "
                         f"not {list(codes.shape)}")
    stream._next_tail = 0
    return _convolved(code2wav, _transformed(code2wav, codes, stream), stream)


@torch.no_grad()
def decode_chunks(code2wav: Any, chunks: list[torch.Tensor], streams: list[Code2WavStream]) -> list[torch.Tensor]:
    """`decode_chunk` of several requests' chunks of one length, each its stream's first or none its first: the
    transformer row by row (each has its own cache and positions), the convolutions as one batch (their carried
    inputs stacked), which is most of the work."""
    if len(chunks) == 1:
        return [decode_chunk(code2wav, chunks[0], streams[0])]
    if len({c.shape[-1] for c in chunks}) > 1 or len({s.num_frames == 0 for s in streams}) > 1:
        raise ValueError("a Code2Wav batch takes chunks of one length, all first chunks or none")
    for codes in chunks:
        if codes.shape[1] != code2wav.config.num_quantizers:
            raise ValueError(f"a Code2Wav chunk takes [1, {code2wav.config.num_quantizers}, n >= 1] codes")
    rows = [_transformed(code2wav, codes, stream) for codes, stream in zip(chunks, streams, strict=True)]
    return list(_convolved(code2wav, torch.cat(rows), _Stacked(streams)).split(1))


def _transformed(code2wav: Any, codes: torch.Tensor, stream: Code2WavStream) -> torch.Tensor:
    """The chunk's frames through the sliding-window transformer, its cache carried: [1, hidden, n]."""
    n = codes.shape[-1]
    hidden = code2wav.code_embedding(codes + code2wav.code_offset).mean(1)
    positions = torch.arange(stream.num_frames, stream.num_frames + n, device=codes.device)[None]
    hidden = code2wav.pre_transformer(inputs_embeds=hidden, position_ids=positions, cache=stream.kv,
                                      use_cache=True).last_hidden_state
    stream.num_frames += n
    return hidden.permute(0, 2, 1)


def _convolved(code2wav: Any, hidden: torch.Tensor, stream: Any) -> torch.Tensor:
    for blocks in code2wav.upsample:
        for block in blocks:
            hidden = _streamed(block, hidden, stream)
    for block in code2wav.decoder:
        hidden = _streamed(block, hidden, stream)
    return hidden.clamp(min=-1, max=1)


class _Stacked:
    """Several streams' carried inputs as one batch's: stacked when taken, each row kept by its own stream."""

    def __init__(self, streams: list[Code2WavStream]):
        self.streams = streams
        for stream in streams:
            stream._next_tail = 0

    def take(self) -> torch.Tensor | None:
        tails = [stream.take() for stream in self.streams]
        return None if tails[0] is None else torch.cat(tails)

    def keep(self, tail: torch.Tensor | None) -> None:
        for row, stream in enumerate(self.streams):
            stream.keep(None if tail is None else tail[row:row + 1].clone())


def _streamed(module: Any, x: torch.Tensor, stream: Any) -> torch.Tensor:
    if isinstance(module, Qwen3OmniMoeCausalConvNet):
        return _causal_conv(module, x, stream)
    if isinstance(module, Qwen3OmniMoeCausalTransConvNet):
        return _causal_trans_conv(module, x, stream)
    if isinstance(module, Qwen3OmniMoeSnakeBeta):
        return module(x)  # pointwise in time
    if isinstance(module, Qwen3OmniMoeCode2WavDecoderBlock):
        for block in module.block:
            x = _streamed(block, x, stream)
        return x
    if isinstance(module, Qwen3OmniMoeCode2WavDecoderResidualUnit):
        h = _streamed(module.conv1, module.act1(x), stream)
        return _streamed(module.conv2, module.act2(h), stream) + x
    if isinstance(module, Qwen3OmniMoeConvNeXtBlock):
        h = _causal_conv(module.dwconv, x, stream).permute(0, 2, 1)
        h = module.pwconv2(module.act(module.pwconv1(module.norm(h))))
        return x + (module.gamma * h).permute(0, 2, 1)
    raise TypeError(f"Code2Wav streaming does not know {type(module).__name__}")


def _causal_conv(module: Any, x: torch.Tensor, stream: Any) -> torch.Tensor:
    """A stride-1 causal convolution: the whole forward pads `padding` zeros on the left; streamed, the last
    `padding` inputs of the chunks before stand in for them."""
    if module.stride != 1:
        raise ValueError("Code2Wav streaming supports stride-1 causal convolutions only")
    tail = stream.take()
    if tail is None:
        tail = x.new_zeros(x.shape[0], x.shape[1], module.padding)
    x = torch.cat([tail, x], dim=-1)
    stream.keep(x[..., x.shape[-1] - module.padding:].clone())  # a copy: a view would keep all of x alive
    return module.conv(x).contiguous()


def _causal_trans_conv(module: Any, x: torch.Tensor, stream: Any) -> torch.Tensor:
    """A transposed convolution (kernel K, stride S, K a multiple of S): output block j sums inputs j - K/S + 1
    .. j; the whole forward trims K - S samples on each side. Streamed, the last K/S - 1 inputs are carried and
    only the blocks all of whose inputs have come are made."""
    kernel, stride = module.conv.kernel_size[0], module.conv.stride[0]
    if kernel % stride or module.left_pad != kernel - stride:
        raise ValueError("Code2Wav streaming supports transposed convolutions whose kernel is a multiple of the stride")
    held = kernel // stride - 1
    tail = stream.take()
    if tail is not None:
        x = torch.cat([tail, x], dim=-1)
    stream.keep(x[..., x.shape[-1] - held:].clone() if held else None)
    out = module.conv(x)
    return out[..., kernel - stride: x.shape[-1] * stride].contiguous()


def held_samples(code2wav: Any) -> int:
    """Samples a streamed utterance's chunks hold back past their last frame (the whole forward trims them at
    the end): each transposed convolution that carries an input delays its output by one input."""
    delay, scale = 0, 1
    for block in reversed(list(_upsampling_layers(code2wav))):
        kernel, stride = block.conv.kernel_size[0], block.conv.stride[0]
        delay += (kernel // stride - 1) * stride * scale
        scale *= stride
    return delay


def _upsampling_layers(code2wav: Any):
    for blocks in code2wav.upsample:
        yield from (b for b in blocks if isinstance(b, Qwen3OmniMoeCausalTransConvNet))
    for block in code2wav.decoder:
        if isinstance(block, Qwen3OmniMoeCode2WavDecoderBlock):
            yield from (b for b in block.block if isinstance(b, Qwen3OmniMoeCausalTransConvNet))


def utterance_samples(code2wav: Any, num_frames: int) -> int:
    """Samples of the whole-utterance forward of `num_frames` frames (what the streamed chunks add up to)."""
    length = num_frames
    for layer in _upsampling_layers(code2wav):
        kernel, stride = layer.conv.kernel_size[0], layer.conv.stride[0]
        length = (length - (kernel // stride - 1)) * stride
    return length


__all__ = ["Code2WavStream", "decode_chunk", "decode_chunks", "held_samples", "new_stream", "utterance_samples"]
