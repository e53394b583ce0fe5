"""Text in and out of the thinker: ChatML prompts for chat and echo mode, detokenization."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from omni_cli.backends.base import ListenPrompt, PromptTurn, ThinkerPrompt

AUDIO_TOKENS = ("<|audio_bos|>", "<|AUDIO|>", "<|audio_eos|>")  # Qwen2.5-Omni's processor: bos, N x AUDIO, eos
IMAGE_TOKENS = ("<|vision_bos|>", "<|IMAGE|>", "<|vision_eos|>")  # ... and bos, N x IMAGE, eos for a picture
VIDEO_TOKENS = ("<|vision_bos|>", "<|VIDEO|>", "<|vision_eos|>")  # ... and bos, N x VIDEO, eos for a video

CHAT = "chat"
ECHO = "echo"


class PromptBuilder:
    """Builds the prompt Qwen2.5-Omni's chat template makes for a text-only conversation.

    The template is written out rather than taken from the checkpoint: the processor's template lives in
    chat_template.json, which AutoTokenizer does not read, and for text-only turns it renders exactly
    `<|im_start|>{role}\\n{content}<|im_end|>\\n` per turn plus the assistant header (an audio part is
    `<|audio_bos|><|AUDIO|><|audio_eos|>`, a picture `<|vision_bos|><|IMAGE|><|vision_eos|>`, each widened to its
    rows where the thinker prefills it).
    """

    def __init__(self, tokenizer: Any, system_prompt: str, echo_instruction: str,
                 audio_tokens: tuple[str, str, str] = AUDIO_TOKENS):
        self.tokenizer = tokenizer
        self.system_prompt = system_prompt
        self.echo_instruction = echo_instruction
        self.audio_tokens = audio_tokens  # the audio's opening, placeholder and closing tokens

    def encode(self, text: str, mode: str, instructions: str | None = None) -> ThinkerPrompt:
        """instructions: appended to the system prompt, which stays: Qwen2.5-Omni speaks only under its own."""
        system = self.system_prompt if not instructions else f"{self.system_prompt} {instructions}"
        if mode == CHAT:
            return ThinkerPrompt(prefill_ids=self._chat_ids(text, system), forced_ids=None)
        if mode == ECHO:
            # the thinker is asked to repeat the text and its reply is forced to the text's tokens, so the
            # talker conditions on hidden states of a model that is saying exactly this text
            forced = self._plain_ids(text)
            if not forced:
                raise ValueError("echo mode needs a non-empty text")
            return ThinkerPrompt(prefill_ids=self._chat_ids(self.echo_instruction + text, system), forced_ids=forced)
        raise ValueError(f"unknown prompt mode {mode!r} (chat | echo)")

    def conversation(self, turns: Sequence[PromptTurn]) -> ListenPrompt:
        """The chat template's rendering of `turns` (a user turn's pictures, videos, clips, then its text, the
        processor's order for image, video, audio and text parts; assistant turns as their text), then the
        assistant's header: the ids around each picture's <|IMAGE|>, each video's <|VIDEO|> and each clip's
        <|AUDIO|> positions."""
        wanted = [(self.audio_tokens, "take audio", sum(t.num_clips for t in turns)),
                  (IMAGE_TOKENS, "see", sum(t.num_images for t in turns)),
                  (VIDEO_TOKENS, "watch video", sum(t.num_videos for t in turns))]
        audio_id, image_id, video_id = (self.require(tokens, what)[1] if n else -1 for tokens, what, n in wanted)
        markers = {self.audio_tokens[1]: "audio", IMAGE_TOKENS[1]: "image", VIDEO_TOKENS[1]: "video"}
        if any(m in t.text for t in turns for m in markers):
            raise ValueError("a turn's text holds <|AUDIO|>, <|IMAGE|> or <|VIDEO|>, a placeholder of heard or seen "
                             "input")
        pattern = "(" + "|".join(re.escape(m) for m in markers) + ")"
        split = re.split(pattern, self._chat_text(turns))
        pieces = [self._plain_ids(p, allow_special=True) for p in split[::2]]
        slots = [markers[m] for m in split[1::2]]
        return ListenPrompt(pieces[0], pieces[-1] if slots else [], audio_id, image_id, pieces, slots, video_id)

    def require(self, tokens: tuple[str, ...], what: str) -> list[int]:
        """The ids of `tokens`; a tokenizer without one of them is refused in one line naming them."""
        ids = [self.special_id(t) for t in tokens]
        missing = [t for t, i in zip(tokens, ids, strict=True) if i is None]
        if missing:
            raise ValueError(f"the checkpoint's tokenizer has no {', '.join(missing)}: it cannot {what}")
        return ids

    def decode(self, token_ids: list[int]) -> str:
        return self.tokenizer.decode(list(token_ids), skip_special_tokens=True)

    def special_id(self, token: str) -> int | None:
        token_id = self.tokenizer.convert_tokens_to_ids(token)
        unk = getattr(self.tokenizer, "unk_token_id", None)
        return None if token_id is None or token_id == unk else int(token_id)

    def _chat_ids(self, user_text: str, system: str | None = None) -> list[int]:
        return self._plain_ids(self._chat_text([PromptTurn("user", user_text)], system), allow_special=True)

    def _chat_text(self, turns: Sequence[PromptTurn], system: str | None = None) -> str:
        clip, picture, video = "".join(self.audio_tokens), "".join(IMAGE_TOKENS), "".join(VIDEO_TOKENS)
        body = "".join(f"<|im_start|>{t.role}\n{picture * t.num_images}{video * t.num_videos}{clip * t.num_clips}"
                       f"{t.text}<|im_end|>\n" for t in turns)
        return f"<|im_start|>system\n{system or self.system_prompt}<|im_end|>\n{body}<|im_start|>assistant\n"

    def _plain_ids(self, text: str, allow_special: bool = False) -> list[int]:
        # the whole prompt is tokenized at once, as the processor does; a forced reply keeps typed
        # control tokens ("<|im_end|>") as plain text
        ids = self.tokenizer(text, add_special_tokens=False, split_special_tokens=not allow_special)["input_ids"]
        return [int(i) for i in ids]
