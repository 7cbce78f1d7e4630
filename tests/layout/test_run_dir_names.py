"""The run directory of `kernelbot target` has one owner: kernelbot/target/run_dir.py names its files and
reads and writes them; no other module of kernelbot spells one of those names (it asks run_dir for the path
or the record instead)."""

from __future__ import annotations

import ast
from pathlib import Path

from kernelbot.target import run_dir

REPO = Path(__file__).resolve().parents[2]
OWNER = REPO / "kernelbot" / "target" / "run_dir.py"
# The names only the run directory has; "task", "search", "pr" or "verify" are words too common to police.
NAMES = frozenset(
    {
        run_dir.STATE_FILE,
        run_dir.SEARCH_CONFIG,
        run_dir.CONFIRM_FILE,
        run_dir.VERIFY_FILE,
        run_dir.WORKTREE_DIR,
        run_dir.SCRATCH_DIR,
        run_dir.PATCH_FILE,
        run_dir.BODY_FILE,
        run_dir.EVIDENCE_FILE,
        run_dir.REPRODUCE_FILE,
    }
)


def spelled_names(source: str, names: frozenset[str]) -> list[tuple[int, str]]:
    """(line, name) for each string constant that is one of `names` or a path ending in one ("pr/body.md");
    docstrings and words inside a sentence are not names."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            last = node.value.rsplit("/", 1)[-1]
            if last in names and " " not in node.value:
                found.append((node.lineno, node.value))
    return found


def test_only_run_dir_spells_the_run_directory_names() -> None:
    offenders = []
    for path in sorted((REPO / "kernelbot").rglob("*.py")):
        if path == OWNER:
            continue
        for line, name in spelled_names(path.read_text(), NAMES):
            offenders.append(f"{path.relative_to(REPO)}:{line}: {name!r}")
    assert not offenders, "ask kernelbot.target.run_dir for these paths:\n" + "\n".join(offenders)


def test_the_check_finds_a_spelled_name() -> None:
    source = 'VERIFY = "verify.json"\nbody = run / "pr/body.md"\nsaid = "verify.json is missing"\n'
    assert spelled_names(source, NAMES) == [(1, "verify.json"), (2, "pr/body.md")]
    assert spelled_names(OWNER.read_text(), NAMES)  # the owner does spell them
