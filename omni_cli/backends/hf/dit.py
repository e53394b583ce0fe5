"""The token2wav DiT as a function of one window: flow-matching ODE from given noise to mel frames."""

# The arithmetic (time points, RK4 stages, guidance) follows transformers' `Qwen2_5OmniToken2WavDiTModel.sample`
# operation for operation, so a window covering the whole utterance reproduces it bit for bit
# (tests/hf/test_hf_token2wav.py). Most of `forward` does not depend on the ODE's step: `WindowVelocity` computes
# the codec embeddings, the speaker features (once per voice), the rotary tables and each layer's attention mask
# once per window, and `TimeModulation` what depends on the time alone once per time point; each velocity
# evaluation runs only the rest (`dit_velocity`), with the same operations on the same inputs. Long windows
# attend block by block (dit_attention.py); dit_compile.py compiles `dit_velocity`; the ODE is dit_ode.py.

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
import torch.nn.functional as F

from omni_cli.backends.hf.dit_attention import BlockedAttention, layer_attention
from omni_cli.backends.hf.dit_ode import ODESettings, integrate_rk4, stage_times, time_points

if TYPE_CHECKING:
    from omni_cli.backends.hf.dit_compile import DiTCompile

__all__ = ["BlockedAttention", "ODESettings", "TimeModulation", "WindowVelocity", "dit_velocity", "sample_window",
           "speaker_features", "time_modulation"]

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


def one_row_modulation(dit: Any, steps: TimeModulation | None, time: torch.Tensor) -> tuple:
    """The time modulation a compiled evaluation reads: one row, which every row of the window broadcasts."""
    return steps.one_row(time) if steps is not None else time_modulation(dit, time, 1)


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
            layers, final = one_row_modulation(self.dit, self.steps, time)
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
        hidden = hidden + gate_msa * layer_attention(block.attn, norm, attend, cos, signed_sin)
        norm = F.layer_norm(hidden, (width,), None, None, block.ff_norm.eps) * scale_mlp + shift_mlp
        up, down = block.ff.ff[0], block.ff.ff[3]
        hidden = hidden + gate_mlp * F.linear(F.gelu(F.linear(norm, up.weight, up.bias), approximate="tanh"),
                                              down.weight, down.bias)
    scale_out, shift_out = final
    norm = F.layer_norm(hidden, (width,), None, None, dit.norm_out.norm.eps) * scale_out + shift_out
    return F.linear(norm, dit.proj_out.weight, dit.proj_out.bias)


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
