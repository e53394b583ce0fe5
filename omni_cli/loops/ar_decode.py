"""ar_decode: one prefill WorkUnit, then one WorkUnit per token, until EOS or a length bound."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ..backends.base import AR_PREFILL, AR_TOKEN, ARItem, ARModel, ARStepInput, ARStepOutput
from ..spec.card import LoopSpec
from ..spec.errors import SpecError, SpecIssue
from .base import (
    DONE,
    Done,
    Footprint,
    Loop,
    LoopRequest,
    LoopResult,
    LoopState,
    LoopStatus,
    OutputBound,
    Wait,
    WorkPlan,
)
from .channel import ARChannel
from .feeds import ARFeed
from .recorder import record_ar
from .registry import register_loop_kind
from .residuals import RESIDUAL_STREAM, ResidualChoice, residual_sampler
from .sampling import Sampler


class LoopInputError(ValueError):
    """A request's input cannot run through this loop (e.g. a prompt longer than the model allows)."""


@dataclass
class ARState(LoopState):
    feed: ARFeed | None = None
    cache: Any = None
    rng: np.random.Generator | None = None
    seed: int = 0  # the request's: a frame's residual codes draw from a stream keyed by it and the step
    residual_replay: list | None = None  # re-scoring: each frame's recorded residual codes
    max_tokens: int = 0
    positions: int = 0  # positions in the cache
    history: list[int] = field(default_factory=list)  # prompt + generated ids, for the repetition penalty
    tokens: list[int] = field(default_factory=list)  # generated ids (EOS included when it came)
    # (its stop_reason: eos | input_bound | max_tokens | max_positions)
    truncated: bool = False  # it stopped at a cap (its output is cut short), not at its natural end
    # a prefill in parts (heard audio, block by block): the parts before the last, kept for the prompt's item
    part_is_last: bool = True
    parts: list = field(default_factory=list)  # (consumed ids, hidden, embeds) of each earlier part

    def release(self) -> None:
        self.cache = None  # the KV cache is the big thing a request holds


def join_rows(component: ARModel, parts: list[Any]) -> Any:
    """A prompt's parts' rows as one, by the component's join; rows a placed component keeps in its worker come
    back as handles (executors/handoff.py), which join by their own rule."""
    join = getattr(parts[0], "join_rows", None)
    return join(parts) if join is not None else component.join_rows(parts)


