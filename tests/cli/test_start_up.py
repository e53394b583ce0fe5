"""What `omni speak` loads before its first audio: the typer it parses with stays below the version that checks
every option through pydantic, and parsing a command imports no pydantic."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import version

import pytest
from cli_helpers import ROOT, proc_env
from packaging.requirements import Requirement

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

# a fresh interpreter: the test process may have imported pydantic already
PARSE = r"""
import sys
from typer.main import get_command
from omni_cli.cli.app import app
root = get_command(app)
ctx = root.make_context("omni", ["speak", "hi", "-o", "a.wav", "-q"])
speak = root.get_command(ctx, "speak").make_context("speak", ["hi", "-o", "a.wav", "-q", "-j", "3"], parent=ctx)
print(speak.params["concurrency"], speak.params["output"], "pydantic" in sys.modules)
"""


def typer_requirement() -> Requirement:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    (found,) = [Requirement(r) for r in project["dependencies"] if Requirement(r).name == "typer"]
    return found


def test_the_typer_bound_holds_for_the_installed_typer():
    wanted = typer_requirement()
    assert not wanted.specifier.contains("0.29.0")  # the first typer that imports pydantic for its options
    assert wanted.specifier.contains(version("typer"))


def test_parsing_a_command_imports_no_pydantic():
    done = subprocess.run([sys.executable, "-c", PARSE], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["3", "a.wav", "False"]


@pytest.mark.parametrize(("argv", "environ", "expected"), [
    (["speak", "Hi", "-o", "a.wav"], {}, True),
    (["speak", "-", "--card", "piper_joe"], {}, True),
    (["speak", "Hi", "--card=piper_joe"], {"OMNI_CARD": "qwen2_5_omni_toy"}, True),
    (["speak", "Hi"], {"OMNI_CARD": "qwen2_5_omni_toy"}, False),
    (["speak", "Hi", "-c", "qwen2_5_omni_toy"], {}, False),
    (["speak", "Hi", "-cqwen2_5_omni_toy"], {}, False),
    (["speak", "Hi", "-qc", "qwen2_5_omni_toy"], {}, False),
    (["speak", "Hi", "--server", "http://127.0.0.1:8000"], {}, False),
    (["speak", "Hi"], {"OMNI_SERVER": "http://127.0.0.1:8000"}, False),
    (["speak", "--help"], {}, False),
    (["speak", "--", "--help"], {}, True),  # the text "--help", spoken
    (["chat", "Hi"], {}, False),
    ([], {}, False),
])
def test_the_entry_begins_the_voice_only_for_a_speak_that_builds_the_default_card(argv, environ, expected):
    from omni_cli.cli.entry import speaks_default_voice

    assert speaks_default_voice(argv, environ) is expected


# `omni speak` as the entry point runs it, with the sessions' hand-over watched
HANDOVER = r"""
import sys
from omni_cli.backends.piper import ahead
begun, taken = [], []
start, take = ahead.start, ahead.take
ahead.start = lambda *a: begun.append(start(*a)) or begun[-1]
ahead.take = lambda *a: taken.append(take(*a)) or taken[-1]
sys.argv = ["omni", "speak", "Hello.", "-o", "a.wav", "-q"]
from omni_cli.cli.entry import main
try:
    main()
except SystemExit as exit:
    print(exit.code, len(begun), len(taken), begun == taken, file=sys.stderr)
"""


def test_the_sessions_begun_by_the_entry_are_the_ones_the_build_uses(tmp_path):
    env = proc_env(tmp_path)
    env.pop("OMNI_CARD")  # the default card, as a user has it
    done = subprocess.run([sys.executable, "-c", HANDOVER], capture_output=True, text=True, cwd=tmp_path, env=env,
                          timeout=300)
    assert done.stderr.split() == ["0", "1", "1", "True"], done.stderr
    assert (tmp_path / "a.wav").stat().st_size > 44


# a run that ends before its build: exits through `_exit_now`, not waiting for the sessions nothing took (here
# made to take a minute)
EARLY_END = r"""
import sys, time
from omni_cli.backends.piper import ahead
from omni_cli.cli import entry
ahead.make_sessions = lambda num_threads: time.sleep(60)
exit_now = entry._exit_now
entry._exit_now = lambda code: (print("exit now", code, file=sys.stderr), exit_now(code))
sys.argv = ["omni", "speak", *sys.argv[1:]]
entry.main()
"""


@pytest.mark.parametrize(("args", "message"), [
    (["Hello.", "--bogus"], "omni: error: No such option: --bogus"),
    (["Hello.", "-o", "kept.wav"], "omni: error: kept.wav exists; pass --force to overwrite it"),
])
def test_a_speak_that_ends_before_its_build_exits_with_its_status_and_one_line(tmp_path, args, message):
    env = proc_env(tmp_path)
    env.pop("OMNI_CARD")
    (tmp_path / "kept.wav").write_bytes(b"mine")
    done = subprocess.run([sys.executable, "-c", EARLY_END, *args], capture_output=True, text=True, cwd=tmp_path,
                          env=env, timeout=50)
    assert done.returncode == 2
    assert done.stderr.splitlines()[0].startswith(message)
    assert done.stderr.splitlines()[1:] == ["exit now 2"] and done.stdout == ""
    assert (tmp_path / "kept.wav").read_bytes() == b"mine"
