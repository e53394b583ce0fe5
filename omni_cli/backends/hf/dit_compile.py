"""`dit_velocity` compiled by torch.compile (inductor) once for windows of any length and batch, with inductor's
CPU kernels called without the GIL so the vocoder's row threads overlap."""

from __future__ import annotations

from typing import Any

import torch

from omni_cli.backends.hf.dit import TimeModulation, WindowVelocity, dit_velocity, one_row_modulation, sample_window
from omni_cli.backends.hf.dit_attention import BlockedAttention
from omni_cli.backends.hf.dit_ode import ODESettings

# inductor's CPU kernels are C++ functions called from Python with the GIL held (torch 2.13's binding is
# "kernel(<parsed args>); Py_RETURN_NONE;"), so the vocoder's row threads (rows.py) would take turns through
# them, and two threads would gain much less over one than with the GIL let go around the call. The binding
# below parses the arguments with the GIL held, then calls the kernel without it: the kernel reads only the raw
# pointers and numbers parsed, and the tensors behind them stay referenced by the caller for the call.
_INDUCTOR_HOLDS_GIL = "kernel({}); Py_RETURN_NONE;"
_INDUCTOR_LETS_GO = ("auto parsed = std::make_tuple({}); Py_BEGIN_ALLOW_THREADS std::apply(kernel, parsed); "
                     "Py_END_ALLOW_THREADS Py_RETURN_NONE;")


def let_inductor_kernels_go_of_the_gil() -> bool:
    """Compile inductor's CPU kernels with the binding that lets the GIL go (above). False where this torch's
    binding is not the one this was written against: its kernels then keep the GIL (correct, slower in threads)."""
    from torch._inductor import codecache

    bindings = getattr(codecache, "CppPythonBindingsCodeCache", None)
    current = getattr(bindings, "call_entry_function", None)
    if current == _INDUCTOR_HOLDS_GIL:
        bindings.call_entry_function = _INDUCTOR_LETS_GO
    return getattr(bindings, "call_entry_function", None) == _INDUCTOR_LETS_GO


class DiTCompile:
    """`dit_velocity` compiled by torch.compile (inductor) once for windows of any length and batch: a CPU
    evaluation of a small DiT is hundreds of short operations, which inductor fuses into a few loops.

    Compiling is slow (tens of seconds a form on a 2-core machine the first time; inductor keeps its
    kernels in its cache, $TORCHINDUCTOR_CACHE_DIR or /tmp/torchinductor_USER, so later loads skip
    that part), so it happens when the vocoder loads (`warm`), never under a request: one window of each
    form a vocoder runs, with the rows and frames marked as sizes that vary (`mark`), so every later
    window reuses that code. Every row of a batch reads the same time modulation (`TimeModulation.one_row`).
    The values are the eager function's to float rounding (inductor reorders sums): about 150 dB SNR on the
    tiny checkpoint's mel (tests/hf/test_hf_dit_compile.py)."""

    def __init__(self) -> None:
        self.threads_overlap = let_inductor_kernels_go_of_the_gil()
        # dynamic=False: only the sizes `mark` names vary (with every size symbolic, dynamic=True, a vocoder load
        # is several times slower even with inductor's cache full: tracing reasons about every size)
        self.forward = torch.compile(dit_velocity, dynamic=False)

    @staticmethod
    def mark_rows_frames(tensor: torch.Tensor, rows: int = 0, frames: int = 1) -> None:
        """Mark the `rows` and `frames` dims of `tensor` as varying (a dim of size 1 torch.compile always
        specializes: it is left as it is)."""
        for dim in (rows, frames):
            if tensor.shape[dim] > 1:
                torch._dynamo.mark_dynamic(tensor, dim)

    def mark(self, velocity: WindowVelocity) -> None:
        """The varying sizes of a window's inputs: rows and frames, and the frames of its attention masks."""
        for tensor in (velocity.condition, velocity.code_embed, velocity.speaker, velocity.cos, velocity.signed_sin):
            self.mark_rows_frames(tensor)
        for attend in {id(a): a for a in velocity.attention}.values():
            if isinstance(attend, BlockedAttention):
                self.mark_rows_frames(attend.mask, rows=0, frames=1)  # [1, blocks, block, span * block]
            else:
                self.mark_rows_frames(attend, rows=2, frames=3)  # [1, 1, frames, frames]

    @staticmethod
    def modulation(dit: Any, steps: TimeModulation | None, time: torch.Tensor) -> tuple:
        """The time modulation a compiled evaluation reads: one row, which every row of the window broadcasts."""
        return one_row_modulation(dit, steps, time)

    @staticmethod
    def warm_shapes(block: int, blocked_from: int, guided: bool) -> list[tuple[int, int]]:
        """(windows, frames) that reach each form a vocoder with `blocked_from` runs: whole-window masks below
        `blocked_from` blocks, blocks from there (whole, and padded to whole); without guidance, a batch of one
        too (a size torch.compile specializes)."""
        frames = []
        if blocked_from != 1:  # some windows attend through masks: those under blocked_from blocks (or all)
            frames.append(block * (min(blocked_from, 4) - 1) if blocked_from else 3 * block)
        if blocked_from:  # a window of whole blocks, and one BlockedAttention pads: two compiles
            frames += [block * blocked_from, block * blocked_from + 2]
        return [(windows, f) for f in frames for windows in ((1,) if guided else (1, 2))]

    @torch.no_grad()
    def warm(self, dit: Any, cond: torch.Tensor, features: torch.Tensor, settings: ODESettings,
             steps: TimeModulation | None, blocked_from: int) -> None:
        """Compile now: one window of each shape `warm_shapes` names (random codes and noise, output dropped)."""
        generator = torch.Generator().manual_seed(0)
        for windows, frames in self.warm_shapes(int(dit.block_size), blocked_from, settings.is_guided):
            codes = torch.randint(0, int(dit.config.num_embeds), (windows, frames // int(dit.repeats)),
                                  generator=generator)
            noise = torch.randn(windows, frames, int(dit.mel_dim), generator=generator)
            sample_window(dit, noise, codes, cond.expand(windows, -1), features, settings, steps, blocked_from, self)
