"""What the phonemizer can read: text folded to the characters gruut's English lexicon knows, the rest named."""

from __future__ import annotations

import re
import unicodedata

# Characters gruut reads or normalises itself ($ 4.50, 50 %, 10:30, e-mail, O'Neil's); everything else
# that is not a letter, digit or space is dropped and named in the request's warning.
_PUNCTUATION = set(".,!?;:'\"-()$%&@#/+*=")
# Typography gruut would glue onto a word ("Hi—there" reads as one unknown word): spelled as pauses.
_REPLACE = {"\u2014": ", ", "\u2013": ", ", "\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"',
            "\u00ab": '"', "\u00bb": '"'}


def readable(text: str) -> tuple[str, str]:
    """(the text gruut should read, the characters dropped from it, each once, in order of appearance).

    Compatibility forms are folded first (x² -> x2, … -> ...), then accents are stripped (café ->
    cafe: gruut's English grapheme-to-phoneme model mangles accented letters); letters outside Latin
    script (你好, αβγ) and symbols (☃, →) cannot be read by an English lexicon.
    """
    text = "".join(_REPLACE.get(ch, ch) for ch in text)
    folded = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", text))
    kept: list[str] = []
    dropped: dict[str, None] = {}
    for ch in folded:
        if unicodedata.combining(ch):
            continue  # an accent stripped off the letter before it
        if (ch.isascii() and (ch.isalnum() or ch.isspace())) or ch in _PUNCTUATION:
            kept.append(ch)
        else:
            dropped.setdefault(ch)
            kept.append(" ")  # a dropped character still separates the words around it
    # a dropped word leaves no space before the punctuation after it ("cafe 你好." -> "cafe.")
    return re.sub(r" ([.,!?;:])", r"\1", " ".join("".join(kept).split())), "".join(dropped)


# Words after which a full stop does not end a sentence ("Dr. Smith", "Jan. 3rd", "approx. 5")
_ABBREVIATIONS = {
    "mr", "mrs", "ms", "dr", "prof", "st", "jr", "sr", "mt", "ft", "vs", "etc", "no", "vol", "approx", "dept",
    "inc", "ltd", "co", "corp", "gen", "col", "lt", "sgt", "capt", "rev", "fig", "est",
    "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec",
}
_END = re.compile(r"[.!?]+[\"')\]]*\s+(?=[A-Z0-9\"'(])")


def split_sentences(text: str) -> list[str]:
    """Sentences, cut only where one surely ends: . ! or ? then a space and a capital or a digit, and not
    after an abbreviation or an initial ("J. R. R."). Cheap, so the first sentence starts at once; gruut
    reads each piece and may find more breaks inside it, never fewer."""
    pieces: list[str] = []
    start = 0
    for match in _END.finditer(text):
        words = text[start:match.start() + 1].split()
        last = words[-1].rstrip(".").lower() if words else ""
        initials = "." in last and not any(ch.isdigit() for ch in last)  # U.S., p.m. (not 4.50)
        if text[match.start()] == "." and (last in _ABBREVIATIONS or len(last) <= 1 or initials):
            continue
        pieces.append(text[start:match.end()].strip())
        start = match.end()
    pieces.append(text[start:].strip())
    return [p for p in pieces if p]


# gruut reads a number through a float and a 28-digit decimal: past 15 digits its words are wrong, past 28 it
# fails the whole sentence. A longer number is read digit by digit ("4 0 9 1 ..."), as one reads an account number.
MAX_NUMBER_DIGITS = 15
_NUMBER = re.compile(r"\d(?:,?\d)*(?:\.\d+)?")


def spell_long_numbers(text: str) -> str:
    """`text` with every number of more than MAX_NUMBER_DIGITS digits before its point spelled digit by digit
    (grouping commas dropped, a fraction after "point")."""
    def spell(match: re.Match) -> str:
        whole, _, fraction = match.group().partition(".")
        digits = whole.replace(",", "")
        if len(digits) <= MAX_NUMBER_DIGITS:
            return match.group()
        return " " + " ".join(digits) + (" point " + " ".join(fraction) if fraction else "") + " "

    return _NUMBER.sub(spell, text)


def spell_digits(text: str) -> str:
    """Every digit of `text` apart: the form gruut reads whatever surrounds it (1e300, which it cannot)."""
    return re.sub(r"\d", r" \g<0> ", re.sub(r"(?<=\d)\.(?=\d)", " point ", text))
