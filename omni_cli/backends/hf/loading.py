"""Load a Qwen2.5-Omni checkpoint directory: modules, tokenizer and the voices of spk_dict.pt."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import transformers
from transformers import AutoTokenizer, Qwen2_5OmniForConditionalGeneration

from omni_cli.backends.base import BackendUnavailable, LoadReporter, LoadStep, no_report
from omni_cli.backends.hf.params import HFParams

_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


@dataclass(frozen=True)
class Voice:
    """One speaker of spk_dict.pt: the talker's text BOS token and the DiT's conditioning."""

    name: str
    bos_token: int  # a thinker token id, embedded into the talker prefill
    cond: torch.Tensor  # [1, enc_emb_dim] float32 speaker embedding
    ref_mel: torch.Tensor  # [1, T, mel_dim] float32 reference mel


class Voices:
    """The checkpoint's voices by name; an unknown name is an error listing the known ones."""

    def __init__(self, voices: dict[str, Voice]):
        if not voices:
            raise ValueError("spk_dict.pt holds no voice")
        self._voices = voices
        # generate's default speaker; a checkpoint without it falls back to its first voice
        self.default = "Chelsie" if "Chelsie" in voices else self.names()[0]

    def names(self) -> list[str]:
        return sorted(self._voices)

    def get(self, name: str | None) -> Voice:
        name = self.default if name is None else name
        if name not in self._voices:
            raise ValueError(f"unknown voice {name!r}; this checkpoint has: {', '.join(self.names())}")
        return self._voices[name]


@dataclass
class Loaded:
    """Everything the three components share: one model, one tokenizer, one set of voices."""

    model: Any  # Qwen2_5OmniForConditionalGeneration, eval mode
    tokenizer: Any
    voices: Voices
    device: torch.device
    dtype: torch.dtype