@register_loop_kind
class ARDecodeLoop(Loop):
    kind = "ar_decode"
    work_unit = AR_TOKEN
    roles = ("thinker", "talker")
    reads, makes = "ar_feed", "ar_stream"
    output = ARChannel
    spec: LoopSpec
    component: ARModel

    def __init__(self, loop_id: str, spec: LoopSpec, component: ARModel, stage: int):
        super().__init__(loop_id, spec, component, stage)
        self.sampler = Sampler(spec.sampling, component.suppress_token_ids, component.eos_token_ids)
        self._token_key = (loop_id, AR_TOKEN)  # every token plan's batch key: made once, not per step
        self.residual_groups = component.residual_groups
        self.residual_sampler = residual_sampler(spec.sampling, spec.residual_sampling)

    def init(self, feed: ARFeed, out: ARChannel, request: LoopRequest) -> ARState:
        asked = feed.max_tokens()  # the caller's cap (SpeakRequest.max_tokens), on the loop reading the text
        limit = self.spec.max_tokens if asked is None else min(asked, self.spec.max_tokens)
        self._check_fits(feed, feed.bounds()[1], limit, asked)
        return ARState(
            loop_id=self.loop_id, request_id=request.request_id, feed=feed, out=out,
            cache=self.component.new_cache(),
            # one stream of random numbers per request and loop: interleaving cannot change it
            rng=np.random.default_rng([request.seed, self.stage]), seed=request.seed,
            max_tokens=limit,
        )

    def footprint(self, state: ARState, upstream: OutputBound) -> tuple[Footprint, OutputBound]:
        """The KV cache for the prompt plus every token this loop may make, or fewer positions when the feed
        knows (echo; the talker's codes per reply token): a feed's bound alone (the talker's 4096 codes)
        would reserve for tokens this loop's limit never makes."""
        feed, limit, most = state.feed, state.max_tokens, self.component.max_positions
        prompt = feed.prefill_bound(upstream)
        known = feed.max_positions_bound(upstream)
        positions = min(prompt + limit + 1, most if known is None else min(known, most))
        prefill = min(prompt, positions)
        peak = max(self.component.step_bytes(prefill, prefill), self.component.step_bytes(1, positions))
        made = feed.max_items_bound(upstream)  # sized from upstream's bound, not from what it sent so far
        made = OutputBound(limit if made is None else min(limit, made), prompt_positions=prompt)
        return Footprint(self.component.cache_bytes(positions), peak), made

    def _check_fits(self, feed: ARFeed, feed_max: int | None, limit: int, asked: int | None) -> None:
        """Limits known before the run are checked before it: no silent truncation."""
        def refuse(message: str) -> None:
            raise SpecError([SpecIssue("<request>", None, "text", message)])

        most = self.component.max_positions
        if feed.prefill_is_known() and feed.prefill_bound() + 1 > most:
            refuse(f"the prompt is {feed.prefill_bound()} positions, over the {self.loop_id} loop's "
                   f"max_positions of {most} (split it into lines: one utterance per line)")
        if feed.forced_at(0) is None:
            return
        # echo: cutting the forced reply short would silently drop the end of the text
        if feed_max > limit:
            whose = "the request's" if asked is not None and asked < self.spec.max_tokens else f"the {self.loop_id} loop's"
            refuse(f"the text is {feed_max - 1} tokens, over {whose} max_tokens of {limit} "
                   "(split it into lines: one utterance per line)")
        known = feed.max_positions_bound()
        if known is not None and known > most:
            refuse(f"the text needs {known} positions, over the {self.loop_id} loop's max_positions of {most} "
                   "(split it into lines: one utterance per line)")

    def next(self, state: ARState) -> WorkPlan | Wait | Done:
        if state.status is LoopStatus.FINISHED:
            return DONE
        if state.step == 0:  # prefill (in parts when the feed gives it so: each part extends the cache)
            prefill = state.feed.prefill_part(state.positions)
            if prefill is None:
                state.status = LoopStatus.WAITING
                return Wait(state.feed.describe_wait)
            n = state.positions + len(prefill.token_ids)
            if n + 1 > self.component.max_positions:
                raise LoopInputError(f"{self.loop_id}: prompt of {n} tokens does not fit the model's "
                                     f"{self.component.max_positions} positions")
            state.status = LoopStatus.RUNNING
            state.part_is_last = prefill.is_last
            return WorkPlan(AR_PREFILL, 0, (self.loop_id, AR_PREFILL),
                            self.component.step_bytes(len(prefill.token_ids), n),
                            ARStepInput(state.cache, list(prefill.token_ids), prefill=prefill.payload),
                            forced_token=state.feed.forced_at(0) if prefill.is_last else None)
        # decode
        feed = state.feed.step(state.step)
        if feed is None:
            state.status = LoopStatus.WAITING
            return Wait(state.feed.describe_wait)
        state.status = LoopStatus.RUNNING
        inputs = ARStepInput(state.cache, [state.tokens[-1]], cond=feed.cond,
                             residuals=self._residual_choice(state) if self.residual_groups else None)
        return WorkPlan(AR_TOKEN, state.step, self._token_key,
                        self.component.step_bytes(1, state.positions + 1), inputs, forced_token=feed.forced_token)

    def _residual_choice(self, state: ARState) -> ResidualChoice:
        """How this step's frame (the one whose first group the step consumes) gets its other groups."""
        frame = state.step - 1
        replay = state.residual_replay
        return ResidualChoice(self.residual_sampler, (state.seed, self.stage, RESIDUAL_STREAM, state.step),
                              self.residual_groups, forced=None if replay is None else replay[frame],
                              keeps_logits=state.recorder is not None)

    def advance(self, state: ARState, plan: WorkPlan, output: ARStepOutput) -> ARState:
        (error,) = self.advance_many([(state, plan, output)])
        if error is not None:
            raise error
        return state

    def advance_many(self, items: list[tuple[ARState, WorkPlan, ARStepOutput]]) -> list[Exception | None]:
        """Advance a batch; the tokens it samples are chosen in one vectorised call (same numbers as alone)."""
        if any(not state.part_is_last for state, _, _ in items):  # a prefill part before the last samples nothing
            errors: list[Exception | None] = [None] * len(items)
            rest = [(i, item) for i, item in enumerate(items) if item[0].part_is_last]
            for i, (state, plan, output) in enumerate(items):
                if not state.part_is_last:
                    errors[i] = self._fold_part(state, plan, output)
            for (i, _), error in zip(rest, self.advance_many([item for _, item in rest]) if rest else [], strict=True):
                errors[i] = error
            return errors
        if len(items) == 1:
            return [self._advance_one(*items[0])]
        for state, plan, _ in items:
            if state.step == 0:  # the prompt counts for the repetition penalty
                state.history.extend(plan.inputs.token_ids)
        tokens = [plan.forced_token for _, plan, _ in items]
        bounds = [state.feed.bounds() for state, _, _ in items]
        sampled = [i for i, t in enumerate(tokens) if t is None]
        drawn = None
        if sampled:
            drawn = self.sampler.distribution(
                [items[i][2].logits for i in sampled], [items[i][0].history for i in sampled],
                [len(items[i][0].tokens) >= bounds[i][0] for i in sampled])
            chosen = self.sampler.draw(drawn, [items[i][0].rng for i in sampled])
            for i, token in zip(sampled, chosen, strict=True):
                tokens[i] = token
        errors: list[Exception | None] = []
        for i, ((state, plan, output), token, (fewest, most)) in enumerate(zip(items, tokens, bounds, strict=True)):
            try:
                if state.recorder is not None:  # rollout: from the arrays the token was drawn from, before it joins the history
                    state.recorder.ar_step(plan.step, output.logits, token, state.history, len(state.tokens) >= fewest,
                                           drawn, sampled.index(i) if i in sampled else None)
                self._fold(state, plan, output, token, most)
                errors.append(None)
            except Exception as exc:  # one request's broken listener must not stop the others
                errors.append(exc)
        return errors

    def _advance_one(self, state: ARState, plan: WorkPlan, output: ARStepOutput) -> Exception | None:
        """`advance_many` of one item (the common case at concurrency 1), the same steps without the lists."""
        if state.step == 0:
            state.history.extend(plan.inputs.token_ids)
        fewest, most = state.feed.bounds()
        token, drawn = plan.forced_token, None
        if token is None:
            drawn = self.sampler.one_row(output.logits, state.history, len(state.tokens) >= fewest)
            token = self.sampler.draw_one(drawn, state.rng)
        try:
            if state.recorder is not None:
                state.recorder.ar_step(plan.step, output.logits, token, state.history, len(state.tokens) >= fewest,
                                       drawn, None if drawn is None else 0)
            self._fold(state, plan, output, token, most)
        except Exception as exc:
            return exc
        return None

    def _fold_part(self, state: ARState, plan: WorkPlan, output: ARStepOutput) -> Exception | None:
        """A prefill part before the last: its positions are in the cache; its rows wait for the prompt's item."""
        consumed = plan.inputs.token_ids
        state.positions += len(consumed)
        state.history.extend(consumed)
        state.parts.append((consumed, output.hidden, output.embeds))
        return None

    def _fold(self, state: ARState, plan: WorkPlan, output: ARStepOutput, token: int, most: int | None) -> None:
        consumed, hidden, embeds = plan.inputs.token_ids, output.hidden, output.embeds
        if state.recorder is not None and output.residual_logits is not None:  # the frame this step completed
            state.recorder.residuals.frame(plan.step - 1, output.extra[1:], output.residual_logits)
        state.positions += len(consumed)
        state.tokens.append(token)
        state.history.append(token)
        state.step += 1
        if state.parts:  # the prompt's item holds every position of every part, as a prefill in one piece would
            parts, state.parts = [*state.parts, (consumed, hidden, embeds)], []
            consumed = [t for ids, _, _ in parts for t in ids]
            hidden = join_rows(self.component, [h for _, h, _ in parts])
            embeds = join_rows(self.component, [e for _, _, e in parts])
        state.out.put(ARItem(plan.step, list(consumed), token, hidden, embeds, output.extra))
        n = len(state.tokens)
        if token in self.component.eos_token_ids:
            state.finish("eos")
        elif most is not None and most < state.max_tokens and n >= most:
            # the input's own bound (e.g. codes per reply token): natural unless the feed calls it a cap
            state.truncated = state.feed.bound_is_cap()
            state.finish("input_bound")
        elif n >= state.max_tokens:
            state.truncated = True
            state.finish("max_tokens")
        elif state.positions + 1 >= self.component.max_positions:
            state.truncated = True
            state.finish("max_positions")

    def finalize(self, state: ARState) -> LoopResult:
        outputs = {"tokens": list(state.tokens)}
        if state.recorder is not None:  # rollout profile: the steps' behaviour, column by column
            outputs["behaviour"] = state.recorder.columns()
        return LoopResult(self.loop_id, state.step, outputs, state.stop_reason, truncated=state.truncated)

    def abort(self, state: ARState) -> None:
        state.finish(state.stop_reason)  # the reason it ended with, if it had (an AR loop's abort keeps it)

    @classmethod
    def describe(cls, spec: LoopSpec) -> str:
        return f", max_tokens {spec.max_tokens}"

    def start_recording(self, state: ARState, replay: Mapping[str, Sequence[int]] | None) -> None:
        record_ar(self, state, replay)

    def behaviour_settings(self, seed: int) -> dict[str, Any]:
        s = self.sampler
        settings = {"sampling": asdict(self.spec.sampling), "max_tokens": self.spec.max_tokens,
                    "suppressed_ids": list(s.suppressed),
                    "eos_ids": sorted(set(s.suppressed_and_eos) - set(s.suppressed))}
        if self.residual_groups:  # None: the residual groups were greedy
            r = self.residual_sampler
            settings["residual_sampling"] = None if r is None else asdict(r.params)
            settings["residual_groups"] = self.residual_groups
        return settings
