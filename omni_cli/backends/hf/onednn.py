"""What BigVGAN's convolutions cost in memory on a CPU beyond their activations.

torch runs a float32 CPU convolution through oneDNN (mkldnn) or through its own kernels by a size rule
(`ConvParams::use_mkldnn`, aten/src/ATen/native/Convolution.cpp; `oneDNN` below is checked against
torch's own choice in tests/hf/test_hf_memory.py). A oneDNN convolution:

- copies ("reorders") its weight into oneDNN's blocked layout on every call and frees the copy after it:
  a transient as large as the weight, which dominates a short chunk (49.5 MiB for the first upsampling
  convolution at 1,536 channels, 24.8 MiB for the widest residual one). Which convolutions take that path
  depends on the call's batch and length, so the widest copy does too.
- creates, at the first call with a new input shape, one primitive per distinct convolution, which
  oneDNN's primitive cache keeps (least recently used evicted beyond ONEDNN_PRIMITIVE_CACHE_CAPACITY
  primitives, 1,024 by default): memory that stays after the call, once per shape per process.

The convolutions are found by tracing one tiny forward at load (every conv1d / conv_transpose1d call,
those of the anti-aliased activations included), twice, so each call's input length is known as an
affine function of the mel length.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch.overrides import TorchFunctionMode

# Each oneDNN convolution at a new shape adds two entries to the cache (the convolution and a reorder):
# with ONEDNN_PRIMITIVE_CACHE_CAPACITY=146 only one new BigVGAN length (73 distinct oneDNN convolutions at
# 1,536 channels) grew the resident set by the full amount, with 292 two. What one entry keeps resident
# (its generated kernel and descriptors) is measured, not derived: what BigVGAN's first call at a new length
# adds to the resident set while the cache has room, less what it adds once it has none, over the entries;
# what a new shape costs outside the cache is not counted.
ENTRIES_PER_CONV = 2
ENTRY_BYTES = 52 << 10
TRACED_FRAMES = (4, 8)
_ONEDNN_INPUT_VALUES = 20480  # torch's threshold: above it a plain 1-D convolution goes to oneDNN


def cache_capacity() -> int:
    """oneDNN's primitive cache capacity for this process (read by oneDNN from its environment)."""
    try:
        return max(0, int(os.environ.get("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "1024")))
    except ValueError:
        return 1024


@dataclass(frozen=True)
class Conv:
    """One convolution call of a forward: its input channels and length (scale * mel frames + offset)."""

    channels: int
    scale: int
    offset: int
    weight_bytes: int
    kernel: int
    strided: bool
    dilated: bool
    groups: int
    key: tuple  # what a primitive is keyed on, besides the input's batch and length

    def length(self, frames: int) -> int:
        return self.scale * frames + self.offset

    def uses_onednn(self, batch: int, frames: int, threads: int, dtype: torch.dtype) -> bool:
        if not torch.backends.mkldnn.is_available() or not torch.backends.mkldnn.enabled:
            return False
        if dtype != torch.float32:
            return True  # bf16 / fp16 CPU convolutions go to oneDNN wherever it supports them: the upper bound
        # as a 2-D convolution of height 1: weight [.., .., 1, kernel], input [batch, channels, 1, length]
        picked = self.strided or self.dilated or batch >= 16 or self.kernel != 1 or threads > 1
        return picked and (self.groups > 1 or batch > 1 or batch * self.channels * self.length(frames) > _ONEDNN_INPUT_VALUES)


class _Record(TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.calls: list[tuple] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in (torch.nn.functional.conv1d, torch.conv1d, torch.nn.functional.conv_transpose1d,
                    torch.conv_transpose1d):
            transposed = func in (torch.nn.functional.conv_transpose1d, torch.conv_transpose1d)
            names = (("stride", "padding", "output_padding", "groups", "dilation") if transposed
                     else ("stride", "padding", "dilation", "groups"))
            given = dict(zip(names, args[3:], strict=False)) | kwargs
            x, w = args[0], args[1]
            self.calls.append((int(x.shape[1]), int(x.shape[2]), w.numel() * w.element_size(), tuple(w.shape),
                               transposed, _one(given.get("stride", 1)), _one(given.get("dilation", 1)),
                               int(given.get("groups", 1)), _one(given.get("padding", 0))))
        return func(*args, **kwargs)


def _one(v) -> int:
    return int(v[0]) if isinstance(v, (tuple, list)) else int(v)


@torch.no_grad()
def trace_convs(module: Callable[[torch.Tensor], torch.Tensor], mel_dim: int, device: torch.device) -> list[Conv]:
    """Every convolution call `module` (BigVGAN's forward) makes on a [1, mel_dim, frames] input, in order."""
    runs = []
    for frames in TRACED_FRAMES:
        with _Record() as rec:
            module(torch.zeros(1, mel_dim, frames, device=device))
        runs.append(rec.calls)
    convs = []
    for (c, n4, size, shape, transposed, stride, dilation, groups, padding), (_, n8, *_rest) in zip(*runs, strict=True):
        scale = (n8 - n4) // (TRACED_FRAMES[1] - TRACED_FRAMES[0])
        convs.append(Conv(c, scale, n4 - TRACED_FRAMES[0] * scale, size, shape[-1], stride > 1, dilation > 1, groups,
                          (c, shape, transposed, stride, dilation, groups, padding)))
    return convs


class ConvCosts:
    """BigVGAN's oneDNN costs at a call's (batch, frames): the widest weight copy, and the primitives a new
    shape leaves in oneDNN's cache while it has room."""

    def __init__(self, module: torch.nn.Module, mel_dim: int, device: torch.device, threads: int,
                 forward: Callable[[torch.Tensor], torch.Tensor] | None = None):
        self.convs = trace_convs(forward or module, mel_dim, device)  # `forward`: the one the vocoder runs
        self.dtype = next(module.parameters()).dtype
        self.on_cpu = device.type == "cpu"  # oneDNN is torch's CPU path: elsewhere neither cost exists
        self.widest = max(c.weight_bytes for c in self.convs)
        self.capacity = cache_capacity()
        self.seen: set[tuple[int, int]] = set()  # (batch, frames) BigVGAN ran at in this process
        self.entries = 0  # cache entries created so far (the cache holds at most `capacity`)
        for frames in TRACED_FRAMES:
            self.ran(1, frames, threads)  # the trace ran with `threads` (the caller's component threads)
        self._at_load = self.entries

    def _onednn(self, batch: int, frames: int, threads: int) -> list[Conv]:
        return [c for c in self.convs if self.on_cpu and c.uses_onednn(batch, frames, threads, self.dtype)]

    def reorder_bytes(self, batch: int, frames: int, threads: int) -> int:
        return max((c.weight_bytes for c in self._onednn(batch, frames, threads)), default=0)

    def new_entries(self, batch: int, frames: int, threads: int) -> int:
        """Primitive-cache entries a call at this shape adds (0 once the shape ran, or once the cache is full)."""
        if (batch, frames) in self.seen:
            return 0
        distinct = {(c.key, c.length(frames)) for c in self._onednn(batch, frames, threads)}
        return max(0, min(ENTRIES_PER_CONV * len(distinct), self.capacity - self.entries))

    def cache_bytes(self, batch: int, frames: int, threads: int) -> int:
        """What a call at this shape leaves resident after it."""
        return self.new_entries(batch, frames, threads) * ENTRY_BYTES

    def kept_bytes(self) -> int:
        """What the calls since load have left in the primitive cache."""
        return (self.entries - self._at_load) * ENTRY_BYTES

    def ran(self, batch: int, frames: int, threads: int) -> None:
        self.entries += self.new_entries(batch, frames, threads)
        self.seen.add((batch, frames))