def _checked(params: HFParams) -> tuple[Path, torch.device, torch.dtype]:
    """The checkpoint directory, the device and the dtype to load with; BackendUnavailable where they cannot be."""
    path = Path(params.model_path).expanduser()
    for needed in ("config.json", "spk_dict.pt"):
        if not (path / needed).is_file():
            raise BackendUnavailable(f"{path} is not a Qwen2.5-Omni checkpoint directory: {needed} is missing")
    device = torch.device(params.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise BackendUnavailable(f"device {params.device!r} was asked for but torch sees no CUDA device")
    return path, device, _DTYPES[params.dtype]


def load_checkpoint(params: HFParams, on_load: LoadReporter = no_report) -> Loaded:
    path, device, dtype = _checked(params)
    on_load(LoadStep("building the model"))
    with quiet_transformers(), counted_weights(on_load):
        model = Qwen2_5OmniForConditionalGeneration.from_pretrained(
            str(path), dtype=dtype, attn_implementation=params.attn_implementation
        )
    on_load(LoadStep("loading the tokenizer"))
    with quiet_transformers():
        tokenizer = AutoTokenizer.from_pretrained(str(path))
    if not model.has_talker:
        raise BackendUnavailable(f"{path} has no talker (enable_audio_output is false): it cannot speak")
    model.to(device).eval()
    # transformers runs token2wav in float32 whatever the checkpoint dtype; so do we
    model.token2wav.float()
    voices = _voices(model.speaker_map, on_load)  # spk_dict.pt, as from_pretrained read it
    return Loaded(model=model, tokenizer=tokenizer, voices=voices, device=device, dtype=dtype)


def load_token2wav(params: HFParams, on_load: LoadReporter = no_report) -> Loaded:
    """Only what the vocoder runs: token2wav's modules with their weights and the voices, without the thinker,
    the talker or the tokenizer (`model` is a stand-in with a `token2wav` attribute; `tokenizer` is None).

    For a vocoder in a worker of its own (executors/worker.py): there, the rest of the checkpoint would be a
    second copy of weights the worker never runs (84% of the bytes of our 3B-width checkpoint, whose stacks
    have 2 layers; more of a released one's). The modules are built as
    `Qwen2_5OmniForConditionalGeneration.enable_talker` builds them and read the same tensors of the same
    files, so their weights, and so the samples, are those of `load_checkpoint`'s (tests/hf/test_hf_token2wav_load.py).
    """
    import json
    from contextlib import ExitStack
    from types import SimpleNamespace

    from safetensors import safe_open
    from transformers import Qwen2_5OmniConfig
    from transformers.models.qwen2_5_omni.modeling_qwen2_5_omni import Qwen2_5OmniToken2WavModel

    path, device, dtype = _checked(params)
    on_load(LoadStep("building the vocoder"))
    with quiet_transformers():
        config = Qwen2_5OmniConfig.from_pretrained(str(path))
    if not config.enable_audio_output:
        raise BackendUnavailable(f"{path} has no talker (enable_audio_output is false): it cannot speak")
    with quiet_transformers():
        module = Qwen2_5OmniToken2WavModel._from_config(config.token2wav_config,
                                                        attn_implementation=params.attn_implementation)
    module.float()
    prefix = "token2wav."
    index = path / "model.safetensors.index.json"
    if index.is_file():
        weight_map = json.loads(index.read_text())["weight_map"]
        files: dict[str, list[str]] = {}
        for key, file in weight_map.items():
            if key.startswith(prefix):
                files.setdefault(file, []).append(key)
    else:
        with safe_open(str(path / "model.safetensors"), framework="pt") as f:
            files = {"model.safetensors": [key for key in f.keys() if key.startswith(prefix)]}
    state = {}
    with ExitStack() as files_open:
        opened = {file: files_open.enter_context(safe_open(str(path / file), framework="pt")) for file in files}
        # counted as from_pretrained's loading is; as stored: from_pretrained(dtype=...) loads them into
        # token2wav's float32 as they are too
        for file, key in _CountedIterable([(file, key) for file, keys in files.items() for key in keys], on_load):
            state[key[len(prefix):]] = opened[file].get_tensor(key)
    module.load_state_dict(state, strict=True)
    module.to(device).eval()
    # spk_dict.pt, read as `Qwen2_5OmniForConditionalGeneration.load_speakers` reads it
    speakers = torch.load(path / "spk_dict.pt", weights_only=True)
    return Loaded(model=SimpleNamespace(token2wav=module), tokenizer=None, voices=_voices(speakers, on_load),
                  device=device, dtype=dtype)


def _voices(speakers: dict[str, Any], on_load: LoadReporter) -> Voices:
    built = {}
    for name, entry in speakers.items():
        on_load(LoadStep("building voices", len(built), len(speakers), "voices"))
        built[name] = _voice(name, entry)
    on_load(LoadStep("building voices", len(built), len(speakers), "voices"))
    return Voices(built)


def _voice(name: str, entry: dict[str, Any]) -> Voice:
    return Voice(
        name=name,
        bos_token=int(entry["bos_token"]),
        cond=torch.as_tensor(entry["cond"]).float(),
        ref_mel=torch.as_tensor(entry["ref_mel"]).float(),
    )


class counted_weights:
    """Report transformers' "Loading weights" loop to `on_load`, one step per tensor, instead of its bar."""

    def __init__(self, on_load: LoadReporter):
        self.on_load = on_load

    def _hook(self, factory: Any, args: tuple, kwargs: dict) -> Any:
        if kwargs.get("desc") != "Loading weights" or not args:
            return factory(*args, **kwargs)
        return _CountedIterable(args[0], self.on_load)

    def __enter__(self) -> None:
        self._previous = transformers.logging.set_tqdm_hook(self._hook)

    def __exit__(self, *exc: object) -> None:
        transformers.logging.set_tqdm_hook(self._previous)


class _CountedIterable:
    """What transformers iterates instead of a tqdm bar: the same items, each one counted."""

    STEPS = 50  # reports per load at most: a 7B checkpoint has thousands of tensors

    def __init__(self, items: Any, on_load: LoadReporter):
        self.items = list(items)
        self.on_load = on_load

    def __iter__(self):
        total = len(self.items)
        every = max(1, total // self.STEPS)
        for done, item in enumerate(self.items):
            if done % every == 0:
                self.on_load(LoadStep("loading weights", done, total, "tensors"))
            yield item
        self.on_load(LoadStep("loading weights", total, total, "tensors"))

    def __getattr__(self, _name: str) -> Any:
        return lambda *args, **kwargs: None  # tqdm's other methods (update, close, set_postfix): nothing to do


class no_progress_bars:
    """transformers draws progress bars on stderr (loading, writing shards); the library never prints."""

    def __enter__(self) -> None:
        self._bars = transformers.logging.is_progress_bar_enabled()
        transformers.logging.disable_progress_bar()

    def __exit__(self, *exc: object) -> None:
        if self._bars:
            transformers.logging.enable_progress_bar()


class quiet_transformers(no_progress_bars):
    """Loading logs config warnings and draws progress bars on stderr; the library never prints."""

    def __enter__(self) -> None:
        self._level = transformers.logging.get_verbosity()
        transformers.logging.set_verbosity_error()
        super().__enter__()

    def __exit__(self, *exc: object) -> None:
        super().__exit__(*exc)
        transformers.logging.set_verbosity(self._level)


# transformers checks every `*_token_id` of the talker's config against the talker's (codec) vocabulary,
# but these name thinker tokens (text PAD/BOS/EOS, the vision and audio markers): every Qwen2.5-Omni
# config, released ones included, is warned about, and so is the default config that saving builds to
# diff against. Nothing is wrong with them; any other warning still shows.
_THINKER_IDS_IN_TALKER = re.compile(
    r"Model config: (tts_text_(start|end|pad)|vision_(start|end)|audio_(start|end))_token_id must be `None` "
    r"or an integer within the vocabulary"
)


class _DropThinkerIdWarnings(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not _THINKER_IDS_IN_TALKER.match(record.getMessage())


class talker_id_warnings_dropped:
    """Drop exactly transformers' warnings about the talker config's thinker token ids (see above)."""

    def __enter__(self) -> None:
        self._logger = logging.getLogger("transformers.configuration_utils")
        self._filter = _DropThinkerIdWarnings()
        self._logger.addFilter(self._filter)

    def __exit__(self, *exc: object) -> None:
        self._logger.removeFilter(self._filter)
