"""The DiT's velocity compiled ahead of time (AOTInductor), in both forms a window attends in, kept on disk so
a load after the first takes milliseconds.

A small DiT's evaluation is hundreds of short tensor operations, each paying Python's and the dispatcher's
fixed cost, and a first chunk runs dozens of evaluations. The same function compiled ahead of time is one
C++ call, in a fraction of the time, most of all for a first chunk's window (`python examples/hf_dit_ahead.py
./tiny-omni`). `torch.compile` (`DiTCompile`, dit.py) makes similar loops but traces them again in every
process (seconds a load, even with inductor's cache warm) and checks its guards on every call; this is compiled
once per machine and DiT shape, and loaded from the file.

The files are built and loaded as aoti.py describes (once per machine, the weights handed over at load, run
with the GIL let go). One file per form (`FORMS`):

- `masks`: windows under `dit_block_attention_from` blocks, attending through whole-window masks (a request's
  first chunks); the rows and frames are free sizes.
- `blocks`: longer windows, attending block by block (`BlockedAttention`). Its shapes come from the number of
  blocks, so the window is padded to whole blocks before the call (the padded frames' keys are masked, their
  outputs dropped after it) and the free sizes are the rows and the blocks.

A key (`package_key`) adds this format, the form and the DiT's configuration: widths, layers, each layer's
block window.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from omni_cli.backends.hf import aoti
from omni_cli.backends.hf.dit import BlockedAttention, dit_velocity

FORMAT = 1  # the exported function's inputs and their order; a change makes earlier files unused


def layer_windows(dit: Any) -> list[tuple[int, int]]:
    """Each decoder layer's (blocks back, blocks ahead) it may attend."""
    return [(int(layer.look_backward_block), int(layer.look_ahead_block)) for layer in dit.transformer_blocks]


def package_key(dit: Any, threads: int, form: str = "masks") -> str:
    """What a compiled file depends on, hashed (module docstring; aoti.key_of adds the machine and torch)."""
    config = {k: v for k, v in dit.config.to_dict().items() if not k.startswith("_") and k not in ("architectures",)}
    material = {"format": FORMAT, "form": form, "config": config, "attention": dit.config._attn_implementation,
                "windows": layer_windows(dit), "dtype": str(dit.proj_out.weight.dtype)}
    return aoti.key_of(material, threads)


def distinct_masks(attention: list, mask_of_layer: list[int]) -> list[torch.Tensor]:
    """One mask per distinct layer window, in the order of `mask_of_layer`'s indices, from a per-layer list (a
    `BlockedAttention` gives its block mask)."""
    out: dict[int, torch.Tensor] = {}
    for layer, index in enumerate(mask_of_layer):
        attend = attention[layer]
        out.setdefault(index, attend.mask if isinstance(attend, BlockedAttention) else attend)
    return [out[i] for i in sorted(out)]


class _Velocity(torch.nn.Module):
    """`dit_velocity` over flat tensor arguments: the window's inputs, one mask per distinct layer window,
    each layer's six modulation tensors, then the final norm's two (the order `DiTAheadOfTime.call` passes).
    `form` blocks: the masks are `BlockedAttention`'s, and the frames are whole blocks."""

    def __init__(self, dit: Any, form: str):
        super().__init__()
        self.dit, self.form, self.block = dit, form, int(dit.block_size)
        windows = layer_windows(dit)
        self.distinct = list(dict.fromkeys(windows))
        self.mask_of_layer = [self.distinct.index(w) for w in windows]

    def forward(self, hidden, condition, code_embed, speaker, cos, signed_sin, *rest):
        masks = rest[:len(self.distinct)]
        mods = rest[len(self.distinct):]
        layers = [tuple(mods[6 * i:6 * i + 6]) for i in range(len(self.mask_of_layer))]
        if self.form == "blocks":
            masks = [BlockedAttention.of_mask(mask, self.block, back, ahead)
                     for (back, ahead), mask in zip(self.distinct, masks, strict=True)]
        attention = [masks[i] for i in self.mask_of_layer]
        return dit_velocity(self.dit, attention, hidden, condition, code_embed, speaker, cos, signed_sin, layers,
                            tuple(mods[-2:]))


