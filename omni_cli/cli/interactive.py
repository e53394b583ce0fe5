"""`omni chat` on a terminal: a conversation typed line by line, each reply spoken as it is made."""

from __future__ import annotations

import os
import signal
import sys
from dataclasses import replace

from .errors import SIGINT_EXIT, CliError
from .report import error_line

PROMPT = "> "


def converse(model, template, plan, history: str | None, turns: list, trace: str | None, quiet: bool,
             allow_truncation: bool) -> int:
    """The prompt loop on one engine, loaded once; the exit status: 0 at Ctrl-D, 130 at Ctrl-C on the prompt."""
    from .load_view import make_load_view
    from .outputs import Router, claim_plan
    from .session import check_voice, open_engine

    if plan.as_json or trace:
        raise CliError(f"{'--json' if plan.as_json else '--trace'} takes one turn (TEXT or --audio); "
                       "a conversation typed on the terminal prints each reply's text")
    claims = claim_plan(plan, None)
    with make_load_view(sys.stderr, quiet=quiet) as on_load:
        engine = open_engine(model, on_load)
    try:
        check_voice(engine, template.voice)
        router = Router(plan, engine.sample_rate, sys.stdout.buffer, sys.stdout)
        claims.open_all({plan.flag: router.open})
        try:
            return Conversation(engine, router, template, history, quiet, allow_truncation).run(len(turns))
        finally:
            router.close()
    finally:
        engine.close()


class Conversation:
    """The turns so far (held in memory, clips with their encoded blocks), one reply at a time."""

    def __init__(self, engine, router, template, history: str | None, quiet: bool, allow_truncation: bool):
        self.engine, self.router, self.template = engine, router, template
        self.prior = list(template.history)
        self.history = history
        self.quiet = quiet
        self.allow_truncation = allow_truncation
        self.replies = 0

    def run(self, earlier: int) -> int:
        signal.signal(signal.SIGINT, signal.default_int_handler)  # at the prompt, Ctrl-C ends the conversation
        if not self.quiet:
            kept = "" if self.router.plan.kind != "none" else " (replies are not kept: -o DIR/ keeps each one, " \
                                                              "-o - | aplay plays them)"
            so_far = f", after {earlier} earlier turns" if earlier else ""
            say(f"omni chat: type a line and press Enter{so_far}; Ctrl-C stops a reply, Ctrl-D ends{kept}\n")
        while True:
            try:
                say(PROMPT)
                raw = sys.stdin.buffer.readline()
            except KeyboardInterrupt:
                say("\n")
                return SIGINT_EXIT
            if not raw:
                say("\n")
                return 0
            try:
                text = raw.decode("utf-8").strip()
            except UnicodeDecodeError as exc:
                error_line(f"that line is not UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})")
                continue
            if text:
                self.turn(text)

    def turn(self, text: str) -> None:
        """One reply, streamed; Ctrl-C cancels it (at the engine's next step) and the turn is not kept."""
        from ..spec import SpecError
        from .outputs import Utterance

        request = replace(self.template, text=text, history=tuple(self.prior))
        kept = sum(1 for turn in self.prior for clip in turn.audio if clip.encoded)  # encoded by an earlier reply
        try:
            handle = self.engine.submit(request)
        except SpecError as exc:
            error_line(exc.issues[0].message if exc.issues else str(exc))
            return
        self.replies += 1
        utt = Utterance(self.replies, self.replies, text, request_id=handle.request_id, status="running")
        self.router.begin(utt)
        interrupted = []

        def stop_reply(signum, frame) -> None:
            if interrupted:  # a second Ctrl-C: out at once (files are valid after every chunk)
                os._exit(SIGINT_EXIT)
            interrupted.append(signum)
            handle.cancel()

        previous = signal.signal(signal.SIGINT, stop_reply)
        try:
            done = self._stream(handle, utt)
        finally:
            signal.signal(signal.SIGINT, previous)
        self.router.done(utt)
        if not self._end(text, utt, done) or self.quiet:
            return
        if kept:
            clips, them = ("clips", "them") if kept > 1 else ("clip", "it")
            say(f"(heard {kept} earlier {clips} again without encoding {them})\n")
        from ..encoded import describe_reuse

        for line in [*done.metrics.get("notes", ()), describe_reuse(done.metrics.get("reused") or {})]:
            if line:  # the first reply after --history: what the cache held (later ones reuse what is in memory)
                say(f"omni: {line}\n")

    def _stream(self, handle, utt):
        from ..spec.stream import AudioChunk, RequestDone, TextPiece

        done = None
        for event in handle.stream():
            if isinstance(event, AudioChunk):
                self.router.audio(utt, event.samples)
            elif isinstance(event, TextPiece):
                self.router.text(utt, event.text)
                if not self.router.prints_text:  # stdout carries the audio: the reply's text on the terminal
                    say(event.text)
            elif isinstance(event, RequestDone):
                done = event
        if not self.router.prints_text:
            say("\n")
        return done

    def _end(self, text: str, utt, done) -> bool:
        """Keep the turn once its reply ended well (in memory, and appended to --history); whether it did."""
        from ..spec import PriorTurn
        from ..spec.stream import RequestStatus
        from .chat_turns import reply_turn

        if done is None or done.status is RequestStatus.CANCELLED:
            say("(stopped: the turn is not kept)\n")
            return False
        if done.error:
            error_line(done.error)
            return False
        truncated = done.metrics.get("truncated")
        if truncated and not self.allow_truncation:
            say(f"omni: warning: the reply was cut short at {', '.join(truncated.values())} "
                "(kept; --allow-truncation silences this)\n")
        reply = reply_turn(utt, self.router.plan)
        if self.router.plan.kind == "file":  # every reply goes into the one file: no turn owns it
            reply = replace(reply, audio=())
        self.prior += [PriorTurn("user", text), PriorTurn("assistant", reply.text)]
        if self.history is not None:
            from ..conversation import Turn, append_turns

            try:
                append_turns(self.history, [Turn("user", text), reply])
            except OSError as exc:
                error_line(f"--history {self.history}: cannot append the turn: {exc.strerror or exc}")
        return True


def say(text: str) -> None:
    sys.stderr.write(text)
    sys.stderr.flush()
