"""`omni chat`: one user turn, heard (--audio), seen (--image, --video) and/or written, answered in text on stdout
and in speech."""

from __future__ import annotations

import sys
from dataclasses import replace
from typing import Annotated

import typer

from ..defaults import DEFAULT_CARD
from . import options as o
from .errors import CliError
from .report import exit_with

HELP = """Answer a turn, spoken (--audio), pictured (--image, --video) and/or written (TEXT), in text and speech.

\b
--audio FILE: WAV, FLAC or OGG at any rate and channel count (mixed to mono,
resampled to the encoder's rate as it arrives). `--audio -` reads a WAV
stream from stdin while it is being written: the card's audio encoder runs
one block as soon as that block's audio is in, and the thinker prefills it,
so the answer starts soon after the speaker stops.
The card must listen (`omni cards show NAME`: capability listen); the
default voice (piper_joe) does not. Output, --json, --trace and the exit
status are as for `omni speak`; Ctrl-C stops waiting for more audio.
--image FILE (repeatable): a PNG or JPEG the thinker sees before the audio
and the text; the card must see (capability see).
--video FILE (repeatable): a video (MP4, WebM, MKV...: what PyAV decodes)
the thinker watches after the pictures: its frames sampled at the card's
rate (the checkpoint's processor: 2 a second unless it says), through the
same vision encoder. Its audio track is not heard: pass it as --audio.
Not with --history.
\b
--history FILE: the turn continues the conversation in FILE (JSON Lines, one
turn a line: role, text, and the audio and images of the turn; FILE need
not exist yet). The earlier turns are rendered through the card's chat
template (their audio and images read again from their files, which stay
where they are); once the
reply ends well, the new turn and the reply (its text, and its audio file
with -o FILE) are appended. A run that fails or is stopped appends nothing.
Audio heard from `--audio -` is kept as FILE.audio/NNNN.wav. Each clip's
and picture's encoding is kept in omni's cache (encoded/, at most 256 MiB,
the least recently used dropped first; OMNI_CLI_ENCODED_CACHE_MIB=0 keeps
none), so a later run encodes only its new audio and says what it reused.
\b
With no TEXT and no --audio on a terminal: a conversation typed line by
line. Each reply is spoken as it is made (to -o; `-o - | aplay` to hear
it); Ctrl-C stops a reply and returns to the prompt, Ctrl-D (or Ctrl-C at
the prompt) ends it. A second turn reuses the encoding of the audio an
earlier turn heard.
"""


