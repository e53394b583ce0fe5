"""Every command a reader would copy from README.md and docs/ runs: each block marked `doctest` is executed on
the card it names (or the default), in a directory of its page with a home of its own, and must exit 0 and
leave the files it names. Blocks that cannot run here say why (`not-run`)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from doc_blocks import ROOT, RUNNABLE, blocks, pages

ALL = [b for page in pages() for b in blocks(page)]
RUN = [b for b in ALL if b.marker == "doctest"]
PIP = re.compile(r"^pip install [^\n]*?&&\s*", re.M)  # what CI's own install does: the test runs the rest


def test_every_runnable_block_says_whether_a_test_runs_it():
    unmarked = [b.id for b in ALL if b.lang in RUNNABLE and b.marker is None]
    assert not unmarked, f"precede each with <!-- doctest --> or <!-- not-run: why -->: {unmarked}"
    assert all(b.lang in RUNNABLE for b in RUN), [b.id for b in RUN if b.lang not in RUNNABLE]
    assert all(b.options.get("why") for b in ALL if b.marker == "not-run"), "a not-run block says why"


def test_the_readme_first_command_is_run_and_the_test_command_is_ci_s():
    readme = [b for b in ALL if b.page == "README.md"]
    first, second = readme[0], readme[1]
    assert first.code.strip() == 'pip install . && omni speak "Hello, world" -o hello.wav'
    assert first.marker == "doctest" and first.files("creates") == ["hello.wav"]
    test_command = 'pip install torch==2.13.0 -e ".[test,hf,serve,ray]" && python -m pytest'
    assert second.code.strip() == test_command
    assert test_command in (ROOT / ".ci" / "run").read_text().replace("pip install -q ", "pip install ")


@pytest.fixture(scope="module")
def shell(tmp_path_factory):
    """A PATH where `omni` is this checkout's and `aplay` a player that only reads; a home of its own."""
    bin_dir = tmp_path_factory.mktemp("bin")
    (bin_dir / "omni").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m omni_cli.cli "$@"\n')
    (bin_dir / "aplay").write_text("#!/bin/sh\ncat > /dev/null\n")
    for tool in bin_dir.iterdir():
        tool.chmod(0o755)
    home = tmp_path_factory.mktemp("home")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMNI_") and k != "COLUMNS"}
    env.update(HOME=str(home), PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}", PYTHONPATH=str(ROOT),
               OMNI_CLI_CACHE=str(home / "cache"))
    return {"env": env, "dirs": {}, "root": tmp_path_factory.mktemp("pages"), "servers": {}}


@pytest.mark.slow
@pytest.mark.parametrize("block", RUN, ids=[b.id for b in RUN])
def test_doc_block_runs(block, shell):
    where = shell["dirs"].setdefault(block.page, shell["root"] / block.page.replace("/", "_"))
    where.mkdir(exist_ok=True)
    env = dict(shell["env"])
    if block.options.get("card"):
        env["OMNI_CARD"] = block.options["card"]
    code = block.code
    if "serve" in block.options:
        port = serve_port(shell, env)
        code = code.replace("localhost:8000", f"127.0.0.1:{port}").replace("127.0.0.1:8000", f"127.0.0.1:{port}")
    for name in block.files("creates"):
        (where / name).unlink(missing_ok=True)
    if "python" in block.options:
        script = where / f"block_{block.line}.py"
        script.write_text(code)
        argv = [sys.executable, str(script)]
    else:
        argv = ["bash", "-e", "-c", PIP.sub("", code)]
    done = subprocess.run(argv, cwd=where, env=env, capture_output=True, text=True, timeout=600,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, f"{block.id} exited {done.returncode}\n{done.stderr[-3000:]}"
    assert "Traceback" not in done.stderr, done.stderr
    for name in block.files("creates"):
        made = where / name
        assert made.is_file() and made.stat().st_size > 0, f"{block.id}: {name} was not made"
        if made.suffix == ".wav":
            assert made.read_bytes()[:4] == b"RIFF", f"{block.id}: {name} is not a WAV"
    for text in block.files("stdout", sep="|"):
        assert text in done.stdout, f"{block.id}: {text!r} not in stdout:\n{done.stdout}"


def serve_port(shell, env) -> int:
    """`omni serve` on the block's card (once per card), on a free port; its address from its first line."""
    card = env.get("OMNI_CARD", "")
    if card not in shell["servers"]:
        proc = subprocess.Popen([sys.executable, "-m", "omni_cli.cli", "serve", "--port", "0", "--no-warm-up"],
                                env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, cwd=ROOT)

        def stop():
            proc.terminate()
            proc.wait(30)
            proc.stderr.close()

        shell.setdefault("stops", []).append(stop)  # stopped when the module's tests are done
        line = proc.stderr.readline()
        found = re.search(r"on http://127\.0\.0\.1:(\d+) ", line)
        assert found, f"omni serve did not start: {line}{proc.stderr.read() if proc.poll() is not None else ''}"
        shell["servers"][card] = int(found.group(1))
    return shell["servers"][card]


@pytest.fixture(scope="module", autouse=True)
def _stop_servers(shell):
    yield
    for stop in shell.get("stops", []):
        stop()
