"""/v1/chat/completions `messages` as one chat turn: the last user message answered, those before it its history.

Earlier user messages keep their text, their `input_audio` parts (base64 wav or mp3, decoded as the last message's
are) and their `image_url` data URLs; assistant messages keep their text, from `content` (a string or text parts) or,
where that is empty, from `audio.transcript`. The server keeps no reply's audio: an assistant message that names one
only by `audio.id` (what the official `openai` client sends back) is a 400 naming `messages[i].audio.id`, asking for
the reply's transcript as its `content`. System and developer messages are checked and otherwise left out, as before
(the card's own system prompt stands). The whole conversation's text counts against the card's text limit, and at
most MAX_TURNS earlier messages are taken; either past its bound is a 400 naming `messages`.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

from ..spec import PriorTurn
from .bodies import bad_request, check_fields, get
from .images import image_part

ROLES = ("system", "developer", "user", "assistant")
AUDIO_INPUT_FORMATS = ("wav", "mp3")
MAX_TURNS = 64  # earlier user and assistant messages one request may carry
REPLY_AUDIO_FIELDS = {"id", "transcript", "data", "expires_at"}  # a reply's `message.audio`, as it was sent


@dataclass(frozen=True)
class Conversation:
    text: str  # the last user message's text
    heard: Any  # its audio (an AudioSource) or None
    images: tuple  # its pictures (SeenImage)
    history: tuple[PriorTurn, ...]  # the user and assistant messages before it


@dataclass(frozen=True)
class _Message:
    index: int
    role: str
    text: str
    audio: list  # (bytes, format, param) per input_audio part
    images: list


def conversation(messages: list, max_text_chars: int) -> Conversation:
    """The messages as this turn and its history; every way one is wrong is a 400 naming `messages[i]...`."""
    parsed = [_message(m, i) for i, m in enumerate(messages)]
    spoken = [m for m in parsed if m.role in ("user", "assistant")]
    users = [m for m in spoken if m.role == "user"]
    if not users:
        raise bad_request("'messages' has no user message to answer", "messages", "missing_required_parameter")
    last = users[-1]
    after = [m for m in spoken if m.index > last.index]
    if after:
        where = f"messages[{after[0].index}]"
        raise bad_request(f"{where}: the conversation must end with the user message to answer; this server does not "
                          "continue an assistant message", where + ".role", "unsupported_value")
    earlier = [m for m in spoken if m.index < last.index]
    if len(earlier) > MAX_TURNS:
        raise bad_request(f"'messages' holds {len(earlier)} user and assistant messages before the last user message, "
                          f"over this server's limit of {MAX_TURNS}; send a shorter conversation", "messages",
                          "too_many_messages")
    total = sum(len(m.text) for m in spoken)
    if total > max_text_chars:
        raise bad_request(f"the conversation's text is {total} characters, over this model's limit of "
                          f"{max_text_chars}; send fewer or shorter messages", "messages", "input_too_long")
    history = tuple(_prior(m) for m in earlier)
    return Conversation(last.text, _heard(last.audio), tuple(last.images), history)


def _prior(message: _Message) -> PriorTurn:
    where = f"messages[{message.index}]"
    if message.role == "assistant":
        if not message.text.strip():
            raise bad_request(f"{where}: an assistant message with no text (send the reply's text as its content)",
                              where + ".content", "missing_required_parameter")
        return PriorTurn("assistant", message.text)
    if not (message.text.strip() or message.audio or message.images):
        raise bad_request(f"{where}: a user message with no text, audio or images", where + ".content",
                          "missing_required_parameter")
    clips = tuple(_decoded(part) for part in message.audio)
    return PriorTurn("user", message.text, clips, tuple(message.images))


def _message(message: Any, i: int) -> _Message:
    where = f"messages[{i}]."
    if not isinstance(message, dict):
        raise bad_request(f"'messages[{i}]' must be an object", f"messages[{i}]", "invalid_type")
    check_fields(message, {"role", "content", "name", "audio", "refusal"}, where)
    role = get(message, "role", str, where=where, required=True)
    if role not in ROLES:
        raise bad_request(f"unknown role {role!r} in messages[{i}] (known: {', '.join(ROLES)})", where + "role")
    content = get(message, "content", (str, list), "", where=where) or ""
    if message.get("audio") is not None and role != "assistant":
        raise bad_request(f"messages[{i}].audio: only an assistant message refers to a reply's audio (a user's audio "
                          "is an input_audio part of its content)", where + "audio", "unsupported_value")
    texts, audio, images = [content] if isinstance(content, str) else [], [], []
    for j, part in enumerate(content if isinstance(content, list) else []):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind in ("input_audio", "image_url") and role == "assistant":
            raise bad_request(f"messages[{i}].content[{j}]: an assistant message holds text, not {kind}",
                              f"{where}content[{j}]", "unsupported_content")
        if kind == "input_audio":
            audio.append(_input_audio(part, f"{where}content[{j}]"))
        elif kind == "image_url":
            images.append(image_part(part, f"{where}content[{j}]"))
        elif kind == "text" and isinstance(part.get("text"), str):
            texts.append(part["text"])
        else:
            raise bad_request(f"messages[{i}].content[{j}]: only text, input_audio and image_url parts are supported "
                              "by this server", f"{where}content[{j}]", "unsupported_content")
    text = "".join(texts)
    if role == "assistant" and message.get("audio") is not None:
        text = _reply_text(message, text, where)
    return _Message(i, role, text, audio, images)


def _reply_text(message: dict[str, Any], text: str, where: str) -> str:
    """An assistant message's text where its `audio` refers to a reply: its content, else the audio's transcript."""
    reply = get(message, "audio", dict, where=where)
    check_fields(reply, REPLY_AUDIO_FIELDS, where + "audio.")
    transcript = get(reply, "transcript", str, "", where=where + "audio.")
    if text.strip() or transcript.strip():
        return text if text.strip() else transcript
    param = where + "audio.id"
    raise bad_request(f"{param}: this server keeps no reply's audio, so it cannot hear a reply by its id; send the "
                      f"reply's transcript as {where}content", param, "unsupported_value")


def _input_audio(part: dict[str, Any], where: str) -> tuple[bytes, str, str]:
    check_fields(part, {"type", "input_audio"}, where + ".")
    inner = get(part, "input_audio", dict, where=where + ".", required=True)
    check_fields(inner, {"data", "format"}, where + ".input_audio.")
    fmt = get(inner, "format", str, where=where + ".input_audio.", required=True)
    if fmt not in AUDIO_INPUT_FORMATS:
        raise bad_request(f"{where}.input_audio.format {fmt!r}: known formats are {', '.join(AUDIO_INPUT_FORMATS)}",
                          where + ".input_audio.format", "unsupported_value")
    data = get(inner, "data", str, where=where + ".input_audio.", required=True)
    try:
        raw = base64.b64decode(data, validate=True)
    except ValueError:
        raise bad_request(f"{where}.input_audio.data is not base64", where + ".input_audio.data") from None
    return raw, fmt, where + ".input_audio.data"


def _decoded(part: tuple[bytes, str, str]):
    from ..audio.heard import AudioInputError, read_wav_bytes

    raw, fmt, param = part
    try:
        return read_wav_bytes(raw, f"the {fmt} audio")
    except AudioInputError as exc:
        raise bad_request(str(exc), param) from None


def _heard(parts: list[tuple[bytes, str, str]]):
    """The last user message's audio as an AudioSource, or None; one part at most (the question's audio)."""
    if not parts:
        return None
    if len(parts) > 1:
        raise bad_request("one input_audio part in the message answered (the question's audio)", parts[1][2],
                          "unsupported_value")
    return _decoded(parts[0])
