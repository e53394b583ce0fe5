"""Thinker -> talker hand-off off the driver: the thinker's states go from its worker to the talker's.

When the thinker and the talker run in workers of one kind (`process`, `ray`), the thinker's worker keeps
each step's hidden state and input embedding there and sends the driver a `Held` handle (where the pair
is, its shape) in place of each array: a Ray object reference (`ray`), or a key of a pipe from the
thinker's worker straight to the talker's (`process`, handoff_pipe.py). The driver's loops and feeds run
unchanged, with one difference: the talker the feeds see is a `DirectHandOff`. Its `prefill_from` and
`cond_for_step` run the talker's own hand-off code on stand-ins (arrays of the held shapes, from the
thinker's `embed_tokens`), which tells the driver what it needs before the step (whether the input is
there yet, the prefill's token ids) and which thinker items the code reads; the step then carries a
`HandOff` (the method, those items with their handles) in place of the conditioning, and the talker's
worker runs the same method on the real arrays it fetched. Same code, same arrays: the same bits.
A prompt prefilled in parts (text, heard audio blocks, a picture's rows) is one item whose rows the AR loop
joins: handles join into a `HeldRows`, and the talker's worker joins the parts' arrays with the thinker's own
`join_rows`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...backends.base import ARItem, ARStepInput, ARStepOutput, Prefill


class Held:
    """One array of a thinker step's output, kept in the workers: `ref` names the (hidden, embeds) pair."""

    __slots__ = ("__weakref__", "part", "ref", "shape")

    def __init__(self, ref: Any, part: int, shape: tuple[int, ...]):
        self.ref, self.part, self.shape = ref, part, tuple(shape)

    def __reduce__(self):
        return Held, (self.ref, self.part, self.shape)

    @property
    def refs(self) -> tuple[Any, ...]:
        return (self.ref,)

    def join_rows(self, parts: list[Held]) -> HeldRows:
        """The driver's join of a prefill's parts (the AR loop's, where it would join arrays): a handle too."""
        return HeldRows(parts)


class HeldRows(Held):
    """The rows of several held steps joined in order (a prompt prefilled in parts: text, then heard audio
    blocks...): the worker that reads them joins the arrays. It keeps its pieces, so their pairs stay held
    (the driver releases a pair when its handle dies) while this one lives; it never travels itself."""

    __slots__ = ("pieces",)

    def __init__(self, pieces: list[Held]):
        if any(type(p) is not Held or p.part != pieces[0].part for p in pieces):
            raise TypeError("held rows join only single steps' handles of one part (hidden or embeds)")
        self.pieces = tuple(pieces)
        rows = sum(p.shape[0] for p in pieces)
        super().__init__(None, pieces[0].part, (rows, *pieces[0].shape[1:]))

    def __reduce__(self):
        raise TypeError("joined held rows travel as their refs (HandOff), never themselves")

    @property
    def refs(self) -> tuple[Any, ...]:
        return tuple(p.ref for p in self.pieces)


def hold_outputs(outputs: list[Any], keep) -> list[Any]:
    """A thinker worker's outputs with each (hidden, embeds) pair replaced by handles; `keep(hidden, embeds)`
    stores the pair where the talker's worker can fetch it and returns its ref."""
    out = []
    for o in outputs:
        if isinstance(o, ARStepOutput) and o.hidden is not None and o.embeds is not None:
            ref = keep(o.hidden, o.embeds)
            o = ARStepOutput(o.logits, Held(ref, 0, o.hidden.shape), Held(ref, 1, o.embeds.shape), extra=o.extra,
                             residual_logits=o.residual_logits)
        out.append(o)
    return out


class HandOff:
    """A talker input to make in the talker's worker: `method(items, is_closed, arg)` of the talker, where
    `items` has `length` entries and the method reads only those in `read`: index -> (step, consumed ids,
    token, refs of the held pairs, hidden, embeds, extra), the arrays None where held (a short tuple: this
    travels; `extra` is small: the thinker's prompt positions). Several refs: a prompt prefilled in parts, its
    rows the pairs' rows joined in order."""

    __slots__ = ("arg", "is_closed", "length", "method", "read")

    def __init__(self, method: str, length: int, read: dict[int, tuple], is_closed: bool, arg: Any):
        self.method, self.length, self.read, self.is_closed, self.arg = method, length, read, is_closed, arg

    @classmethod
    def of(cls, method: str, length: int, read: dict[int, ARItem], is_closed: bool, arg: Any) -> HandOff:
        rows = {}
        for index, item in read.items():
            held = isinstance(item.hidden, Held)
            rows[index] = (item.step, item.consumed_ids, item.token, item.hidden.refs if held else (),
                           None if held else item.hidden, None if held else item.embeds, item.extra)
        return cls(method, length, rows, is_closed, arg)

    def __reduce__(self):
        return HandOff, (self.method, self.length, self.read, self.is_closed, self.arg)

    def refs(self) -> list[Any]:
        return [ref for row in self.read.values() for ref in row[3]]

    def make(self, talker: Any, pairs: dict[Any, tuple[Any, Any]], join_rows: Any = None) -> Any:
        """Run the method on the real arrays (`pairs`: ref -> (hidden, embeds), fetched by the worker;
        `join_rows`: the thinker's, for an item held in parts)."""
        items = {}
        for index, (step, consumed, token, refs, hidden, embeds, extra) in self.read.items():
            if len(refs) == 1:
                hidden, embeds = pairs[refs[0]]
            elif refs:
                if join_rows is None:
                    raise RuntimeError("the talker's worker has no thinker to join a prompt prefilled in parts")
                hidden = join_rows([pairs[ref][0] for ref in refs])
                embeds = join_rows([pairs[ref][1] for ref in refs])
            items[index] = ARItem(step, list(consumed), token, hidden, embeds, extra)
        return getattr(talker, self.method)(_Sparse(self.length, items), self.is_closed, self.arg)


