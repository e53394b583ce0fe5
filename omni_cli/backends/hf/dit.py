"""The token2wav DiT as a function of one window: flow-matching ODE from given noise to mel frames."""

# The arithmetic (time points, RK4 stages, guidance) follows transformers' `Qwen2_5OmniToken2WavDiTModel.sample`
# operation for operation, so a window covering the whole utterance reproduces it bit for bit.
#
# The ODE calls the DiT 4 * (num_steps - 1) times on one window, and most of `forward` does not depend on
# the step: the codec embeddings, the speaker encoder over the reference mel (an ECAPA-TDNN, about half
# of a small window's forward), the rotary tables and the block mask. `WindowVelocity` computes those
# once per window — the speaker encoder once per voice — with the same operations on the same inputs,
# and runs only the step-dependent part of `forward` per call; the result is the same tensor. Each decoder
# layer's attention mask (its block window of the block mask) is made once per window too, where
# `DiTDecoderLayer.forward` compares the whole [rows, heads, frames, frames] block mask twice per layer per
# call: `WindowVelocity` runs the layer's operations in its order with that mask made once, as a [frames,
# frames] comparison that attention broadcasts over the rows and heads (the same values, so the same
# attention). The mask is handed
# to attention as the additive float mask (0 where a frame may attend, -inf where not) that torch's
# scaled_dot_product_attention otherwise makes from a boolean one on every call: a `where` over the whole
# [rows, heads, frames, frames] block (8 x 264 frames: 1.50-1.54 s a window with it, 1.17-1.21 s without;
# examples/hf_vocoder_ab.py). The kernel then reads the same mask values, so the output is the same tensor
# (tests/hf/test_hf_token2wav.py).
#
# A small window is almost all fixed cost per tensor operation (a 72-frame window of the tiny checkpoint ran
# about 380 operations per velocity evaluation, 36 evaluations), so the per-evaluation part is lean too, with
# the same values: what depends on the time alone (the time embedding through each AdaLayerNormZero's linear)
# comes from `TimeModulation`, made once per time point and kept between windows; the first head's rotary
# embedding is one reshape (the deinterleave), one concatenation (rotate_half) and a product-sum with the
# sin's first half negated (x * -s is -(x * s) exactly); the layers' linears, norms and GELU are called as
# functions, not modules. Same tensors (tests/hf/test_hf_token2wav.py, tests/hf/test_hf_first_audio.py).
#
# A layer's block mask lets a frame see its own block of `block_size` frames and, in a few layers, the one
# before or after it; whole-window attention still scores every frame against every other and masks all but
# those. From `blocked_from` blocks on, `WindowVelocity` scores each block of queries against its own key
# blocks alone (`BlockedAttention`): the terms the mask keeps, so the same attention up to the order of float
# sums (170-190 dB SNR on the tiny checkpoint's mel, 142 dB at 3B width), and less work the longer the window
# (on the tiny checkpoint, one thread: 4 rows of 264 frames 30% less DiT time, 168 frames 15%, 120 frames 10%,
# 72 frames the same; at 3B width, where the linears dominate, 3-8% less at 264 frames: examples/hf_dit_blocks.py).

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

ONE_THIRD = 1 / 3
TWO_THIRDS = 2 / 3


@dataclass(frozen=True)
class ODESettings:
    num_steps: int = 10
    guidance_scale: float = 0.5
    sway_coefficient: float | None = -1.0

    @property
    def is_guided(self) -> bool:
        return self.guidance_scale >= 1e-5


