"""The command line is the edge: kernelbot.cli imports the rest of kernelbot, and nothing else in kernelbot
imports kernelbot.cli (the work a command does lives in the packages it calls, so a stage, a scan or a test
reuses it without a command in between). Read from the sources with `ast`, deferred imports included."""

from __future__ import annotations

from pathlib import Path

from import_graph import describe_edge, import_edges

CLI = "kernelbot.cli"


def _in_cli(module: str) -> bool:
    return module == CLI or module.startswith(CLI + ".")


def cli_importers(root: Path | None = None) -> list[str]:
    edges = import_edges() if root is None else import_edges(root, ("kernelbot",))
    return [describe_edge(e) for e in edges if _in_cli(e.target) and not _in_cli(e.source)]


def test_nothing_outside_the_cli_imports_it() -> None:
    found = cli_importers()
    assert not found, (
        "modules outside kernelbot.cli that import it (call the library instead):\n" + "\n".join(found)
    )


def test_one_cli_package_with_one_module_per_verb() -> None:
    from kernelbot.cli import app

    root = Path(__file__).resolve().parents[2] / "kernelbot"
    assert not (root / "commands").exists()
    where = {c.name: c.callback.__module__ for c in app.registered_commands if c.callback is not None}
    assert len(where) >= 10 and "evolve" in where
    for verb, module in where.items():
        assert module == f"{CLI}.{verb.replace('-', '_')}", f"`kernelbot {verb}` is defined in {module}"
    assert len(set(where.values())) == len(where)


def test_a_deferred_import_of_the_cli_is_found(tmp_path: Path) -> None:
    files = {
        "kernelbot/__init__.py": "",
        "kernelbot/cli/__init__.py": "from kernelbot.target import stage\n",
        "kernelbot/cli/evolve.py": "from kernelbot import target\n",
        "kernelbot/target.py": "def stage():\n    from kernelbot.cli import evolve\n    return evolve\n",
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    assert cli_importers(tmp_path) == [
        "kernelbot.target imports kernelbot.cli.evolve (kernelbot/target.py:2)"
    ]
