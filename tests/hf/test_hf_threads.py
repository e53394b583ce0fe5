"""Intra-op threads on purpose (issues 18 and 19): each hf component's calls run with its own count,
chosen component > OMP_NUM_THREADS (a placed worker's) > card > default, validated, shown in the trace's run
record."""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
yaml = pytest.importorskip("yaml")

import hf_cards  # noqa: E402

from omni_cli.api import load, load_checked  # noqa: E402
from omni_cli.backends.hf.dit import WindowVelocity  # noqa: E402
from omni_cli.backends.hf.threads import DEFAULT_THREADS, Threads, choose_threads, intra_op_threads  # noqa: E402
from omni_cli.cli.tracefile import run_record  # noqa: E402
from omni_cli.engine import Engine  # noqa: E402
from omni_cli.spec import SpecError  # noqa: E402
from omni_cli.spec.request import SpeakRequest  # noqa: E402


def _card(directory: Path, components: dict[str, object], card: object = None) -> Path:
    path = hf_cards.greedy_card(directory, "threads", thinker_max=4, talker_max=30, chunk_codes=8, first_chunk_codes=4)
    spec = yaml.safe_load(path.read_text())
    for name, count in components.items():
        spec["components"][name]["params"]["num_threads"] = count
    if card is not None:
        spec["params"]["num_threads"] = card
    path.write_text(yaml.safe_dump(spec))
    return path


@pytest.mark.parametrize(("component", "card", "env", "expected"), [
    (3, 2, "5", Threads(3, "component params")),
    (0, 2, "5", Threads(5, "OMP_NUM_THREADS")),
    (0, 2, "", Threads(2, "card params")),
    (0, 2, " 0", Threads(2, "card params")),
    (0, 0, "", Threads(DEFAULT_THREADS, "default")),
    (0, 0, "0", Threads(DEFAULT_THREADS, "default")),  # OpenMP's own reading of 0 and junk: not set
    (0, 0, "four", Threads(DEFAULT_THREADS, "default")),
])
def test_the_count_comes_from_the_component_then_the_environment_then_the_card(component, card, env, expected):
    assert choose_threads(component, card, {"OMP_NUM_THREADS": env} if env else {}) == expected


def test_counts_are_validated_with_the_card_all_at_once(tmp_path):
    path = _card(tmp_path, {"thinker": "two", "vocoder": -1}, card=5000)
    with pytest.raises(SpecError) as info:
        load_checked(str(path))
    lines = path.read_text().splitlines()
    found = {i.key: i.message for i in info.value.issues}
    assert found == {"components.thinker.params.num_threads": "expected integer, got string",
                     "components.vocoder.params.num_threads": "must be at least 0, got -1",
                     "params.num_threads": "must be at most 4096, got 5000"}
    for issue in info.value.issues:  # each names the line that holds the value
        assert "num_threads" in lines[issue.line - 1]


def test_each_components_calls_run_with_its_own_count_and_the_callers_is_put_back(tmp_path, tiny_checkpoint,
                                                                                   monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    # counts that differ from each other and from the caller's, so each one seen can only have come from its setting
    program = load(str(_card(tmp_path, {"thinker": 2, "talker": 3}, card=4)),
                   settings={"model_path": str(tiny_checkpoint)})
    parts = program.components
    assert program.threads() == {"thinker": {"count": 2, "source": "component params"},
                                 "talker": {"count": 3, "source": "component params"},
                                 "vocoder": {"count": 4, "source": "card params"},
                                 "audio_encoder": {"count": 4, "source": "card params"},  # the card listens too
                                 "image_encoder": {"count": 4, "source": "card params"}}  # ... and sees
    seen: dict[str, set[int]] = {"thinker": set(), "talker": set(), "dit": set(), "bigvgan": set()}
    # the DiT's layers run through WindowVelocity (dit.py) and BigVGAN through LeanBigVGAN (bigvgan.py), not through
    # the modules' forward: each ODE velocity evaluation and BigVGAN's first convolution stand for them
    vocoder = parts["vocoder"]
    modules = {"thinker": parts["thinker"].module, "talker": parts["talker"].module,
               "bigvgan": vocoder.bigvgan.conv_pre}
    hooks = [module.register_forward_pre_hook(lambda *_, name=name: seen[name].add(torch.get_num_threads()))
             for name, module in modules.items()]
    velocity = WindowVelocity.__call__

    def counted_velocity(self, *args):
        seen["dit"].add(torch.get_num_threads())
        return velocity(self, *args)

    monkeypatch.setattr(WindowVelocity, "__call__", counted_velocity)
    before = torch.get_num_threads()
    torch.set_num_threads(5)
    try:
        engine = Engine(program)
        result = engine.submit(SpeakRequest("hello there", mode="chat", voice="Chelsie"), collect=True).result()
        after = torch.get_num_threads()
    finally:
        torch.set_num_threads(before)
        for hook in hooks:
            hook.remove()
    assert result.samples.size > 0
    assert seen == {"thinker": {2}, "talker": {3}, "dit": {4}, "bigvgan": {4}}
    assert after == 5  # the caller's own setting, as it left it
    record = run_record(engine, "threads.yaml", None, {"model_path": str(tiny_checkpoint)}, {"text": "hello there"})
    assert record["threads"] == program.threads()


def test_the_default_is_one_thread_per_component_and_generate_gets_the_count_it_is_given(tmp_path, tiny_checkpoint,
                                                                                          monkeypatch):
    from omni_cli.backends.hf.reference import GenerateReference

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    program = load(str(_card(tmp_path, {})), settings={"model_path": str(tiny_checkpoint)})
    assert {t["count"] for t in program.threads().values()} == {DEFAULT_THREADS}
    assert {t["source"] for t in program.threads().values()} == {"default"}
    thinker = program.components["thinker"]
    reference = GenerateReference(str(tiny_checkpoint), sorted(program.components["talker"].eos_token_ids),
                                  model=thinker.model, num_threads=3)
    seen = set()
    hook = thinker.model.token2wav.register_forward_pre_hook(lambda *_: seen.add(torch.get_num_threads()))
    try:
        with intra_op_threads(2):
            reference.run(thinker.encode("hello", "chat").prefill_ids, voice="Chelsie", seed=0, thinker_max=4,
                          talker_max=20, talker_min=19)
            assert torch.get_num_threads() == 2
    finally:
        hook.remove()
    assert seen == {3}


def test_the_run_record_says_the_count_a_placed_worker_gets_from_its_placement(tmp_path, tiny_checkpoint,
                                                                                monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    path = _card(tmp_path, {"talker": 3}, card=4)
    spec = yaml.safe_load(path.read_text())
    spec["placement"] = {"vocoder": {"executor": "process", "num_threads": 2},
                         "talker": {"executor": "process", "num_threads": 2}}
    path.write_text(yaml.safe_dump(spec))
    program = load(str(path), settings={"model_path": str(tiny_checkpoint)})
    engine = Engine(program)  # the record reads the placement; no worker needs to start for it
    placed = run_record(engine, str(path), None, {}, {})["threads"]
    assert placed == {"thinker": {"count": 4, "source": "card params"},  # inline: the card's
                      "talker": {"count": 3, "source": "component params"},  # its own count wins in the worker too
                      "vocoder": {"count": 2, "source": "placement (process worker)"},
                      "audio_encoder": {"count": 4, "source": "card params"},
                      "image_encoder": {"count": 4, "source": "card params"}}
    inline = run_record(engine, str(path), None, {}, {}, placement="inline")["threads"]
    assert inline == program.threads() and inline["vocoder"] == {"count": 4, "source": "card params"}
