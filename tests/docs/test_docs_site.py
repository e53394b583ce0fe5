"""The documentation cannot drift: the generated references equal what the code says now, the site builds
with MkDocs in strict mode (a broken link, anchor or page fails), and no page speaks of issues or stops."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

import pytest
from doc_blocks import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
import gen_docs  # noqa: E402


@pytest.mark.parametrize("page", sorted(gen_docs.PAGES))
def test_generated_reference_equals_the_committed_page(page):
    made = gen_docs.PAGES[page]()
    committed = (ROOT / page).read_text()
    assert committed == made, f"{page} is out of date: run `{gen_docs.REGENERATE}` and commit it"


def test_the_command_reference_holds_every_command_s_live_help():
    paths = gen_docs.command_paths()
    assert ["speak"] in paths and ["serve"] in paths and ["cards", "show"] in paths
    page = (ROOT / "docs" / "reference" / "cli.md").read_text()
    for path in paths:
        assert f"## {' '.join(['omni', *path])}\n" in page, path


def test_every_command_s_help_ends_with_examples():
    for path, text in gen_docs.help_texts():
        tail = text.rstrip().split("\n\n")[-1]
        examples = [line for line in tail.splitlines()[1:] if line.strip().startswith(("omni ", "printf ", "curl ",
                                                                                          "OMNI_CARD="))]
        assert tail.lstrip().startswith("Examples:") and len(examples) >= 2, f"omni {' '.join(path)}:\n{tail}"
        assert [line for line in text.splitlines() if len(line) > gen_docs.COLUMNS] == [], path


def _mkdocs(config_dir, site_dir):
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f",
                           str(config_dir / "mkdocs.yml"), "-d", str(site_dir)], capture_output=True, text=True,
                          timeout=300)


def test_the_site_builds_strictly(tmp_path):
    done = _mkdocs(ROOT, tmp_path / "site")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "site" / "reference" / "cards" / "index.html").is_file()


def test_a_broken_link_fails_the_build(tmp_path):
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    with open(tmp_path / "docs" / "speaking.md", "a") as page:
        page.write("\nSee [a page that is not there](no-such-page.md).\n")
    done = _mkdocs(tmp_path, tmp_path / "site")
    assert done.returncode != 0 and "no-such-page.md" in done.stderr, done.stderr


def test_no_issue_or_stop_numbers_in_what_users_read():
    texts = {p: p.read_text() for p in [ROOT / "README.md", *(ROOT / "docs").rglob("*.md"), *(ROOT / "cards").glob("*.yaml")]}
    found = {str(p.relative_to(ROOT)): m.group(0) for p, t in texts.items()
             for m in [re.search(r"\b(issue|stop)s? \d+", t, re.I)] if m}
    assert not found, found


def test_the_readme_stays_a_front_door():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 250, len(lines)
    first_screen = "\n".join(lines[:40])  # what it is, which voice, and how to run a real checkpoint
    for needed in ("en_US-joe-medium", "Qwen2.5-Omni", 'omni speak "Hello, world"', "--model-path"):
        assert needed in first_screen, needed


def test_the_readme_s_links_reach_files_of_the_checkout():
    """MkDocs checks the pages' links; the README is not one of its pages, so its links are checked here."""
    text = (ROOT / "README.md").read_text()
    targets = [t for t in re.findall(r"\]\(([^)\s]+)\)", text) if not t.startswith(("http://", "https://"))]
    assert targets, "the README links into docs/"
    missing = [t for t in targets if not (ROOT / t.split("#", 1)[0]).exists()]
    assert not missing, missing
