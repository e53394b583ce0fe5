"""token2wav's compiled parts: BigVGAN's activations and the DiT's velocity compiled ahead of time (files cached
per machine), or the velocity by torch.compile; a part that cannot be built runs eager, and the load says why."""

from __future__ import annotations

from typing import Any

import torch

from omni_cli.backends.base import LoadReporter, LoadStep
from omni_cli.backends.hf import aoti, bigvgan_aot
from omni_cli.backends.hf.dit_aot import DiTAheadOfTime, example_inputs, forms_for, load_or_build
from omni_cli.backends.hf.dit_compile import DiTCompile
from omni_cli.backends.hf.params import VocoderParams
from omni_cli.backends.hf.threads import intra_op_threads
from omni_cli.cache import CacheRefused


def compile_bigvgan(vocoder: Any, params: VocoderParams, on_load: LoadReporter) -> aoti.CompiledFile | None:
    """BigVGAN's activations through one function compiled ahead of time (`bigvgan_ahead_of_time`), put in
    place in `vocoder.vocode`; None: they run eager."""
    if not (params.bigvgan_ahead_of_time and bigvgan_aot.applies(vocoder.vocode)):
        return None
    fir = vocoder.vocode.post
    file = ahead_of_time(vocoder, "BigVGAN", on_load, lambda building, distrusted: bigvgan_aot.load_or_build(
        fir, vocoder.threads.count, building, models=vocoder.rows.count, on_distrust=distrusted))
    if file is not None:
        vocoder.vocode.use(lambda act: bigvgan_aot.CompiledActivation(act, file))
    return file


def compile_dit(vocoder: Any, params: VocoderParams, on_load: LoadReporter
                ) -> tuple[DiTAheadOfTime | None, DiTCompile | None]:
    """The DiT's velocity compiled ahead of time (`dit_ahead_of_time`), else by torch.compile (`dit_compile`),
    on a CPU only; (None, None): eager. Where the files compiled ahead of time loaded, they run every window
    with two rows or more, so torch.compile is not also made."""
    if vocoder.device.type != "cpu":
        return None, None
    ahead = None
    if params.dit_ahead_of_time:
        voice = vocoder.new_state(vocoder.voices()[0]).voice

        def example(form: str) -> list[torch.Tensor]:
            return example_inputs(vocoder.dit, voice.cond, vocoder._voice_features(voice), vocoder.ode,
                                  vocoder.steps, form)

        forms = forms_for(vocoder.dit, vocoder.blocked_from)
        ahead = ahead_of_time(vocoder, "DiT", on_load, lambda building, distrusted: load_or_build(
            vocoder.dit, vocoder.threads.count, example, forms, building, models=vocoder.rows.count,
            on_distrust=distrusted))
    if not params.dit_compile or ahead is not None:
        return ahead, None
    on_load(LoadStep("compiling the DiT (cached after the first time)"))
    compiled = DiTCompile()
    voice = vocoder.new_state(vocoder.voices()[0]).voice
    with intra_op_threads(vocoder.threads.count):  # inductor's loops take the count they are compiled under
        compiled.warm(vocoder.dit, voice.cond, vocoder._voice_features(voice), vocoder.ode, vocoder.steps,
                      vocoder.blocked_from)
    return None, compiled


def ahead_of_time(vocoder: Any, part: str, on_load: LoadReporter, make: Any) -> Any:
    """`make(building, distrusted)`: a part's file from the cache, or built now (`building(path)` says so and
    where it goes; `distrusted(path, why)` names a file there omni did not make, removed and built again). A
    machine where it cannot be built or loaded (no C++ compiler for inductor), or a cache folder others can
    write, runs the part eager, as without it, and the load says why in one line (kept in `vocoder.ahead_failed`)."""
    def building(path) -> None:
        on_load(LoadStep(f"compiling the {part} ahead of time, once for this machine (into {path.parent})"))

    def distrusted(path, why: str) -> None:
        on_load(LoadStep(f"not loading {path}: omni did not make it ({why}); building it again", note=True))

    try:
        with intra_op_threads(vocoder.threads.count):  # the loops are made for the count they run with
            return make(building, distrusted)
    except CacheRefused as error:  # one line for the cache, however many parts it refuses
        if str(error) not in vocoder.ahead_failed.values():
            on_load(LoadStep(f"compiled parts run uncompiled: {error}", note=True))
        vocoder.ahead_failed[part] = str(error)
        return None
    except Exception as error:  # noqa: BLE001 - any failure leaves the eager part, which is correct
        text = str(error).strip()
        reason = f"{type(error).__name__}: {text.splitlines()[0] if text else ''}"
        vocoder.ahead_failed[part] = reason
        on_load(LoadStep(f"the {part} runs uncompiled: its ahead-of-time file could not be built or loaded "
                         f"({reason[:160]})", note=True))
        return None
