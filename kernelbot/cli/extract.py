"""`kernelbot extract --repo R --function F`: write a Task for one function and say what was done to it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer
from rich.markup import escape

from kernelbot.cli.application import command
from kernelbot.console import console, warn

if TYPE_CHECKING:
    from extractors.extract import ExtractionSummary  # imported when a command runs (the CLI starts fast)

# --regime of the commands that write a task (extract, capture)
REGIME_HELP = "graph (CUDA graph) | wall (eager). Default: graph, or wall when an input stays on the CPU."


@command("extract")
def extract_command(
    repo: Annotated[Path, typer.Option(help="Repository (a git checkout or an unpacked release).")],
    function: Annotated[
        str, typer.Option(help="package.module:Qualname, path/to/file.py:Qualname, or a unique Qualname.")
    ],
    out: Annotated[
        Optional[Path], typer.Option(help="Task directory to write (default tasks/<name>).")  # noqa: UP045
    ] = None,
    spec: Annotated[Optional[Path], typer.Option(help="TOML input spec with symbolic sizes.")] = None,  # noqa: UP045
    regime: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(help=REGIME_HELP),
    ] = None,
    name: Annotated[Optional[str], typer.Option(help="Task name (default: the entry name).")] = None,  # noqa: UP045
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing task at --out.")] = False,
    no_probe: Annotated[bool, typer.Option("--no-probe", help="Skip the test run.")] = False,
) -> int:
    """Extract FUNCTION from REPO into a self-contained Task (reference.py, inputs.py, task.toml)."""
    return run(repo, function, out=out, spec=spec, regime=regime, name=name, force=force, probe=not no_probe)


def run(
    repo: Path,
    function: str,
    *,
    out: Path | None = None,
    spec: Path | None = None,
    regime: str | None = None,
    name: str | None = None,
    force: bool = False,
    probe: bool = True,
) -> int:
    from extractors.extract import ExtractOptions, extract

    options = ExtractOptions(
        repo=repo,
        function=function,
        out=out,
        spec=spec,
        regime=regime,
        name=name,
        force=force,
        probe=probe,
        progress=lambda message: console.print(f"  {message}", markup=False, style="dim"),
    )
    summary = extract(options)
    print_summary(summary)
    return 0


def print_summary(summary: ExtractionSummary) -> None:
    built = summary.built
    report = built.report
    console.print(
        f"[bold]wrote[/] {escape(str(summary.task_dir))}  (entry {summary.entry}, from {summary.target} "
        f"@ {summary.commit})"
    )
    _section("closed over", report.closed_over)
    _section("kept imports", report.imports)
    _section("decorators", report.decorators)
    _section("notes", report.notes)
    if built.attribute_params:
        pairs = [f"self.{a} -> {p}" for a, p in built.attribute_params.items()]
        _section("self attributes became parameters", pairs)
    if built.outputs and built.outputs != ["return"]:
        _section("outputs (in return order)", built.outputs)
    for stub in report.stubs:
        warn(escape(f"not closed over (a stub raises if reached): {stub}"))
    if summary.inplace:
        _section("writes in place (static)", [f"{k}: {'; '.join(v)}" for k, v in summary.inplace.items()])
    probe = summary.probe
    if probe is not None and probe.ran:
        observed = ", ".join(probe.mutated) or "none"
        console.print(f"  ran the reference on case {probe.case!r}: writes observed: {observed}")
        missed = sorted(set(probe.mutated) - set(summary.inplace))
        if missed:
            warn(escape(f"writes seen at run time but not found statically: {', '.join(missed)}"))
        _section("outputs", probe.outputs)
    elif probe is not None:
        warn(escape(f"the reference does not run on the {summary.inputs_source} inputs: {probe.error}"))
    console.print(f"  inputs: {summary.inputs_source}")
    if summary.inputs_source == "capture":
        _section("recorded calls", summary.input_notes)
    if summary.inputs_source == "draft":
        draft = summary.draft
        warn(
            escape(
                f"inputs.py is a DRAFT made to run ({draft.get('attempts', 0)} trial(s), serving shapes "
                f"of {draft.get('model', '?')} from the {draft.get('profile', '?')} profile); review it, or "
                "edit draft_spec.toml and re-run with --spec:"
            )
        )
        _section("inferred", summary.input_notes)
        _section("cases", draft.get("cases", []))
        _section("repairs", draft.get("repairs", []))
        _section("switches not kept", draft.get("dropped", []))
    for rule in summary.unordered:
        values = f" with {', '.join(rule.values)} following" if rule.values else ""
        console.print(f"  compared unordered: rows of {rule.key}{values} ({rule.why})", markup=False)
    if summary.kept:
        console.print(f"  {summary.kept}", markup=False)


def _section(title: str, items: list[str]) -> None:
    if not items:
        return
    console.print(f"  {title}:")
    for item in items:
        console.print(f"    - {item}", markup=False)
