"""The DiT's velocity compiled ahead of time (AOTInductor) for the windows that attend through whole-window
masks, kept on disk so a load after the first takes milliseconds.

A small DiT's evaluation is hundreds of short tensor operations, each paying Python's and the dispatcher's
fixed cost (a first chunk's window on the tiny checkpoint: about 1.1 ms an evaluation, 36 evaluations). The
same function compiled ahead of time runs as one C++ call: 0.32 ms for that window (one thread; `python
examples/hf_dit_ahead.py ./tiny-omni`). `torch.compile` (`DiTCompile`, dit.py) makes similar loops but
traces them again in every process (10-11 s a load with inductor's cache warm) and checks its guards on
every call; this is compiled once per machine and DiT shape, and loaded from the file.

The file is built and loaded as aoti.py describes (once per machine, the weights handed over at load, run
with the GIL let go). Its key (`package_key`) adds this format and the DiT's configuration: widths, layers,
each layer's block window. The rows and frames are sizes the function takes at run time: one file for every
window of the form, alone or batched.

Only the whole-window mask form (windows under `dit_block_attention_from` blocks: a request's first chunks)
runs compiled; longer windows attend block by block in eager torch (`BlockedAttention`, whose shapes follow
from Python arithmetic on the frames).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from omni_cli.backends.hf import aoti
from omni_cli.backends.hf.dit import dit_velocity

FORMAT = 1  # the exported function's inputs and their order; a change makes earlier files unused


def layer_windows(dit: Any) -> list[tuple[int, int]]:
    """Each decoder layer's (blocks back, blocks ahead) it may attend."""
    return [(int(layer.look_backward_block), int(layer.look_ahead_block)) for layer in dit.transformer_blocks]


def package_key(dit: Any, threads: int) -> str:
    """What a compiled file depends on, hashed (module docstring; aoti.key_of adds the machine and torch)."""
    config = {k: v for k, v in dit.config.to_dict().items() if not k.startswith("_") and k not in ("architectures",)}
    material = {"format": FORMAT, "config": config, "attention": dit.config._attn_implementation,
                "windows": layer_windows(dit), "dtype": str(dit.proj_out.weight.dtype)}
    return aoti.key_of(material, threads)


def distinct_masks(attention: list, mask_of_layer: list[int]) -> list[torch.Tensor]:
    """One mask per distinct layer window, in the order of `mask_of_layer`'s indices, from a per-layer list."""
    out: dict[int, torch.Tensor] = {}
    for layer, index in enumerate(mask_of_layer):
        out.setdefault(index, attention[layer])
    return [out[i] for i in sorted(out)]


class _MaskedVelocity(torch.nn.Module):
    """`dit_velocity` over flat tensor arguments: the window's inputs, one mask per distinct layer window,
    each layer's six modulation tensors, then the final norm's two (the order `DiTAheadOfTime.call` passes)."""

    def __init__(self, dit: Any):
        super().__init__()
        self.dit = dit
        windows = layer_windows(dit)
        self.distinct = list(dict.fromkeys(windows))
        self.mask_of_layer = [self.distinct.index(w) for w in windows]

    def forward(self, hidden, condition, code_embed, speaker, cos, signed_sin, *rest):
        masks = rest[:len(self.distinct)]
        mods = rest[len(self.distinct):]
        layers = [tuple(mods[6 * i:6 * i + 6]) for i in range(len(self.mask_of_layer))]
        attention = [masks[i] for i in self.mask_of_layer]
        return dit_velocity(self.dit, attention, hidden, condition, code_embed, speaker, cos, signed_sin, layers,
                            tuple(mods[-2:]))