class DiTAheadOfTime:
    """The compiled files loaded, with this model's DiT weights handed to them: `call` takes a window's inputs as
    `dit_velocity` does (masks per layer, the time modulation of one row) and returns the same tensor to float
    rounding (inductor orders some sums differently: tests/hf/test_hf_dit_ahead.py). `files`: form -> library."""

    def __init__(self, dit: Any, files: dict[str, Path], models: int = 1):
        self.paths = files
        self.block = int(dit.block_size)
        self.mask_of_layer = _Velocity(dit, "masks").mask_of_layer
        weights = {f"dit.{name}": tensor for name, tensor in [*dit.named_parameters(), *dit.named_buffers()]}
        # `models` threads may run each at once
        self._files = {form: aoti.CompiledFile(path, weights, models) for form, path in files.items()}

    def forms(self) -> set[str]:
        return set(self._files)

    def masks(self, attention: list) -> list[torch.Tensor]:
        """The distinct masks of a window's per-layer `attention` list, in the order the files take them."""
        return distinct_masks(attention, self.mask_of_layer)

    def call(self, form: str, fixed: list[torch.Tensor], hidden: torch.Tensor,
             layers: list[tuple[torch.Tensor, ...]], final: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        """The velocity: `fixed` is [condition, code_embed, speaker, cos, signed_sin, *masks] (made once per
        window; for `blocks`, padded to whole blocks as `hidden` is), `hidden` the state (its rows twice with
        guidance), `layers` and `final` one row's modulation."""
        flat = [hidden, *fixed]
        for layer in layers:
            flat.extend(layer)
        flat.extend(final)
        return self._files[form].run(flat)[0]


def export_velocity(dit: Any, form: str, example: list[torch.Tensor], path: Path) -> None:
    """Export `_Velocity` in `form` with its sizes free (the rows, and the frames or the blocks: one file for
    every window of the form) and compile it to the library `path`, the DiT's weights left out of it."""
    from torch.export import Dim

    module = _Velocity(dit, form)
    rows = Dim("rows", min=2, max=1 << 16)
    limit = int(dit.config.max_position_embeddings)
    masks = len(module.distinct)
    if form == "masks":
        frames = Dim("frames", min=2, max=limit)
        mask_shape = {2: frames, 3: frames}  # [1, 1, frames, frames]
    else:
        blocks = Dim("blocks", min=2, max=limit // module.block)
        frames = module.block * blocks
        mask_shape = {1: blocks}  # [1, blocks, block, span * block]
    # forward(hidden, condition, code_embed, speaker, cos, signed_sin, *rest): the varargs' shapes as one tuple
    rest = (mask_shape,) * masks + (None,) * (len(example) - 6 - masks)
    aoti.compile_to(aoti.export(module, tuple(example), ({0: rows, 1: frames},) * 6 + (rest,)), path)


def example_inputs(dit: Any, cond: torch.Tensor, features: torch.Tensor, settings: Any, steps: Any,
                   form: str = "masks") -> list[torch.Tensor]:
    """A window of `form` with two rows (one window with guidance, two without: the files are made for two rows
    or more; two blocks' frames for masks, three whole blocks for blocks), flat in `DiTAheadOfTime.call`'s order
    (random codes and state)."""
    from omni_cli.backends.hf.dit import WindowVelocity, time_modulation

    generator = torch.Generator().manual_seed(0)
    frames, windows = (2 if form == "masks" else 3) * int(dit.block_size), 1 if settings.is_guided else 2
    codes = torch.randint(0, int(dit.config.num_embeds), (windows, frames // int(dit.repeats)), generator=generator)
    window = WindowVelocity(dit, codes, cond.expand(windows, -1), features, settings, steps,
                            blocked_from=0 if form == "masks" else 1)
    state = torch.randn(window.rows, frames, int(dit.mel_dim), generator=generator)
    layers, final = steps.one_row(torch.tensor(0.5)) if steps is not None else time_modulation(dit, torch.tensor(0.5), 1)
    masks = distinct_masks(window.attention, _Velocity(dit, form).mask_of_layer)
    return [state, window.condition, window.code_embed, window.speaker, window.cos, window.signed_sin, *masks,
            *(t for layer in layers for t in layer), *final]


def forms_for(dit: Any, blocked_from: int) -> list[str]:
    """The forms a vocoder with `dit_block_attention_from` = `blocked_from` runs: masks below it (all windows
    with 0), blocks from it where the DiT attends through torch's sdpa (as `WindowVelocity` decides)."""
    forms = [] if blocked_from == 1 else ["masks"]
    if blocked_from and dit.config._attn_implementation == "sdpa":
        forms.append("blocks")
    return forms


def load_or_build(dit: Any, threads: int, example: Callable[[str], list[torch.Tensor]], forms: list[str],
                  on_build: Callable[[Path], None] = lambda path: None, root: Path | None = None,
                  models: int = 1,
                  on_distrust: Callable[[Path, str], None] = lambda path, why: None) -> DiTAheadOfTime:
    """The compiled velocity in each of `forms` for this DiT and thread count: from the cache when it holds the
    file omni made, else built now (`on_build(path)` first: tens of seconds each on a small machine) and kept
    (aoti.built, which calls `on_distrust(path, why)` for a file there it did not make); `example(form)` gives
    the inputs to export from; `models`: threads that may run it at once."""
    files = {form: aoti.built("dit-ahead-of-time", f"velocity-{form}", package_key(dit, threads, form),
                              lambda library, form=form: export_velocity(dit, form, example(form), library),
                              on_build, root, on_distrust)
             for form in forms}
    return DiTAheadOfTime(dit, files, models)
