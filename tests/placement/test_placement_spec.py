"""The card's placement section and the command-line overrides: strict, one line per problem."""

from __future__ import annotations

from pathlib import Path

import pytest

from omni_cli.spec import SpecError, load_card, parse_yaml
from omni_cli.spec.placement import PlacementSpec, check_ray_address, override_placement

TOY = (Path(__file__).resolve().parents[2] / "cards" / "qwen2_5_omni_toy.yaml").read_text(encoding="utf-8")
NAMES = ["thinker", "talker", "vocoder"]


def card_with(placement: str):
    return load_card(parse_yaml(TOY + "\nplacement:\n" + placement, "toy.yaml"))


def messages(placement: str) -> list[str]:
    with pytest.raises(SpecError) as caught:
        card_with(placement)
    return [str(issue) for issue in caught.value.issues]


def test_a_card_places_each_component_and_the_rest_stay_inline():
    card = card_with("  thinker: {executor: ray, num_cpus: 2, num_gpus: 0.5}\n  vocoder: {executor: process, "
                     "num_threads: 1}\n")
    assert card.placement["thinker"] == PlacementSpec("ray", None, 2.0, 0.5, 0)
    assert card.placement["vocoder"].executor == "process" and card.placement["vocoder"].num_threads == 1
    assert "talker" not in card.placement  # inline, as today
    assert load_card(parse_yaml(TOY, "toy.yaml")).placement == {}


def test_every_problem_is_reported_with_its_line_at_once():
    text = ("  thinker: {executor: threads}\n"          # line of placement.thinker.executor
            "  talker: {executor: thread, num_gpus: 1}\n"
            "  vocoder: {executor: inline, num_threads: 2, device: tpu}\n"
            "  speaker: {executor: ray}\n"
            "  # a typo'd key is an error, not a silent default\n")
    with pytest.raises(SpecError) as caught:
        card_with(text + "  extra: {executr: ray}\n")
    # the schema pass stops at the unknown executor and the misspelt key; the rules run on a card that parses
    first = [str(i) for i in caught.value.issues]
    assert any("placement.thinker.executor: expected one of 'inline' | 'thread' | 'process' | 'ray', got 'threads'"
               in m for m in first), first
    assert any("placement.extra.executr: unknown key" in m for m in first), first
    found = messages("  talker: {executor: thread, num_gpus: 1}\n  vocoder: {executor: inline, num_threads: 2, "
                     "device: tpu}\n  speaker: {executor: ray}\n")
    lines = len(TOY.splitlines())  # then a blank line, `placement:`, the entries
    assert found == [
        f"toy.yaml:{lines + 3}: placement.talker.num_gpus: a Ray resource: only with executor ray (this one is thread)",
        f"toy.yaml:{lines + 4}: placement.vocoder.device: expected cpu, cuda or cuda:N, got 'tpu'",
        f"toy.yaml:{lines + 4}: placement.vocoder.num_threads: needs its own process: executor process or ray "
        "(this one is inline)",
        f"toy.yaml:{lines + 5}: placement.speaker: names undeclared component 'speaker' (components: thinker, "
        "talker, vocoder, audio_encoder, image_encoder)",
    ]


def test_the_numpy_backend_cannot_be_put_on_a_gpu():
    assert messages("  thinker: {executor: ray, device: 'cuda:1'}\n") == [
        f"toy.yaml:{len(TOY.splitlines()) + 3}: placement.thinker.device: the numpy backend runs on cpu only"]


def test_the_command_line_overrides_the_executor_and_keeps_the_rest():
    card = card_with("  thinker: {executor: ray, num_cpus: 2}\n  vocoder: {executor: process, num_threads: 1}\n")
    every = override_placement(card.placement, "thread", NAMES)
    assert {n: p.executor for n, p in every.items()} == dict.fromkeys(NAMES, "thread")
    assert every["thinker"].num_cpus is None and every["vocoder"].num_threads == 0  # they meant ray, process
    some = override_placement(card.placement, "talker=ray, vocoder=process", NAMES)
    assert some["thinker"] == card.placement["thinker"]  # not named: as the card says
    assert some["talker"].executor == "ray" and some["vocoder"] == card.placement["vocoder"]


@pytest.mark.parametrize("text, message", [
    ("threads", "unknown executor 'threads' (known: inline, thread, process, ray)"),
    ("speaker=ray", "unknown component 'speaker' (components: thinker, talker, vocoder)"),
    ("thinker=ray,vocoder", "expected KIND or NAME=KIND,NAME=KIND, got 'vocoder'"),
])
def test_a_bad_override_is_one_line(text, message):
    with pytest.raises(SpecError) as caught:
        override_placement({}, text, NAMES)
    assert str(caught.value) == f"<command line>: --placement: {message}"


@pytest.mark.parametrize("address", ["auto", "10.0.0.2:6379", "head.example:10001"])
def test_ray_addresses(address):
    assert check_ray_address(f" {address} ") == address


@pytest.mark.parametrize("address", ["", "local", "host:", "host:0", "host:70000", ":6379x"])
def test_bad_ray_addresses(address):
    with pytest.raises(SpecError, match="--ray-address: expected auto or HOST:PORT"):
        check_ray_address(address)