class DiTAheadOfTime:
    """The compiled file loaded, with this model's DiT weights handed to it: `call` takes a window's inputs as
    `dit_velocity` does (masks per layer, the time modulation of one row) and returns the same tensor to float
    rounding (inductor orders some sums differently: tests/hf/test_hf_dit_ahead.py)."""

    def __init__(self, dit: Any, path: Path, models: int = 1):
        self.path = path
        self.mask_of_layer = _MaskedVelocity(dit).mask_of_layer
        weights = {f"dit.{name}": tensor for name, tensor in [*dit.named_parameters(), *dit.named_buffers()]}
        self._file = aoti.CompiledFile(path, weights, models)  # `models` threads may run it at once

    def masks(self, attention: list) -> list[torch.Tensor]:
        """The distinct masks of a window's per-layer `attention` list, in the order the file takes them."""
        return distinct_masks(attention, self.mask_of_layer)

    def call(self, fixed: list[torch.Tensor], hidden: torch.Tensor, layers: list[tuple[torch.Tensor, ...]],
             final: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        """The velocity: `fixed` is [condition, code_embed, speaker, cos, signed_sin, *masks] (made once per
        window), `hidden` the state (its rows twice with guidance), `layers` and `final` one row's modulation."""
        flat = [hidden, *fixed]
        for layer in layers:
            flat.extend(layer)
        flat.extend(final)
        return self._file.run(flat)[0]


def export_velocity(dit: Any, example: list[torch.Tensor], path: Path) -> None:
    """Export `_MaskedVelocity` with rows and frames free (one file for every window of the form) and compile
    it to the library `path`, the DiT's weights left out of it (handed over at load)."""
    from torch.export import Dim

    module = _MaskedVelocity(dit)
    rows = Dim("rows", min=2, max=1 << 16)
    frames = Dim("frames", min=2, max=int(dit.config.max_position_embeddings))
    per_row = {0: rows, 1: frames}
    masks = len(module.distinct)
    # forward(hidden, condition, code_embed, speaker, cos, signed_sin, *rest): the varargs' shapes as one tuple
    rest = ({2: frames, 3: frames},) * masks + (None,) * (len(example) - 6 - masks)
    aoti.compile_to(aoti.export(module, tuple(example), (per_row,) * 6 + (rest,)), path)


def example_inputs(dit: Any, cond: torch.Tensor, features: torch.Tensor, settings: Any, steps: Any) -> list[torch.Tensor]:
    """A window of two blocks' frames and two rows (one window with guidance, two without: the file is made for
    two rows or more), flat in `DiTAheadOfTime.call`'s order (random codes and state)."""
    from omni_cli.backends.hf.dit import WindowVelocity, time_modulation

    generator = torch.Generator().manual_seed(0)
    frames, windows = 2 * int(dit.block_size), 1 if settings.is_guided else 2
    codes = torch.randint(0, int(dit.config.num_embeds), (windows, frames // int(dit.repeats)), generator=generator)
    window = WindowVelocity(dit, codes, cond.expand(windows, -1), features, settings, steps, blocked_from=0)
    state = torch.randn(window.rows, frames, int(dit.mel_dim), generator=generator)
    layers, final = steps.one_row(torch.tensor(0.5)) if steps is not None else time_modulation(dit, torch.tensor(0.5), 1)
    masks = distinct_masks(window.attention, _MaskedVelocity(dit).mask_of_layer)
    return [state, window.condition, window.code_embed, window.speaker, window.cos, window.signed_sin, *masks,
            *(t for layer in layers for t in layer), *final]


def load_or_build(dit: Any, threads: int, example: Callable[[], list[torch.Tensor]],
                  on_build: Callable[[Path], None] = lambda path: None, root: Path | None = None,
                  models: int = 1) -> DiTAheadOfTime:
    """The compiled velocity for this DiT and thread count: from the cache when it holds the file, else built
    now (`on_build(path)` first: tens of seconds on a small machine) and kept (aoti.built); `models`: threads
    that may run it at once."""
    path = aoti.built("dit-ahead-of-time", "velocity-masks", package_key(dit, threads),
                      lambda library: export_velocity(dit, example(), library), on_build, root)
    return DiTAheadOfTime(dit, path, models)
