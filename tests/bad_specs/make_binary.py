"""Write the corpus files that are not text (NUL bytes, non-UTF-8, junk); run it from anywhere."""

from __future__ import annotations

import random
from pathlib import Path

HERE = Path(__file__).resolve().parent
CARD = (HERE.parent.parent / "cards" / "qwen2_5_omni_toy.yaml").read_bytes()
PROGRAM = (HERE.parent.parent / "programs" / "speak.yaml").read_bytes()


def files() -> dict[str, bytes]:
    junk = random.Random(6).randbytes(512)  # fixed seed: the same junk every time
    return {
        "cards/card_nul_byte.yaml": CARD.replace(b"seed: 20251", b"seed: 20\x00251"),
        "cards/card_non_utf8.yaml": CARD.replace(b"Tiny random-weight", b"Tiny r\xe9sum\xe9 random-weight"),
        "cards/card_binary_junk.yaml": junk,
        "cards/card_control_character.yaml": CARD.replace(b"model: qwen2_5_omni_toy", b"model: qwen2_5\x07omni_toy"),
        "cards/card_utf16.yaml": CARD.decode("utf-8").encode("utf-16"),
        "programs/program_nul_byte.yaml": PROGRAM.replace(b"op: emit_text", b"op: emit\x00text"),
        "programs/program_non_utf8.yaml": PROGRAM.replace(b"Speak the request", b"Speak \xff\xfe the request"),
        "programs/program_binary_junk.yaml": b"\x89PNG\r\n\x1a\n" + junk,
        "programs/program_escape_sequence.yaml": PROGRAM.replace(b"program: speak", b"program: speak\x1b[2J"),
    }


if __name__ == "__main__":
    for name, data in files().items():
        (HERE / name).write_bytes(data)
