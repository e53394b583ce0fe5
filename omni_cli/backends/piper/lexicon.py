"""gruut's text processing on its own processor, with its English lexicon indexed for look-ups by word.

gruut looks each word up in a sqlite lexicon (gruut-lang-en's lexicon.db) whose word column has no index, so
every look-up reads the whole table: tens of milliseconds a word, seconds a paragraph. We give gruut a copy
in memory with an index on the word: the same rows, found at once. The indexed copy is built once per
lexicon file into omni's cache and loaded from the bytes the cache verified (`deserialize`), never opened
from a path something else could change. Where the cache cannot be used it is built in memory.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ... import cache
from .graph_cache import file_digest

LEXICON_VERSION = 1  # bump when the indexed copy is made differently
INDEX = "CREATE INDEX IF NOT EXISTS omni_word_phonemes_word ON word_phonemes (word)"
# loads the lexicon, the grapheme-to-phoneme model and the part-of-speech tagger now, not in the first request
WARM_UP = "Dr. Smith paid $4.50 on May 3rd, 2024."


class GruutText:
    """`sentences(text, lang)` as `gruut.sentences` gives them, from one TextProcessor this object owns (gruut's
    own are per thread), its lexicon look-ups indexed when gruut keeps its lexicon where we expect it."""

    def __init__(self, lang: str):
        from .deferred import defer
        from .text_graph import gruut_on_text_graphs

        defer()  # dateparser: imported when a text needs it, not with gruut
        with gruut_on_text_graphs():  # and networkx's algorithms never
            from gruut.text_processor import TextProcessor

        self._processor = TextProcessor(default_lang=lang, model_prefix="")
        self.lexicon_bytes = index_lookups(self._processor.get_settings(lang))
        self.is_indexed = self.lexicon_bytes > 0
        list(self.sentences(WARM_UP, lang=lang))

    def sentences(self, text: str, lang: str) -> Iterable[Any]:
        graph, root = self._processor(text, lang=lang)
        yield from self._processor.sentences(graph, root, major_breaks=True, minor_breaks=True, punctuations=True,
                                             explicit_lang=True, phonemes=True, break_phonemes=True, pos=True)


def index_lookups(settings: Any) -> int:
    """Give the language's lexicon phonemizer an indexed connection: its bytes in memory (0: left as gruut made
    it, reading its file)."""
    from gruut.lang import DelayedSqlitePhonemizer
    from gruut.phonemize import SqlitePhonemizer

    lookup = getattr(settings, "lookup_phonemes", None)
    if not isinstance(lookup, DelayedSqlitePhonemizer) or lookup.phonemizer is not None:
        return 0
    try:
        connection = indexed_lexicon(lookup.db_path)
    except sqlite3.Error:
        return 0  # not the lexicon we know: gruut's own slower look-ups still read it right
    lookup.phonemizer = SqlitePhonemizer(db_conn=connection, **lookup.phonemizer_args)
    pages, page_size = (connection.execute(f"PRAGMA {name}").fetchone()[0] for name in ("page_count", "page_size"))
    return pages * page_size


def indexed_lexicon(db_path: Path) -> sqlite3.Connection:
    """An in-memory copy of the lexicon at `db_path` with its word index: from the cache, else built (and kept)."""
    try:
        path = cache.cache_dir("piper", f"lexicon-{file_digest(db_path)[:32]}-v{LEXICON_VERSION}") / "lexicon.db"
    except (cache.CacheRefused, OSError):
        return _build(db_path)
    data = cache.read_verified(path)
    if data is not None:
        connection = _connection()
        connection.deserialize(data)
        return connection
    cache.discard(path)
    connection = _build(db_path)
    try:
        cache.write_artifact(path, connection.serialize())
    except OSError:
        pass  # built again next time
    return connection


def _connection() -> sqlite3.Connection:
    # read only after it is made; one phonemizer call runs at a time, on whichever thread the engine gives it
    return sqlite3.connect(":memory:", check_same_thread=False)


def _build(db_path: Path) -> sqlite3.Connection:
    source = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        connection = _connection()
        source.backup(connection)
    finally:
        source.close()
    connection.execute(INDEX)
    connection.commit()
    return connection
