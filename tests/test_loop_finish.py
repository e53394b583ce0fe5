"""LoopState.finish: how every loop kind ends a request, and what an abort (cancel, failure) after the end keeps."""

from __future__ import annotations

from dataclasses import dataclass

from omni_cli.loops import ARChannel, ARDecodeLoop, ARState, AudioDecodeLoop, AudioState, Channel, LoopState, LoopStatus
from omni_cli.program import compile_program


@dataclass
class Holding(LoopState):
    held: object = "cache"

    def release(self) -> None:
        self.held = None


def test_finish_records_and_lets_go_before_the_reader_hears_the_end():
    out = Channel("out")
    state = Holding("loop", "r1", out=out)
    heard = []
    out.listen(lambda item: heard.append((item, state.status, state.stop_reason, state.held)))
    state.finish("end")
    assert heard == [(None, LoopStatus.FINISHED, "end", None)]
    # a second finish (an abort after the end) records its reason; the output was closed once
    state.finish(None)
    assert state.stop_reason is None and state.status is LoopStatus.FINISHED and len(heard) == 1


def test_an_abort_after_the_end_keeps_an_ar_loops_reason_and_drops_the_others(toy):
    loops = compile_program(toy.card, toy.program).loops
    ar = next(loop for loop in loops.values() if isinstance(loop, ARDecodeLoop))
    vocoder = next(loop for loop in loops.values() if isinstance(loop, AudioDecodeLoop))
    tokens = ARState(ar.loop_id, "r1", out=ARChannel("tokens"), cache=object())
    tokens.truncated = True
    tokens.finish("max_tokens")
    audio = AudioState(vocoder.loop_id, "r1", out=Channel("audio"), vocoder_state=object())
    audio.finish("end")
    assert tokens.cache is None and audio.vocoder_state is None  # what each held went at the end
    ar.abort(tokens)
    vocoder.abort(audio)
    assert (tokens.stop_reason, tokens.truncated, tokens.status) == ("max_tokens", True, LoopStatus.FINISHED)
    assert audio.stop_reason is None and audio.status is LoopStatus.FINISHED
    assert ar.finalize(tokens).stop_reason == "max_tokens" and vocoder.finalize(audio).stop_reason is None


def test_an_abort_before_the_end_finishes_with_no_reason(toy):
    loops = compile_program(toy.card, toy.program).loops
    ar = next(loop for loop in loops.values() if isinstance(loop, ARDecodeLoop))
    out = ARChannel("tokens")
    state = ARState(ar.loop_id, "r1", out=out, cache=object())
    ar.abort(state)
    assert (state.stop_reason, state.cache, state.status, out.is_closed) == (None, None, LoopStatus.FINISHED, True)
