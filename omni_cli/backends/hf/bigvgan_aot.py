"""BigVGAN's anti-aliased snake activation compiled ahead of time (AOTInductor): one file for all 109.

A BigVGAN forward runs 109 activations, each about 70 short tensor operations as `_FirActivation` makes
them (two 6-tap chains, the edge copies, the snake, a 12-tap chain): for a first chunk's 40 mel frames on
the tiny checkpoint, most of its time is their fixed cost. `FusedActivation` is the same arithmetic written
as expressions (no writes into views, which export does not take), and compiled it is a few fused loops
with the GIL let go (aoti.py). Every activation of a BigVGAN has the same two filters (Kaiser windows from
its configuration), so one file, with the rows, channels and length free and the snake's per-channel
factors as inputs, serves them all; the file's key is the filters' taps and offsets.

The samples are the eager chains' to float rounding (inductor may fuse a product and a sum into one
rounding where `addcmul` does): about 130 dB SNR over a whole BigVGAN on the tiny checkpoint
(tests/hf/test_hf_bigvgan_ahead.py). It takes less time than the eager chains, most of all on a first
chunk's short call (`python examples/hf_bigvgan_ahead.py ./tiny-omni`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from omni_cli.backends.hf import aoti
from omni_cli.backends.hf.bigvgan import _FirActivation

FORMAT = 1


class FusedActivation(torch.nn.Module):
    """`_FirActivation.__call__` as expressions: (hidden [rows, channels, length], exp(alpha) and
    1 / (exp(beta) + eps), each [1, channels, 1]) -> the activation's output [rows, channels, length]."""

    def __init__(self, fir: _FirActivation):
        super().__init__()
        self.pad = int(fir.up_pad)
        self.up_terms = [[(int(offset), float(tap)) for offset, tap in terms] for terms in fir.up_terms]
        self.down_terms = [(int(phase), int(offset), float(tap)) for phase, offset, tap in fir.down_terms]
        self.lead, self.trail = [int(n) for n in fir.lead], [int(n) for n in fir.trail]

    def material(self) -> dict:
        """What the compiled code depends on besides the machine (its cache key)."""
        return {"format": FORMAT, "pad": self.pad, "up": self.up_terms, "down": self.down_terms, "lead": self.lead,
                "trail": self.trail}

    def forward(self, hidden: torch.Tensor, alpha: torch.Tensor, inv_beta: torch.Tensor) -> torch.Tensor:
        rows, length = hidden.shape[:-1], hidden.shape[-1]
        padded = torch.cat([hidden[..., :1].expand(*rows, self.pad), hidden,
                            hidden[..., -1:].expand(*rows, self.pad)], dim=-1)
        phases = []
        for terms in self.up_terms:  # the upsampled signal's even, then odd samples
            (offset, tap), *rest = terms
            made = padded[..., offset:offset + length] * tap
            for offset, tap in rest:
                made = made + padded[..., offset:offset + length] * tap
            phases.append(made)
        # the low-pass filter's replicate padding: the first upsampled sample left of both, the last right of both
        first, last = phases[0][..., :1], phases[1][..., -1:]
        snaked = []
        for phase in (0, 1):
            x = torch.cat([first.expand(*rows, self.lead[phase]), phases[phase],
                           last.expand(*rows, self.trail[phase])], dim=-1)
            snaked.append(x + inv_beta * torch.sin(x * alpha) ** 2)
        (phase, offset, tap), *rest = self.down_terms
        start = self.lead[phase] + offset
        out = snaked[phase][..., start:start + length] * tap
        for phase, offset, tap in rest:
            start = self.lead[phase] + offset
            out = out + snaked[phase][..., start:start + length] * tap
        return out


class CompiledActivation:
    """One activation of a LeanBigVGAN through the compiled file: its own snake factors, the file shared."""

    def __init__(self, fir: _FirActivation, file: aoti.CompiledFile):
        self.alpha, self.inv_beta = fir.alpha.contiguous(), fir.inv_beta.contiguous()
        self._run = file.run

    def __call__(self, hidden: torch.Tensor) -> torch.Tensor:
        return self._run([hidden.contiguous(), self.alpha, self.inv_beta])[0]


def export_activation(module: FusedActivation, channels: int, library: Path) -> None:
    """Export with the rows, channels and length free, and compile to the library `library`."""
    from torch.export import Dim

    rows, width, length = Dim("rows", min=1, max=1 << 16), Dim("channels", min=2, max=1 << 16), Dim("length", min=4,
                                                                                                     max=1 << 26)
    generator = torch.Generator().manual_seed(0)
    example = (torch.randn(2, channels, 64, generator=generator), torch.rand(1, channels, 1, generator=generator),
               torch.rand(1, channels, 1, generator=generator))
    shapes = ({0: rows, 1: width, 2: length}, {1: width}, {1: width})
    aoti.compile_to(aoti.export(module, example, shapes), library)


def load_or_build(fir: _FirActivation, threads: int, on_build: Callable[[Path], None] = lambda path: None,
                  root: Path | None = None, models: int = 1,
                  on_distrust: Callable[[Path, str], None] = lambda path, why: None) -> aoti.CompiledFile:
    """The compiled activation for `fir`'s filters and `threads`: from the cache when omni made the file there,
    or built now (seconds, once per machine) and kept (aoti.built: `on_distrust`); `models`: threads
    that may run it at once."""
    module = FusedActivation(fir)
    key = aoti.key_of(module.material(), threads)
    path = aoti.built("bigvgan-ahead-of-time", "activation", key,
                      lambda library: export_activation(module, 4, library), on_build, root, on_distrust)
    return aoti.CompiledFile(path, {}, models)


def applies(lean: Any) -> bool:
    """Every activation of `lean` (a LeanBigVGAN) is a `_FirActivation` (float32 on a CPU, ratio 2) with the same
    filters, taps and offsets: what the one file, made from one of them, bakes in."""
    activations = lean.activations()
    if not all(isinstance(act, _FirActivation) for act in activations):
        return False
    shared = FusedActivation(activations[-1]).material()
    return all(FusedActivation(act).material() == shared for act in activations)
