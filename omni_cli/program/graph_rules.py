"""Rules a program graph must meet beyond its wiring: slot kinds that name whose value they carry, and
exactly the outputs a speech request needs.

Without them, `talker_to_vocoder` reading the thinker's tokens would pass validation (both are "the tokens
an ar_decode loop publishes") and make garbage audio; two `emit_audio` nodes would write every chunk twice;
a program with no `emit_audio` would "speak" 0 s with exit 0. A slot kind may name the role whose value it
holds (`ar_stream@thinker`): a loop's slots are qualified with its component's role, ops that care
say which role they read, and a kind without a role matches any (a new op or loop kind need not know
the roles). A request's audio comes out of exactly one `emit_audio`, its text out of at most one
`emit_text`.
"""

from __future__ import annotations

from ..spec import ProgramSpec
from ..spec.errors import IssueList

# op -> (fewest, most) nodes a program has of it
EMITTERS = {"emit_audio": (1, 1), "emit_text": (0, 1)}


def kinds_match(have: str, wanted: str) -> bool:
    have_base, _, have_role = have.partition("@")
    wanted_base, _, wanted_role = wanted.partition("@")
    return have_base == wanted_base and (not have_role or not wanted_role or have_role == wanted_role)


def with_role(kind: str | None, role: str) -> str | None:
    """A loop's slot kind, qualified with the role of the component it drives."""
    return None if kind is None or "@" in kind else f"{kind}@{role}"


def describe(kind: str, names: dict[str, str]) -> str:
    base, _, role = kind.partition("@")
    return names.get(base, base) + (f" (the {role}'s)" if role else "")


def check_emitters(program: ProgramSpec, issues: IssueList) -> None:
    """Exactly one `emit_audio`, at most one `emit_text`: every chunk written once, and some audio at all."""
    for op, (fewest, most) in EMITTERS.items():
        found = [node.index for node in program.nodes if node.op == op]
        if len(found) > most:
            key = f"nodes.{found[most]}"
            issues.add(program.line(key), key, f"a second {op!r} node: a program has at most {most} "
                                               f"(each would {'write every chunk' if op == 'emit_audio' else 'print'} again)")
        elif len(found) < fewest and not program.was_dropped("nodes"):  # a node left out may have been the one
            issues.add(program.line("nodes"), "nodes", f"no {op!r} node: a speech request's audio comes out of one")