def chat(
    text: Annotated[str | None, typer.Argument(help="The turn's text (with --audio: said after the audio).")] = None,
    audio: Annotated[str | None, typer.Option("--audio", "-a", metavar="FILE|-", rich_help_panel=o.REQUEST,
                                                 help="The spoken question: an audio file, or - for a WAV stream on stdin.")] = None,
    image: Annotated[list[str] | None, typer.Option("--image", "-i", metavar="FILE", rich_help_panel=o.REQUEST,
                                                    help="A picture to see (PNG or JPEG); repeat for more.")] = None,
    video: Annotated[list[str] | None, typer.Option("--video", metavar="FILE", rich_help_panel=o.REQUEST,
                                                    help="A video to watch (not its sound); repeat for more.")] = None,
    history: Annotated[str | None, typer.Option("--history", metavar="FILE", rich_help_panel=o.REQUEST,
                                                   help="Continue the conversation in FILE (JSON Lines of turns) and "
                                                        "append this turn and its reply.")] = None,
    output: Annotated[str | None, typer.Option("--output", "-o", metavar="FILE|DIR/|-", rich_help_panel=o.OUTPUT,
                                                  help="The answer's audio file, or - for stdout (interactive: "
                                                       "DIR/ for a file per reply).")] = None,
    fmt: Annotated[o.Format | None, typer.Option("--format", rich_help_panel=o.OUTPUT,
                                                    help="Audio format; default: from the suffix, wav for -.")] = None,
    as_json: Annotated[bool, typer.Option("--json", rich_help_panel=o.OUTPUT, help="One JSON object on stdout.")] = False,
    trace: o.Trace = None, force: o.Force = False,
    card: o.Card = DEFAULT_CARD, program: o.Program = None, policy: o.Policy_ = o.Policy.latency_first,
    model_path: o.ModelPath = None, dtype: o.Dtype = None, device: o.Device = None,
    placement: o.Placement = None, set_: o.Set = None,
    seed: o.Seed = 0, max_tokens: o.MaxTokens = None, voice: o.Voice = None, handoff: o.Handoff_ = None,
    allow_truncation: Annotated[bool, typer.Option(
        "--allow-truncation", rich_help_panel=o.REQUEST,
        help="Exit 0 even when a loop stopped at a cap (max_tokens, max_positions) and cut the answer short.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", rich_help_panel=o.DISPLAY,
                                        help="Nothing on stderr but errors.")] = False,
) -> None:
    from .chat_turns import earlier_turns, kept_encodings, record_turn, say_reuse
    from .job import SpeakJob, destination, request_template, run_job
    from .outputs import plan_outputs
    from .session import ModelOptions

    interactive = audio is None and not (image or video) and text is None and sys.stdin is not None and sys.stdin.isatty()
    if not interactive and audio is None and not (image or video) and (text is None or not text.strip()):
        raise CliError("nothing to answer: pass --audio FILE (or - for stdin), --image FILE, --video FILE and/or TEXT")
    overrides = o.overrides(set_)
    turns, prior = earlier_turns(history)
    chat_program = check_senses(card, overrides, bool(image or video) or any(t.images for t in turns))
    images, videos = seen(image or []), watched(video or [], history)  # refused before anything loads
    plan = plan_outputs(output, None, fmt.value if fmt else None, force, as_json)
    model = ModelOptions(card, program or chat_program, policy.value, {"model_path": model_path, "dtype": dtype,
                                                                 "device": device}, placement, None, 1, overrides)
    template = replace(request_template(seed, max_tokens, voice, o.Mode.chat, handoff), history=prior,
                       keep_encoded=kept_encodings(history))
    if interactive:
        from .interactive import converse

        raise typer.Exit(converse(model, template, plan, history, turns, trace, quiet, allow_truncation))
    source = heard(audio)
    request = replace(template, audio=source, images=images, videos=videos)
    job = SpeakJob(text or "", model, request, plan, 1, trace, quiet, False, allow_truncation=allow_truncation,
                   on_stop=None if source is None else source.end)  # Ctrl-C: stop waiting for more audio
    outcome, _, view = run_job(job)
    if outcome.utterances or outcome.stopped:
        view.summary(outcome.utterances, destination(plan), outcome.stopped, outcome.removed)
    say_reuse(outcome.utterances, quiet)
    if history is not None and outcome.code == 0:
        record_turn(history, len(turns), text or "", audio, image or [], source, outcome.utterances[0], plan, outcome)
    exit_with(outcome)


def check_senses(card: str, overrides: dict, sees: bool) -> str:
    """A card that cannot listen (as the chat program needs) or, given --image, see: one line, before any load;
    else the program the card chats with."""
    from ..program.catalog import load_card_file

    spec = load_card_file(card, overrides)
    for wanted, capability, tower in ((sees, "see", "image"), (True, "listen", "audio")):  # what was asked first
        if wanted and capability not in spec.capabilities:
            raise CliError(f"card {spec.model!r} cannot {capability} (it has no {tower} encoder); pass a card that "
                           "can, e.g. --card qwen2_5_omni_toy, or --card qwen2_5_omni --model-path DIR")
    return spec.defaults.chat_program


def seen(paths: list[str]) -> tuple:
    """The --image files, decoded (PNG or JPEG); a bad one is refused in one line before anything loads."""
    from ..audio.seen import ImageInputError, read_image

    try:
        return tuple(read_image(p) for p in paths)
    except ImageInputError as exc:
        raise CliError(f"--image: {exc}") from None


def watched(paths: list[str], history: str | None) -> tuple:
    """The --video files, decoded (PyAV); a bad one is refused in one line before anything loads."""
    from ..audio.watched import VideoInputError, read_video

    if paths and history is not None:
        raise CliError("--video with --history: a conversation does not keep videos yet")
    try:
        return tuple(read_video(p) for p in paths)
    except VideoInputError as exc:
        raise CliError(f"--video: {exc}") from None


def heard(audio: str | None):
    """The --audio value as an AudioSource: a file read whole, or `-`: a WAV stream read from stdin as it comes."""
    from ..audio.heard import AudioInputError, read_file, stream_wav

    if audio is None:
        return None
    try:
        if audio == "-":
            if sys.stdin is None:
                raise CliError("--audio -: stdin is closed")
            return stream_wav(getattr(sys.stdin, "buffer", sys.stdin), "--audio - (stdin)")
        return read_file(audio)
    except AudioInputError as exc:
        raise CliError(f"--audio: {exc}") from None
