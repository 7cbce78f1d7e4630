"""The module `kernelbot integrate` would write for each search winner, checked against the readable-output
rules CI applies to the fusion generator (kernelbot/integrate/readability.py; the module and its line
budget from bench/shipped_module.py), and the triples bench/readable_parity.py times on a GPU.

    PYTHONPATH=. python bench/readable_modules.py WORK OUT [--line-length N] [--regenerate] [--ptx]

WORK holds tasks/<name>/ and runs/<name>/best.py (bench/claim_coverage.py and bench/llm_free_acceptance.py
leave them under their work folder). Per winner: OUT/<name>.py (the module, laid out by ruff at the
task's engine's line length unless `--line-length` gives one), its line count against the budget (1.5x the
engine's own kernel for the op where one exists, else 200), and every rule it breaks. `--regenerate` first
writes each fusion winner again from its knobs at that line length (a crossover's child is left as the
search wrote it: its parents' knobs alone do not say where it routes); `--ptx` compiles module and winner
for sm_90 (no GPU needed) and compares their PTX, case by case (where it differs, whether it holds the
same instructions, in another order).
OUT/triples.txt lists `TASK=RAW=MODULE:ENTRY` per winner for `bench/readable_parity.py`;
OUT/readable_modules.md is the table (also printed). Runs on a CPU.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from bench.engine_width import engine_line_length
from bench.shipped_module import (
    OWN_KERNELS,
    gpu_launches,
    line_budget,
    own_kernel_lines,
    shipped_entry,
    shipped_module,
)
from kernelbot.integrate.readability import readability_problems

CONSTANT = re.compile(r"^([A-Z][A-Z0-9_]*) = ([^\n#]*?)\s*(?:#.*)?$", re.M)  # a module-level constant


def _own_kernel_lines(name: str) -> int | str | None:
    """The lines of the engine's own kernel for `name`'s op; None where it has none; the reason where its
    release cannot be read (no registry and not in KERNELBOT_CACHE): the budget is then unknown, which the
    table reports as a broken rule rather than passing it unchecked."""
    from extractors.errors import ExtractionError

    try:
        return own_kernel_lines(name)
    except ExtractionError as error:
        return f"{OWN_KERNELS[name][0]}: {error}"


def _regenerated(task_dir: Path, source: str, line_length: int) -> str:
    """The fusion winner `source` written again from its knobs at `line_length`: what `kernelbot target`,
    which searches at the engine's line length, would have put in the module (same kernel, laid out for
    the engine). A winner the fusion writer did not write, or a crossover of several of its programs,
    stays as it is."""
    import asyncio

    from evaluators.task import load_task
    from evolution.writers.fusion.knobs import HEADER, parse
    from evolution.writers.fusion.writer import FusionWriter

    knobs = parse(source)
    if knobs is None or source.count(HEADER) > 1:
        return source
    task = load_task(task_dir)
    writer = FusionWriter(line_length=line_length)
    report = asyncio.run(writer.report(task))
    written = asyncio.run(writer.write(task, report, knobs)).source
    # Launch tuning changes the module's constants (BLOCK, WARPS_SCALE) without touching the knobs line:
    # the winner's values, not the knobs' defaults.
    for match in CONSTANT.finditer(source):
        written = with_constant(written, match.group(1), match.group(2))
    return written


def with_constant(source: str, name: str, value: str) -> str:
    """`source` with its first module-level `name = ...` set to `value`, a comment on the line kept as it
    was (`BLOCK = 2048  # elements per program`)."""
    value_only = rf"^{name} = [^\n#]*?(?=\s*(#|$))"
    return re.sub(value_only, f"{name} = {value}", source, count=1, flags=re.M)


def _same_instructions(task_dir: Path, raw: Path, module: Path, entry: str) -> str:
    """Whether the module launches the winner's kernels with the winner's PTX on every case of the task
    (both compiled for sm_90 here, bench/cuda_compile_check.py): a routed winner runs another
    kernel on each side of a size test."""
    from evaluators.task import load_task

    task = load_task(task_dir)
    launches = 0
    reordered: list[str] = []
    differ: list[str] = []
    for k, case in enumerate(task.cases):
        module_launches, raw_launches = gpu_launches(
            [(task_dir, module, entry), (task_dir, raw, task.entry)], case=k
        )
        launches += len(raw_launches)
        if [c["ptx"] for c in module_launches] != [c["ptx"] for c in raw_launches]:
            same = [c["instructions"] for c in module_launches] == [c["instructions"] for c in raw_launches]
            (reordered if same else differ).append(case.name)
    if differ:
        return f"no ({', '.join(differ)})"
    if reordered:
        return f"the same instructions in another order on {', '.join(reordered)}; else yes"
    return f"yes ({launches} launches, {len(task.cases)} cases)"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("work", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument(
        "--line-length",
        type=int,
        default=None,
        help="default: each task's engine's (SGLang 88, LMDeploy 120; bench/engine_width.py)",
    )
    parser.add_argument(
        "--regenerate",
        action="store_true",
        help="write each fusion winner again from its knobs at --line-length (a search run by `kernelbot "
        "evolve` writes at 110 columns; `kernelbot target` at the engine's)",
    )
    parser.add_argument(
        "--ptx", action="store_true", help="compile the module and the winner for sm_90 and compare their PTX"
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    options = build_parser().parse_args(argv)
    options.out.mkdir(parents=True, exist_ok=True)
    rows = [
        "| winner | knobs | lines | budget | rules broken | same PTX as the winner |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    triples = []
    broken = 0
    for best in sorted(options.work.glob("runs/*/best.py")):
        name = best.parent.name
        task_dir = options.work / "tasks" / name
        source = best.read_text()
        width = options.line_length or engine_line_length(task_dir)
        if options.regenerate:
            source = _regenerated(task_dir, source, width)
        module = shipped_module(task_dir, source, width)
        path = options.out / f"{name}.py"
        path.write_text(module)
        own_lines = _own_kernel_lines(name)
        lines = len(module.splitlines())
        if isinstance(own_lines, str):
            budget: int | str = "unknown"
            problems = readability_problems(module, limit=width)
            problems.append(f"the line budget is unknown: the engine's own kernel was not read ({own_lines})")
        else:
            # The op's budget is the module's length rule (the engine's kernel for it may be longer
            # than the bound a module without one is held to).
            budget = line_budget(own_lines)
            problems = readability_problems(module, limit=width, max_lines=budget)
        broken += bool(problems)
        header = [line for line in source.splitlines() if "fusion-knobs" in line]
        knobs = header[0].split(":", 1)[1].strip() if header else ""
        entry = shipped_entry(task_dir)
        same = _same_instructions(task_dir, best, path, entry) if options.ptx else "not checked"
        rows.append(f"| {name} | `{knobs}` | {lines} | {budget} | {'; '.join(problems) or 'none'} | {same} |")
        triples.append(f"{task_dir}={best}={path}:{entry}")
    (options.out / "triples.txt").write_text("\n".join(triples) + "\n")
    table = "\n".join(rows) + "\n"
    (options.out / "readable_modules.md").write_text(table)
    print(table)
    return 1 if broken or not triples else 0


if __name__ == "__main__":
    sys.exit(main())
