"""Encodings kept across runs (toy card): a conversation's second run encodes only its new clip (and no earlier
picture) and answers as an uncached run does; a cut, edited, planted, foreign or loose entry is never loaded (it
is encoded again, with one note); another model never reads the rows; the store stays within its cap."""

import os
import stat

import numpy as np
import pytest
from test_listen import clip

from omni_cli.api import load
from omni_cli.audio.seen import SeenImage
from omni_cli.audio.source import AudioSource
from omni_cli.backends.base import AUDIO_BLOCK, IMAGE
from omni_cli.encoded import EncodedStore, Kept
from omni_cli.engine import Engine
from omni_cli.spec import PriorTurn, SpeakRequest

RATE = 16000
SECONDS = 2.4  # three 1 s blocks


@pytest.fixture(scope="module")
def chat():
    return load("qwen2_5_omni_toy", "chat")


@pytest.fixture
def store(tmp_path):
    return EncodedStore(tmp_path / "cache")


def whole(seconds: float, seed: int) -> AudioSource:
    return AudioSource.whole(clip(seconds, seed), RATE)  # a fresh source each time: a new run reads its file again


def picture(seed: int = 3) -> SeenImage:
    return SeenImage(np.random.default_rng(seed).integers(0, 256, (40, 56, 3), dtype=np.uint8), "a picture")


def run(program, store, text="", history=(), audio=None, images=()):
    """The request's result and the encoder inputs each encoder ran (counted where the components run)."""
    ran = {"audio": 0, "image": 0}
    spies = []
    for role, kind, name in (("audio_encoder", AUDIO_BLOCK, "audio"), ("image_encoder", IMAGE, "image")):
        component = program.roles[role]
        real = component.run

        def spy(k, inputs, real=real, kind=kind, name=name):
            ran[name] += len(inputs) if k == kind else 0
            return real(k, inputs)

        component.run = spy
        spies.append(component)
    try:
        request = SpeakRequest(text, mode="chat", max_tokens=6, history=history, audio=audio, images=images,
                               keep_encoded=store)
        return Engine(program).submit(request, collect=True).result(), ran
    finally:
        for component in spies:
            del component.run


def second_turn(first_text: str, with_picture: bool = False) -> tuple:
    return (PriorTurn("user", "", (whole(SECONDS, 3),), (picture(),) if with_picture else ()),
            PriorTurn("assistant", first_text))


def entries(store) -> list:
    return sorted((store.root / "encoded").glob("*/*.npz"))


def test_a_second_run_encodes_only_the_new_clip(chat, store):
    first, ran = run(chat, store, audio=whole(SECONDS, 3))
    assert ran["audio"] == 3 and first.loops["audio_encode"].outputs["reused"] == {} and len(entries(store)) == 1
    again, ran = run(chat, store, "more", second_turn(first.text), whole(1.5, 4))
    uncached, ran_uncached = run(chat, None, "more", second_turn(first.text), whole(1.5, 4))
    assert ran == {"audio": 2, "image": 0} and ran_uncached["audio"] == 5  # the new clip's two blocks only
    heard = again.loops["audio_encode"].outputs
    assert heard["reused"] == {"clips": 1, "audio_s": pytest.approx(SECONDS)} and heard["notes"] == []
    assert again.tokens == uncached.tokens and again.tokens["thinker_decode"]
    assert np.array_equal(again.samples, uncached.samples) and again.samples.size


def test_an_earlier_picture_is_not_encoded_again(chat, store):
    first, ran = run(chat, store, "see", audio=whole(SECONDS, 3), images=(picture(),))
    assert ran == {"audio": 3, "image": 1}
    again, ran = run(chat, store, "and?", second_turn(first.text, with_picture=True))
    uncached, _ = run(chat, None, "and?", second_turn(first.text, with_picture=True))
    assert ran == {"audio": 0, "image": 0}
    assert again.loops["image_encode"].outputs["reused"] == {"images": 1}
    assert again.tokens == uncached.tokens and np.array_equal(again.samples, uncached.samples)


def cut_short(path):
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def loosened(path):
    os.chmod(path, 0o666)


def foreign(path):
    os.chown(path, 4242, -1)  # the tests run as root here; elsewhere this case is skipped