def time_points(settings: ODESettings, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
    points = torch.linspace(0, 1, settings.num_steps, device=device, dtype=dtype)
    if settings.sway_coefficient is not None:
        # sway sampling: more of the steps are spent near t = 0, where the mel takes shape
        points += settings.sway_coefficient * (torch.cos(torch.pi / 2 * points) - 1 + points)
    return points


def stage_times(start: torch.Tensor, end: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """The times RK4's four stages evaluate the velocity at over [start, end], as `integrate_rk4` computes them."""
    step = end - start
    return start, start + step * ONE_THIRD, start + step * TWO_THIRDS, end


def integrate_rk4(velocity: Any, initial: torch.Tensor, points: torch.Tensor) -> torch.Tensor:
    """The final state of dy/dt = velocity(t, y) over `points`, with the 3/8-rule RK4 step."""
    value = initial
    for start, end in zip(points[:-1], points[1:], strict=True):
        step = end - start
        first, third, two_thirds, last = stage_times(start, end)
        k1 = velocity(first, value)
        k2 = velocity(third, value + step * k1 * ONE_THIRD)
        k3 = velocity(two_thirds, value + step * (k2 - k1 * ONE_THIRD))
        k4 = velocity(last, value + step * (k1 - k2 + k3))
        value = value + (k1 + 3 * (k2 + k3) + k4) * step / 8
    return value


@torch.no_grad()
def speaker_features(dit: Any, ref_mel: torch.Tensor, guided: bool) -> torch.Tensor:
    """The speaker encoder's output for one voice, as `forward` computes it: [2, enc_dim] with guidance
    (the conditioned row, then the row of a zeroed reference), else [1, enc_dim]."""
    if guided:
        ref_mel = torch.cat([ref_mel, torch.zeros_like(ref_mel)], dim=0)
    return dit.input_embed.spk_encoder(ref_mel)


def time_modulation(dit: Any, time: torch.Tensor, rows: int) -> tuple:
    """Each layer's (1 + scale, shift, gate) for attention and for the MLP, and the final norm's (1 + scale,
    shift), from the time embedding of `time` over `rows` rows: `forward`'s operations on its inputs."""
    embedding = dit.time_embed(time.repeat(rows))
    layers = []
    for block in dit.transformer_blocks:
        norm = block.attn_norm
        shift_msa, scale_msa, gate_msa, shift_mlp, scale_mlp, gate_mlp = torch.chunk(
            norm.linear(norm.silu(embedding)), 6, dim=1)
        layers.append((1 + scale_msa[:, None], shift_msa[:, None], gate_msa.unsqueeze(1),
                       1 + scale_mlp[:, None], shift_mlp[:, None], gate_mlp.unsqueeze(1)))
    norm = dit.norm_out
    scale, shift = torch.chunk(norm.linear(norm.silu(embedding)), 2, dim=1)
    return layers, ((1 + scale)[:, None, :], shift[:, None, :])


class TimeModulation:
    """What the DiT computes from the ODE's time alone: the time embedding through each layer's
    AdaLayerNormZero linear (its shift, 1 + scale and gate, shaped as the layer uses them) and the final
    norm's. Every window's ODE evaluates the velocity at the same times (28 distinct ones for 36
    evaluations), so these are made once, when the vocoder loads, for a request alone (its 1 row, 2 with
    guidance), with the same operations on the same inputs as `forward`; a batch of windows computes its own
    per window (its per-row work dwarfs them, and kept entries would grow with the batch)."""

    def __init__(self, dit: Any, settings: ODESettings, device: torch.device, dtype: torch.dtype):
        self.dit, self.rows = dit, 2 if settings.is_guided else 1
        self._made: dict[tuple, tuple] = {}
        points = time_points(settings, device, dtype)
        with torch.no_grad():
            for start, end in zip(points[:-1], points[1:], strict=True):
                for time in stage_times(start, end):
                    if (float(time), time.dtype) not in self._made:
                        self._made[float(time), time.dtype] = time_modulation(dit, time, self.rows)
        self.bytes = sum(t.numel() * t.element_size() for layers, final in self._made.values()
                         for t in [*(t for layer in layers for t in layer), *final])

    def at(self, time: torch.Tensor, rows: int) -> tuple[list[tuple[torch.Tensor, ...]], tuple[torch.Tensor, torch.Tensor]]:
        made = self._made.get((float(time), time.dtype)) if rows == self.rows else None
        return made if made is not None else time_modulation(self.dit, time, rows)

    def one_row(self, time: torch.Tensor) -> tuple[list[tuple[torch.Tensor, ...]], tuple[torch.Tensor, torch.Tensor]]:
        """The first row of `at(time, ...)`, which every row of a batch broadcasts (all rows share the time:
        the other rows equal it up to the rounding of a matrix product of another height); kept per time."""
        key = (float(time), time.dtype, "one row")
        made = self._made.get(key)
        if made is None:
            layers, final = self.at(time, self.rows)
            made = self._made[key] = [tuple(t[:1] for t in layer) for layer in layers], tuple(t[:1] for t in final)
        return made


class BlockedAttention:
    """Attention over a window of `frames` frames in blocks of `block` frames, each block of queries scored
    against the key blocks `back` before it to `ahead` after it: what `DiTDecoderLayer` attends to with its
    block mask, without scoring the pairs the mask drops. The keys of all blocks are one strided view of
    the (padded) keys, so only the queries, the padding and the output are copied."""

    def __init__(self, frames: int, block: int, back: int, ahead: int, dtype: torch.dtype, device: torch.device):
        self.frames, self.block, self.back, self.ahead = frames, block, back, ahead
        self.blocks = -(-frames // block)
        span = back + 1 + ahead
        key_block = torch.arange(self.blocks, device=device)[:, None] + torch.arange(-back, ahead + 1, device=device)
        key_frame = key_block[:, :, None] * block + torch.arange(block, device=device)  # [blocks, span, block]
        real = (key_block[:, :, None] >= 0) & (key_block[:, :, None] < self.blocks) & (key_frame < frames)
        # additive, as attention makes a boolean mask; padded queries (past `frames`) see their block's real keys
        additive = torch.zeros(real.shape, dtype=dtype, device=device).masked_fill_(~real, float("-inf"))
        self.mask = additive.reshape(self.blocks, 1, span * block).expand(-1, block, -1).unsqueeze(0).contiguous()

    @classmethod
    def of_mask(cls, mask: torch.Tensor, block: int, back: int, ahead: int) -> BlockedAttention:
        """One over a given block `mask` ([1, blocks, block, span * block], as made here): dit_aot's exported
        form, whose mask is an input."""
        made = cls.__new__(cls)
        made.block, made.back, made.ahead, made.mask = block, back, ahead, mask
        made.blocks = mask.shape[1]
        return made

    def __call__(self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
        """[rows, heads, frames, head_dim] each -> [rows, frames, heads * head_dim]."""
        rows, heads, frames, width = query.shape
        block = self.block
        blocks = -(-frames // block)  # self.blocks, from the query's shape (torch.compile: one symbol, frames)
        pad = blocks * block - frames

        def spans(states: torch.Tensor) -> torch.Tensor:  # [rows * heads, blocks, span * block, head_dim], a view
            states = F.pad(states.reshape(rows * heads, frames, width),
                           (0, 0, self.back * block, self.ahead * block + pad))
            span = (self.back + 1 + self.ahead) * block
            return states.as_strided((rows * heads, blocks, span, width), (states.stride(0), block * width, width, 1))

        queries = F.pad(query, (0, 0, 0, pad)).reshape(rows * heads, blocks, block, width)
        out = F.scaled_dot_product_attention(queries, spans(key), spans(value), attn_mask=self.mask)
        out = out.reshape(rows, heads, blocks * block, width)[:, :, :frames]
        return out.transpose(1, 2).reshape(rows, frames, heads * width)


class WindowVelocity:
    """`dit.forward` over one window of `batch` rows, with everything that does not change between ODE
    steps computed once. With guidance the DiT runs [conditioned rows; unconditioned rows] as one batch
    and the velocity is the guided combination, as in transformers' `sample`."""

    def __init__(self, dit: Any, codes: torch.Tensor, cond: torch.Tensor, features: torch.Tensor,
                 settings: ODESettings, steps: TimeModulation | None = None, blocked_from: int = 0,
                 compiled: DiTCompile | None = None, ahead: Any = None):
        batch, frames = codes.shape[0], codes.shape[1] * dit.repeats
        self.dit, self.guided, self.guidance = dit, settings.is_guided, settings.guidance_scale
        speaker = cond.unsqueeze(1).repeat(1, frames, 1)  # [batch, frames, enc_emb_dim]
        code_embed = dit.text_embed(codes, drop_code=False)
        if self.guided:
            # features rows: [conditioned, unconditioned] of one voice, spread over the batch's rows
            features = torch.cat([features[:1].expand(batch, -1), features[1:2].expand(batch, -1)], dim=0)
            speaker = torch.cat([speaker, torch.zeros_like(speaker)], dim=0)
            code_embed = torch.cat([code_embed, dit.text_embed(codes, drop_code=True)], dim=0)
        else:
            features = features[:1].expand(batch, -1)
        rows = features.shape[0]
        self.condition = features.unsqueeze(1).repeat(1, frames, 1)
        self.code_embed, self.speaker, self.rows = code_embed, speaker, rows
        like = torch.empty(rows, frames, 1, dtype=speaker.dtype, device=speaker.device)  # shape, dtype, device
        positions = torch.arange(frames, device=speaker.device)[None, :].repeat(rows, 1)
        cos, sin = dit.rotary_embed(like, positions)  # [rows, frames, head_dim]
        sign = torch.ones(sin.shape[-1], dtype=sin.dtype, device=sin.device)
        sign[:sin.shape[-1] // 2] = -1
        self.cos, self.signed_sin = cos, sin * sign
        self.steps, self.compiled = steps, compiled
        # per decoder layer, its attention: from `blocked_from` blocks on (0: never), block by block where
        # transformers' own kernel (sdpa) is the one the layers use; else what DiTDecoderLayer.forward computes,
        # as the float mask attention makes of it (in the queries' dtype, as attention converts a boolean mask)
        block, dtype = int(dit.block_size), dit.proj_out.weight.dtype
        by_blocks = bool(blocked_from) and -(-frames // block) >= blocked_from and dit.config._attn_implementation == "sdpa"
        block_diff = None if by_blocks else dit._create_block_diff(like)  # [rows, heads, frames, frames], a view
        self.attention: list[torch.Tensor | BlockedAttention] = []
        made: dict[tuple[int, int], Any] = {}
        for layer in dit.transformer_blocks:
            window = (layer.look_backward_block, layer.look_ahead_block)
            if window not in made and by_blocks:
                made[window] = BlockedAttention(frames, block, *window, dtype, speaker.device)
            elif window not in made:
                one = block_diff[0, 0]
                allowed = (one >= -float(window[0])) & (one <= float(window[1]))
                additive = torch.zeros(allowed.shape, dtype=dtype, device=speaker.device)
                # [1, 1, frames, frames]: attention broadcasts it over the rows and heads (an expanded view of
                # their shape would be guarded on its sizes by torch.compile)
                made[window] = additive.masked_fill_(~allowed, float("-inf"))[None, None]
            self.attention.append(made[window])
        # at least two rows, and a form the velocity compiled ahead of time (dit_aot.py) has, if given: its
        # per-frame inputs padded to whole blocks for the block form (the padding's keys are masked, its rows
        # dropped after the call)
        self.ahead, self.ahead_form, self.ahead_fixed, self.ahead_pad = None, "", [], 0
        form = "blocks" if by_blocks else "masks"
        if ahead is not None and rows >= 2 and form in ahead.forms():
            self.ahead, self.ahead_form, self.frames = ahead, form, frames
            self.ahead_pad = -(-frames // block) * block - frames if by_blocks else 0
            per_frame = (self.condition, self.code_embed, self.speaker, self.cos, self.signed_sin)
            self.ahead_fixed = [F.pad(t, (0, 0, 0, self.ahead_pad)).contiguous() for t in per_frame]
            self.ahead_fixed += [m.contiguous() for m in ahead.masks(self.attention)]
        elif compiled is not None:
            compiled.mark(self)

    def __call__(self, time: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
        # with guidance the conditioned and unconditioned rows are made here and combined after, so a compiled
        # `forward` never sees or makes a batch of one (which torch.compile specializes: one more compile)
        hidden = torch.cat([state, state], dim=0) if self.guided else state
        if self.ahead is not None:
            layers, final = DiTCompile.modulation(self.dit, self.steps, time)
            if self.ahead_pad:
                hidden = F.pad(hidden, (0, 0, 0, self.ahead_pad))
            out = self.ahead.call(self.ahead_form, self.ahead_fixed, hidden.contiguous(), layers, final)
            if self.ahead_pad:
                out = out[:, :self.frames]
        else:
            if self.compiled is not None:
                layers, final = self.compiled.modulation(self.dit, self.steps, time)
                forward = self.compiled.forward
                self.compiled.mark_rows_frames(hidden)
            else:
                layers, final = (self.steps.at(time, self.rows) if self.steps
                                 else time_modulation(self.dit, time, self.rows))
                forward = dit_velocity
            out = forward(self.dit, self.attention, hidden, self.condition, self.code_embed, self.speaker, self.cos,
                          self.signed_sin, layers, final)
        if not self.guided:
            return out
        guided, null = torch.chunk(out, 2, dim=0)
        return guided + (guided - null) * self.guidance


def dit_velocity(dit: Any, attention: list, hidden: torch.Tensor, condition: torch.Tensor,
                 code_embed: torch.Tensor, speaker: torch.Tensor, cos: torch.Tensor, signed_sin: torch.Tensor,
                 layers: list[tuple[torch.Tensor, ...]], final: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    """The DiT's output at one ODE time, each row's: `forward` from the window's inputs (`WindowVelocity`'s,
    made once) and that time's modulation (`TimeModulation`), each layer attending through its `attention`
    entry (an additive mask or a `BlockedAttention`); `hidden` is the ODE's state, its rows twice with
    guidance (the conditioned rows, then the unconditioned; `WindowVelocity` combines their outputs). A
    function of its arguments alone, so `DiTCompile` can compile it once for every window."""
    proj = dit.input_embed.proj
    hidden = F.linear(torch.cat((hidden, condition, code_embed, speaker), dim=-1), proj.weight, proj.bias)
    width = hidden.shape[2]
    for block, attend, (scale_msa, shift_msa, gate_msa, scale_mlp, shift_mlp, gate_mlp) in zip(
            dit.transformer_blocks, attention, layers, strict=True):
        # DiTDecoderLayer.forward with AdaLayerNormZero's time part looked up (TimeModulation)
        norm = F.layer_norm(hidden, (width,), None, None, block.attn_norm.norm.eps) * scale_msa + shift_msa
        hidden = hidden + gate_msa * _attention(block.attn, norm, attend, cos, signed_sin)
        norm = F.layer_norm(hidden, (width,), None, None, block.ff_norm.eps) * scale_mlp + shift_mlp
        up, down = block.ff.ff[0], block.ff.ff[3]
        hidden = hidden + gate_mlp * F.linear(F.gelu(F.linear(norm, up.weight, up.bias), approximate="tanh"),
                                              down.weight, down.bias)
    scale_out, shift_out = final
    norm = F.layer_norm(hidden, (width,), None, None, dit.norm_out.norm.eps) * scale_out + shift_out
    return F.linear(norm, dit.proj_out.weight, dit.proj_out.bias)


def _attention(attn: Any, hidden: torch.Tensor, attend: torch.Tensor | BlockedAttention, cos: torch.Tensor,
               signed_sin: torch.Tensor) -> torch.Tensor:
    """DiTAttention.forward: the first head's query and key deinterleaved and rotated (transformers'
    `deinterleave_head_dim` and `apply_rotary_pos_emb`) as one gather, two products and a sum each; then
    attention over the whole window with the additive mask `attend`, or block by block (`BlockedAttention`)."""
    rows, frames = hidden.shape[0], hidden.shape[1]
    query, key, value = (F.linear(hidden, proj.weight, proj.bias).view(rows, frames, attn.heads, -1).transpose(1, 2)
                         for proj in (attn.to_q, attn.to_k, attn.to_v))
    half = cos.shape[-1] // 2
    for states in (query, key):
        first = states[:, 0]  # [rows, frames, head_dim], rotary pairs interleaved
        deinterleaved = first.unflatten(-1, (half, 2)).transpose(-1, -2).reshape(first.shape)
        # rotate_half's (-x2, x1) times sin is (x2, x1) times the sin whose first half is negated: exact
        rotated = torch.cat((deinterleaved[..., half:], deinterleaved[..., :half]), dim=-1)
        states[:, 0] = deinterleaved * cos + rotated * signed_sin
    if isinstance(attend, BlockedAttention):
        attended = attend(query, key, value)
    else:
        kernel = ALL_ATTENTION_FUNCTIONS[attn.config._attn_implementation]  # as DiTAttention looks it up
        attended, _ = kernel(attn, query, key, value, attention_mask=attend, is_causal=False)
    out = attn.to_out[0]
    return F.linear(attended.reshape(rows, frames, -1), out.weight, out.bias)


@torch.no_grad()
def sample_window(
    dit: Any,
    noise: torch.Tensor,
    codes: torch.Tensor,
    cond: torch.Tensor,
    features: torch.Tensor,
    settings: ODESettings,
    steps: TimeModulation | None = None,
    blocked_from: int = 0,
    compiled: DiTCompile | None = None,
    ahead: Any = None,
) -> torch.Tensor:
    """Mel [B, mel_dim, frames] of `codes` [B, n] from `noise` [B, frames, mel_dim] (frames = n * repeats);
    `cond` [B, enc_emb_dim] is the speaker embedding, `features` the voice's `speaker_features`, `steps`
    the DiT's `TimeModulation` kept between windows (None: one for this window); windows of `blocked_from`
    blocks or more attend block by block (`BlockedAttention`; 0: never, transformers' attention exactly);
    `compiled`: each velocity through `DiTCompile`'s compiled `dit_velocity` (None: the function as it is);
    `ahead`: a `dit_aot.DiTAheadOfTime`, which runs the velocity of windows of the forms it was built for
    (its own, not `compiled`'s)."""
    frames = noise.shape[1]
    if frames != codes.shape[1] * dit.repeats:
        raise ValueError(f"a DiT window of {codes.shape[1]} codes needs {codes.shape[1] * dit.repeats} noise frames")
    if frames > dit.config.max_position_embeddings:
        raise ValueError(
            f"a DiT window of {frames} mel frames exceeds the DiT's {dit.config.max_position_embeddings} positions"
        )
    velocity = WindowVelocity(dit, codes, cond, features, settings, steps, blocked_from, compiled, ahead)
    final = integrate_rk4(velocity, noise, time_points(settings, codes.device, velocity.speaker.dtype))
    return final.permute(0, 2, 1)


# inductor's CPU kernels are C++ functions called from Python with the GIL held (torch 2.13's binding is
# "kernel(<parsed args>); Py_RETURN_NONE;"), so the vocoder's row threads (rows.py) would take turns through
# them: 1.1-1.5x two threads' speed-up over one, against 1.5-2.0x with the GIL let go around the call (4 rows
# of 264 frames, the tiny checkpoint). The binding below parses the arguments with the GIL held, then calls the
# kernel without it: the kernel reads only the raw pointers and numbers parsed, and the tensors behind them stay
# referenced by the caller for the call.
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
        # that found inductor's cache full took 41-46 s against 10 s: tracing reasons about every size)
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
        return steps.one_row(time) if steps is not None else time_modulation(dit, time, 1)

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
