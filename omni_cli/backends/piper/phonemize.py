"""Text -> sentences -> phoneme ids, with gruut (MIT, English lexicon in gruut-lang-en): no espeak-ng."""

from __future__ import annotations

from typing import Any

from ..sentence_types import TEXT_SPLIT, PhonemizerModel, ReadSentence, SplitText, TextWindow
from .text import readable, spell_digits, spell_long_numbers, split_sentences
from .voice import VoiceFiles

# Piper's id conventions (the voice was trained with them): ^ opens, $ closes, _ follows every symbol.
BOS, EOS, PAD = "^", "$", "_"
_BREAKS = {"|": ",", "\u2016": "."}  # gruut's minor / major break -> the punctuation the voice knows


class NothingToSpeak(ValueError):
    """No readable word is left in the text."""


class GruutPhonemizer(PhonemizerModel):
    """gruut's English text processing: numbers, dates, currency and abbreviations read as words."""

    role = "phonemizer"

    def __init__(self, name: str, voice: VoiceFiles, lang: str):
        from .lexicon import GruutText  # lazy: only cards of this backend pay for gruut

        self.name = name
        self.lang = lang
        self._gruut = GruutText(lang)  # gruut.sentences, on our own processor, its lexicon indexed and warmed up
        self._ids = voice.phoneme_id_map

    def weight_bytes(self) -> int:
        return self._gruut.lexicon_bytes  # the indexed lexicon, in memory

    def unreadable(self, text: str) -> str | None:
        """Why nothing in `text` can be read (no Latin letter or digit left once `readable` folds it), or None."""
        clean, dropped = readable(text)
        if any(ch.isalnum() for ch in clean):
            return None
        named = f" (dropped: {dropped})" if dropped else ""
        return f"no word the voice can read in the text{named}: it reads English in Latin letters and digits"

    def split(self, text: str) -> SplitText:
        clean, dropped = readable(text)
        sentences = [s for s in split_sentences(clean) if any(ch.isalnum() for ch in s)]
        if not sentences:
            raise NothingToSpeak(self.unreadable(text) or "no word the phonemizer can read in the text")
        return SplitText(sentences, dropped)

    def split_window(self, window: TextWindow) -> SplitText:
        """A window of a long text: one with nothing readable is skipped unless nothing else could be read."""
        try:
            return self.split(window.text)
        except NothingToSpeak:
            if window.must_speak:
                raise
            return SplitText([], readable(window.text)[1])

    def read(self, sentence: str) -> ReadSentence:
        """The sentence as read (numbers and abbreviations in words) and as the voice's phoneme ids."""
        words: list[str] = []
        symbols = ""  # words apart, punctuation right after its word, as the voice was trained
        sentence = spell_long_numbers(sentence)
        try:
            read = list(self._gruut.sentences(sentence, lang=self.lang))
        except ArithmeticError:  # a number form gruut's reader cannot take (1e300): its digits one by one
            read = list(self._gruut.sentences(spell_digits(sentence), lang=self.lang))
        for found in read:
            for word in found.words:
                if word.is_break:
                    mark = word.text if word.text in self._ids else _BREAKS.get((word.phonemes or ["|"])[0], ",")
                    symbols = symbols.rstrip(" ") + mark + " "
                    words[-1:] = [words[-1] + word.text] if words else []
                elif word.phonemes:
                    symbols += "".join(word.phonemes) + " "
                    words.append(word.text)
        ids = list(self._ids[BOS]) + list(self._ids[PAD])
        for symbol in symbols.strip():
            if symbol in self._ids:  # gruut's tie bars (d͡ʒ) and the like have no id: the voice reads dʒ
                ids += self._ids[symbol] + self._ids[PAD]
        return ReadSentence(" ".join(words), ids + list(self._ids[EOS]))

    def phoneme_ids(self, sentence: str) -> list[int]:
        return self.read(sentence).phoneme_ids

    def run(self, kind: str, inputs: list[Any]) -> list[Any]:
        out: list[Any] = []
        for item in inputs:  # gruut is pure Python: nothing to batch; one request's error stays its own
            try:
                out.append(self.split_window(item) if kind == TEXT_SPLIT else self.read(item))
            except Exception as exc:  # noqa: BLE001 - returned in place of this request's output
                out.append(exc)
        return out