def planted(path):
    """Another clip's entry, digest and all, put in this clip's place: its digest matches, its content does not."""
    other_store = EncodedStore(path.parents[2])
    first, _ = run(load("qwen2_5_omni_toy", "chat"), other_store, audio=whole(1.2, 9))
    other = next(p for p in path.parent.glob("*.npz") if p != path)
    os.replace(other, path)
    os.replace(other.with_name(other.name + ".sha256"), path.with_name(path.name + ".sha256"))


@pytest.mark.parametrize("spoil, why", [(cut_short, "do not match the digest"), (loosened, "writable by other users"),
                                        (foreign, "owned by another user"), (planted, "not an encoding of this clip")])
def test_a_spoiled_entry_is_encoded_again_with_one_note(chat, store, spoil, why):
    if spoil is foreign and os.getuid() != 0:
        pytest.skip("only root can give a file to another user")
    first, _ = run(chat, store, audio=whole(SECONDS, 3))
    (entry,) = entries(store)
    spoil(entry)
    again, ran = run(chat, store, "more", second_turn(first.text))
    notes = again.loops["audio_encode"].outputs["notes"]
    assert ran["audio"] == 3 and len(notes) == 1 and why in notes[0] and str(entry) in notes[0]
    assert again.loops["audio_encode"].outputs["reused"] == {}
    info = entry.stat()  # encoded again and kept anew: ours, private, whole
    assert info.st_uid == os.getuid() and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    third, ran = run(chat, store, "more", second_turn(first.text))
    assert ran["audio"] == 0 and third.tokens == again.tokens


def test_a_loose_cache_folder_is_not_read(chat, store):
    first, _ = run(chat, store, audio=whole(SECONDS, 3))
    (entry,) = entries(store)
    os.chmod(entry.parent, 0o777)
    again, ran = run(chat, store, "more", second_turn(first.text))
    notes = again.loops["audio_encode"].outputs["notes"]
    assert ran["audio"] == 3 and notes and "writable by other users" in notes[0] and again.samples.size


def test_another_model_does_not_read_the_rows(chat, store):
    first, _ = run(chat, store, audio=whole(SECONDS, 3))
    other = load("qwen2_5_omni_toy", "chat", overrides={"seed": 20252})  # the same shapes, other weights
    _, ran = run(other, store, "more", second_turn(first.text))
    assert ran["audio"] == 3 and len(entries(store)) == 2  # its own entry, beside the first model's


def test_the_store_keeps_within_its_cap_dropping_the_oldest_first(tmp_path):
    store = EncodedStore(tmp_path, cap_bytes=1 << 20)
    folder = tmp_path / "encoded" / "model"
    rows = Kept((np.zeros((200, 256), np.float32),), (RATE,))  # 200 KiB each: five fit in 1 MiB
    for i in range(8):
        assert store.put("model", str(i) * 64, rows) is None
        os.utime(folder / f"{str(i) * 48}.npz", ns=(i * 10**9, i * 10**9))  # an order no file system clock can blur
        if i == 1:
            assert store.get("model", "0" * 64)[0] is not None  # a use: entry 0 is now the newest
    kept = sorted(p.name[:48] for p in folder.glob("*.npz"))
    assert kept == [str(i) * 48 for i in (0, 4, 5, 6, 7)]
    assert sum(p.stat().st_size for p in folder.glob("*.npz")) <= 1 << 20
    big = Kept((np.zeros((300, 1024), np.float32),))  # over a quarter of the cap: not kept
    assert store.put("model", "f" * 64, big) is None and not (folder / f"{'f' * 48}.npz").exists()


def test_the_example_answers_alike_with_and_without_the_store():
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[1] / "examples" / "kept_encodings.py"
    done = subprocess.run([sys.executable, str(script), "--seconds", "3", "--rounds", "1"], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    rows = {line.split()[0]: line.split()[1:] for line in done.stdout.splitlines()[2:4]}
    assert float(rows["kept"][0]) == 2 and float(rows["again"][0]) == 5  # the new clip's blocks; then both clips'
    assert done.stdout.rstrip().endswith("same thinker ids and waveform: True")