class _Sparse(Sequence):
    """The thinker's items as the talker's worker has them: the ones the hand-off reads, and their count."""

    def __init__(self, length: int, items: dict[int, ARItem]):
        self._length, self._items = length, items

    def __len__(self) -> int:
        return self._length

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self._length))]
        i = index + self._length if index < 0 else index
        if not 0 <= i < self._length:
            raise IndexError(index)
        if i not in self._items:
            raise LookupError(f"the talker's hand-off read thinker item {i}, which it did not read in the driver")
        return self._items[i]


class _StandIn:
    """A thinker item in the driver's dry run: its ids as they are, arrays of the held shapes made on first read."""

    def __init__(self, item: ARItem, thinker: Any):
        self.step, self.consumed_ids, self.token, self.extra = item.step, item.consumed_ids, item.token, item.extra
        self._item, self._thinker = item, thinker

    def _array(self, held: Any) -> Any:
        if not isinstance(held, Held):
            return held
        return self._thinker.embed_tokens(list(self.consumed_ids)).reshape(held.shape)  # values never used

    @property
    def hidden(self) -> Any:
        return self._array(self._item.hidden)

    @property
    def embeds(self) -> Any:
        return self._array(self._item.embeds)


class _Reading(Sequence):
    """The thinker's items in the driver's dry run: records which ones the talker's hand-off code reads."""

    def __init__(self, items: Sequence[ARItem], thinker: Any):
        self._items, self._thinker = items, thinker
        self.read: dict[int, ARItem] = {}

    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self._items)))]
        item = self._items[index]
        self.read[index + len(self._items) if index < 0 else index] = item
        return _StandIn(item, self._thinker) if isinstance(item.hidden, Held) else item


class DirectHandOff:
    """The talker as the driver's feeds see it when the thinker's states stay in the workers."""

    def __init__(self, talker: Any, thinker: Any):
        self._talker, self._thinker = talker, thinker

    def __getattr__(self, name: str) -> Any:
        return getattr(self._talker, name)

    def prefill_from(self, items: Sequence[ARItem], is_closed: bool, voice: str | None) -> Prefill | None:
        reading = _Reading(items, self._thinker)
        made = self._talker.prefill_from(reading, is_closed, voice)
        if made is None:
            return None
        return Prefill(made.token_ids, HandOff.of("prefill_from", len(items), reading.read, is_closed, voice))

    def cond_for_step(self, items: Sequence[ARItem], is_closed: bool, step: int) -> Any:
        reading = _Reading(items, self._thinker)
        cond = self._talker.cond_for_step(reading, is_closed, step)
        if cond is None:
            return None
        return HandOff.of("cond_for_step", len(items), reading.read, is_closed, step)


def make_handoffs(talker: Any, inputs: list[Any], fetch, join_rows: Any = None) -> list[Exception | None]:
    """In the talker's worker: each input's HandOff replaced by what it makes, in place (the inputs are the
    worker's copies); `fetch(refs)` gives ref -> (hidden, embeds), `join_rows` joins a prompt's parts (the
    thinker's). One entry per input: None, or its error."""
    wanted = [v for item in inputs if isinstance(item, ARStepInput)
              for v in (item.prefill, item.cond) if isinstance(v, HandOff)]
    if not wanted:
        return [None] * len(inputs)
    try:
        pairs = fetch([ref for handoff in wanted for ref in handoff.refs()])
    except Exception as exc:  # the thinker's worker is gone: every request of the batch fails
        return [exc] * len(inputs)
    errors: list[Exception | None] = []
    for item in inputs:
        try:
            if isinstance(item, ARStepInput) and isinstance(item.prefill, HandOff):
                made = item.prefill.make(talker, pairs, join_rows)
                if list(made.token_ids) != list(item.token_ids):
                    raise RuntimeError("the talker's prefill made other token ids in its worker than in the driver")
                item.prefill = made.payload
            if isinstance(item, ARStepInput) and isinstance(item.cond, HandOff):
                item.cond = item.cond.make(talker, pairs, join_rows)
            errors.append(None)
        except Exception as exc:
            errors.append(exc)
    return errors
