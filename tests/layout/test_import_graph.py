"""kernelbot's packages import each other without cycles and only downwards (ARCHITECTURE.md's layering):
evaluators imports none of the other three; extractors and evolution import evaluators, never kernelbot or
each other. Deferred imports inside functions count (tests/layout/import_graph.py says why)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from import_graph import (
    REPO,
    cycles,
    describe_cycle,
    describe_edge,
    import_edges,
    layering_violations,
)


def test_no_import_cycle_among_the_packages() -> None:
    found = [describe_cycle(path) for path in cycles(import_edges())]
    assert not found, "import cycles (break them: shared types in their own module):\n" + "\n".join(found)


def test_packages_import_only_downwards() -> None:
    found = [describe_edge(edge) for edge in layering_violations(import_edges())]
    assert not found, "imports against the layering:\n" + "\n".join(found)


def test_the_graph_is_read_from_the_real_sources() -> None:
    edges = {(e.source, e.target) for e in import_edges()}
    # A module-level import, a deferred one inside a function, and a relative one each make an edge.
    assert ("evolution.ray_executor", "evolution.dispatch") in edges
    assert ("evolution.executors", "evolution.ray_executor") in edges  # inside make_executor
    assert ("evolution.executors", "evolution.dispatch") in edges
    importers = {source.split(".")[0] for source, _ in edges}
    assert importers == {"evaluators", "extractors", "evolution", "kernelbot"}


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def test_a_deferred_cycle_and_an_upward_import_are_found(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "evaluators/__init__.py": "",
            "evaluators/base.py": "from kernelbot import cli\n",  # upward
            "evolution/__init__.py": "",
            "evolution/a.py": "from .b import thing\n",  # relative, module level
            "evolution/b.py": "def thing():\n    from evolution import a\n    return a\n",  # deferred
            "evolution/c.py": "import os\nimport evaluators.base\n",  # allowed, and stdlib is ignored
            "kernelbot/__init__.py": "",
            "kernelbot/cli.py": "from evolution.a import thing\n",
        },
    )
    edges = import_edges(tmp_path, ("evaluators", "evolution", "kernelbot"))
    [path] = cycles(edges)
    assert describe_cycle(path) == (
        "evolution.a (evolution/a.py:1) -> evolution.b (evolution/b.py:2) -> evolution.a"
    )
    assert [describe_edge(e) for e in layering_violations(edges)] == [
        "evaluators.base imports kernelbot.cli (evaluators/base.py:1)"
    ]


def test_the_check_runs_as_a_script() -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "tests" / "layout" / "import_graph.py")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 problem(s)" in done.stdout
