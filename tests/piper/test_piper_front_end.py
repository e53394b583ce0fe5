"""The text front end reads as gruut does, with its lexicon indexed (and cached) and dateparser loaded on demand."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from omni_cli import cache
from omni_cli.backends.piper import lexicon

ROOT = Path(__file__).resolve().parents[2]
TEXTS = ["Dr. Smith read 12 books in 2019; I read one.", "Pay $4.50 on 4/5/2023 at 10:30, please!",
         "Zyxwv blorfed the O'Neils' café."]


def words(sentences) -> list[tuple]:
    return [(w.text, tuple(w.phonemes or ()), w.is_break) for s in sentences for w in s.words]


@pytest.fixture(scope="module")
def front_end():
    return lexicon.GruutText("en_US")


def test_the_indexed_front_end_reads_every_word_as_gruut_does(front_end):
    import gruut

    assert front_end.is_indexed and front_end.lexicon_bytes > 0
    for text in TEXTS:
        ours = words(front_end.sentences(text, lang="en_US"))
        assert ours and ours == words(gruut.sentences(text, lang="en_US"))


def test_the_indexed_lexicon_is_cached_and_a_damaged_copy_rebuilt(monkeypatch, tmp_path):
    from gruut_lang_en import get_lang_dir

    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path / "cache"))
    source = Path(get_lang_dir()) / "lexicon.db"
    built = []
    real = lexicon._build
    monkeypatch.setattr(lexicon, "_build", lambda path: built.append(path) or real(path))

    def hello(connection: sqlite3.Connection) -> list:
        return connection.execute("SELECT phonemes FROM word_phonemes WHERE word = 'hello'").fetchall()

    assert hello(lexicon.indexed_lexicon(source)) and len(built) == 1
    kept = next((cache.cache_root() / "piper").glob("lexicon-*/lexicon.db"))
    warm = lexicon.indexed_lexicon(source)
    assert len(built) == 1 and hello(warm)
    plan = " ".join(str(row) for row in warm.execute("EXPLAIN QUERY PLAN SELECT * FROM word_phonemes WHERE word = 'x'"))
    assert "omni_word_phonemes_word" in plan
    kept.write_bytes(kept.read_bytes()[:4096])  # cut short
    assert hello(lexicon.indexed_lexicon(source)) and len(built) == 2
    assert cache.verified(kept)


def test_a_warm_start_imports_neither_onnx_nor_dateparser_until_a_text_needs_it(tmp_path):
    env = {**os.environ, cache.CACHE_ENV: str(tmp_path / "cache"), "PYTHONPATH": str(ROOT)}
    probe = ("import sys; from omni_cli.api import load; from omni_cli.engine import Engine; "
             "from omni_cli.spec import SpeakRequest; e = Engine(load('piper_joe')); "
             "e.submit(SpeakRequest('Hello, world.'), collect=True).result(); "
             "print('onnx' in sys.modules, 'dateparser.date' in sys.modules); "
             "r = e.submit(SpeakRequest('Pay on 4/5/2023.'), collect=True).result(); "
             "print('dateparser.date' in sys.modules, r.text)")
    runs = [subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, cwd=ROOT,
                           timeout=300) for _ in range(2)]
    assert [r.returncode for r in runs] == [0, 0], runs[-1].stderr
    cold, warm = (r.stdout.splitlines() for r in runs)
    assert cold[0] == "True False" and warm[0] == "False False"
    assert warm[1] == "True Pay on April fifth, twenty twenty three."
