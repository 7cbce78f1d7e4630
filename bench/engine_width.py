"""The line length a task's engine formats its code at: what `kernelbot target` writes a search's code at.

A task extracted from a release names it (`[source] commit = "lmdeploy==0.18.0"`, path `lmdeploy/...`);
the engine's shipped profile gives its formatter's width (SGLang 88, LMDeploy 120, the bundled example 110).
A task of no known engine gets the search's own default.
"""

from __future__ import annotations

from pathlib import Path


def engine_of(task_dir: Path) -> str | None:
    """The shipped engine profile whose package a task was extracted from (by the release its source
    names, else the first folder of its path that is one: `python/sglang/...` in SGLang's git layout), or
    None."""
    from evaluators.task import load_task
    from kernelbot.engines.loader import SHIPPED, load_profile

    source = load_task(task_dir).source
    release, pinned, _ = (source.commit or "").partition("==")
    names = [release] if pinned else []
    names += list(Path(source.path or "").parts[:-1])
    packages = {load_profile(name).package: name for name in SHIPPED}
    return next((packages[name] for name in names if name in packages), None)


def engine_line_length(task_dir: Path) -> int:
    from evolution.config import MutationConfig
    from kernelbot.engines.loader import load_profile

    engine = engine_of(task_dir)
    return MutationConfig().line_length if engine is None else load_profile(engine).formatter.line_length


def search_config(work: Path, name: str, task_dir: Path, base: str, line_length: str = "engine") -> Path:
    """WORK/search_<name>.toml for one task's `kernelbot evolve --config`: `base` (a bench's own settings)
    and the fusion generator's width: the task's engine's (`engine`, what `kernelbot target` does, so the
    winner is the code integrate ships) or the number given."""
    width = engine_line_length(task_dir) if line_length == "engine" else int(line_length)
    path = work / f"search_{name}.toml"
    path.write_text(f"{base}[mutation]\nline_length = {width}\n")
    return path
