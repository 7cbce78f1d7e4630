"""Write the fusion generator's kernel for every knob set of a grid, one file each, for a sweep against
torch.compile (`bench/run.sh vs-compile COMPILE_ONLY=1 KEEP_INDUCTOR=1 PAIRS="TASK=DIR/*.py"`): which
structure wins on which case, beside what Inductor generated and autotuned for the same cases.

    PYTHONPATH=. python bench/probes/fusion_knob_grid.py TASK_DIR OUT_DIR block=256,1024,2048 num_warps=2,4,8

Each NAME=V1,V2,... is a knob of evolution/writers/fusion/knobs.py and its values; the grid is their
product. A knob set the generator has no kernel for is reported and skipped. Files are named after the
knobs that differ from the defaults (`block-256_num_warps-4.py`; the default set is `default.py`).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import sys
from dataclasses import fields
from pathlib import Path

from evaluators.task import load_task
from evolution.writers.fusion.generate import GenerationError
from evolution.writers.fusion.knobs import Knobs
from evolution.writers.fusion.writer import FusionWriter


def _value(name: str, text: str) -> object:
    kind = {f.name: f.type for f in fields(Knobs)}.get(name)
    if kind is None:
        raise SystemExit(f"error: no knob {name!r} (knobs: {', '.join(f.name for f in fields(Knobs))})")
    if kind in ("int", int):
        return int(text)
    if kind in ("float", float):
        return float(text)
    if kind in ("bool", bool):
        return text.lower() in ("1", "true", "on", "yes")
    return text


def grid(axes: list[str]) -> list[Knobs]:
    names, values = [], []
    for axis in axes:
        name, _, listed = axis.partition("=")
        names.append(name)
        values.append([_value(name, v) for v in listed.split(",") if v])
    return [Knobs(**dict(zip(names, combo, strict=True))) for combo in itertools.product(*values)]


def file_stem(knobs: Knobs) -> str:
    default = Knobs()
    changed = [f"{f.name}-{getattr(knobs, f.name)}" for f in fields(knobs) if getattr(knobs, f.name) !=
               getattr(default, f.name)]  # fmt: skip
    return "_".join(changed) or "default"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("axes", nargs="+", metavar="NAME=V1,V2")
    options = parser.parse_args(argv)
    task = load_task(options.task)
    writer = FusionWriter()
    report = asyncio.run(writer.report(task))
    if report.error:
        raise SystemExit(f"error: {task.name}: {report.error}")
    options.out.mkdir(parents=True, exist_ok=True)
    written = 0
    for knobs in grid(options.axes):
        try:
            generated = asyncio.run(writer.write(task, report, knobs))
        except GenerationError as exc:
            print(f"{file_stem(knobs)}: no kernel ({exc})", file=sys.stderr)
            continue
        (options.out / f"{file_stem(knobs)}.py").write_text(generated.source)
        written += 1
    print(f"{written} kernels in {options.out}")
    return 0 if written else 1


if __name__ == "__main__":
    sys.exit(main())
