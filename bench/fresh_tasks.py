"""Extract the seven functions of the LLM-free acceptance fresh from their pip releases into task directories.

    PYTHONPATH=. python bench/fresh_tasks.py OUT_DIR [--specs bench/specs] [--only NAME[,NAME...]]
    PYTHONPATH=. python bench/fresh_tasks.py --pack-sources SOURCES.tar.xz

Each task is what `kernelbot extract --repo pypi:<release> --function <target> --spec <spec>
--regime <regime>` writes: reference.py, inputs.py, task.toml and no candidates/, so a search starts from
nothing but the reference. bench/specs/ holds the serving shapes (hidden 4096/7168, DeepSeek-V3's router,
Llama/Qwen rotary, decode batches 1..256, prefill token counts); tests/evolution/specs/ holds the same tasks
shrunk for CPU CI. OUT_DIR/fresh_tasks.json says, per task, whether it was extracted and why not.

Releases come from the source cache ($KERNELBOT_CACHE/sources, see extractors.release_sources): the first
use downloads them. A machine that cannot reach the registry (the GPU host) gets them from an archive made
here with --pack-sources and unpacked into $KERNELBOT_CACHE/sources (bench/llm_free_acceptance.sh does).
"""

from __future__ import annotations

import argparse
import json
import sys
import tarfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

SPECS = Path(__file__).resolve().parent / "specs"


@dataclass(frozen=True)
class FreshTask:
    name: str  # the task directory's name, also its spec's stem
    release: str
    target: str  # package.module:Qualname
    regime: str = "graph"


FRESH_TASKS = (
    FreshTask(
        "sglang_decode_metadata",
        "sglang==0.5.9",
        "sglang.srt.layers.attention.flashattention_backend:normal_decode_set_metadata",
        regime="wall",  # runs eagerly before each decode graph replay
    ),
    FreshTask(
        "sglang_rmsnorm_residual", "sglang==0.5.23", "sglang.srt.layers.layernorm:RMSNorm.forward_native"
    ),
    FreshTask(
        "sglang_silu_and_mul", "sglang==0.5.23", "sglang.srt.layers.activation:SiluAndMul.forward_native"
    ),
    FreshTask(
        "sglang_biased_grouped_topk", "sglang==0.5.23", "sglang.srt.layers.moe.topk:biased_grouped_topk_impl"
    ),
    FreshTask(
        "lmdeploy_softmax_topk",
        "lmdeploy==0.18.0",
        "lmdeploy.pytorch.backends.default.moe:DefaultSoftmaxTopKImpl.forward",
    ),
    FreshTask(
        "lmdeploy_rmsnorm_residual",
        "lmdeploy==0.18.0",
        "lmdeploy.pytorch.backends.default.norm:DefaultRMSNormImpl.forward",
    ),
    FreshTask(
        "lmdeploy_apply_rotary",
        "lmdeploy==0.18.0",
        "lmdeploy.pytorch.backends.default.apply_rotary_emb:DefaultApplyRotaryEmbImpl.forward",
    ),
)


def releases(tasks: tuple[FreshTask, ...] = FRESH_TASKS) -> list[str]:
    return sorted({t.release for t in tasks})


def extract_fresh(task: FreshTask, out: Path, specs: Path = SPECS, device: str = "cpu") -> dict[str, Any]:
    """Extract `task` into out/<name> (replacing what is there), its reference probed on `device`; a
    JSON-ready record of how it went."""
    from extractors.extract import ExtractOptions, extract
    from extractors.release_sources import fetch_release

    record: dict[str, Any] = {**asdict(task), "task_dir": str(out / task.name), "spec": str(specs)}
    started = time.monotonic()
    try:
        repo = fetch_release(task.release)
        summary = extract(
            ExtractOptions(
                repo,
                task.target,
                out=out / task.name,
                spec=specs / f"{task.name}.toml",
                regime=task.regime,
                name=task.name,
                force=True,
                device=device,
            )
        )
    except Exception as exc:  # one task's failure is reported, the others still get extracted
        record.update(ok=False, error=f"{type(exc).__name__}: {exc}")
    else:
        probe = summary.probe
        record.update(
            ok=bool(probe is None or (probe.ran and not probe.degenerate)),
            entry=summary.entry,
            probe=None
            if probe is None
            else {"ran": probe.ran, "error": probe.error, "degenerate": probe.degenerate},
            inplace=sorted(summary.inplace),
        )
    record["seconds"] = round(time.monotonic() - started, 1)
    return record


def pack_sources(archive: Path, tasks: tuple[FreshTask, ...] = FRESH_TASKS) -> list[str]:
    """Write the unpacked sources of the tasks' releases (Python files only) to a .tar.xz archive whose
    members unpack into a source cache; returns the releases packed."""
    from extractors.release_sources import cache_dir, fetch_release

    cache = cache_dir()
    packed = []
    archive.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive, "w:xz") as tar:
        for release in releases(tasks):
            root = fetch_release(release)
            for path in sorted(root.rglob("*")):
                if path.is_file() and (path.suffix == ".py" or path.name.startswith(".kernelbot")):
                    tar.add(path, arcname=str(path.relative_to(cache)))
            packed.append(release)
    return packed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench/fresh_tasks.py", description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", type=Path, help="directory to write the task directories into")
    parser.add_argument("--specs", type=Path, default=SPECS, help="directory of <task name>.toml input specs")
    parser.add_argument("--only", default="", metavar="NAME[,NAME...]", help="extract only these tasks")
    parser.add_argument("--device", default="cpu", help="where the reference is probed (cpu, cuda)")
    parser.add_argument("--pack-sources", type=Path, metavar="ARCHIVE", help="pack the releases' sources")
    args = parser.parse_args(argv)
    if args.pack_sources is not None:
        print("packed: " + ", ".join(pack_sources(args.pack_sources)))
        return 0
    if args.out is None:
        parser.error("give OUT_DIR (or --pack-sources ARCHIVE)")
    wanted = {n.strip() for n in args.only.split(",") if n.strip()}
    unknown = wanted - {t.name for t in FRESH_TASKS}
    if unknown:
        parser.error(f"--only: unknown task(s) {sorted(unknown)} (known: {[t.name for t in FRESH_TASKS]})")
    args.out.mkdir(parents=True, exist_ok=True)
    records = []
    for task in FRESH_TASKS:
        if wanted and task.name not in wanted:
            continue
        record = extract_fresh(task, args.out, args.specs, args.device)
        records.append(record)
        status = "ok" if record["ok"] else f"FAILED: {record.get('error', 'the reference did not run')}"
        print(f"{task.name}: {status} ({record['seconds']} s)", flush=True)
    (args.out / "fresh_tasks.json").write_text(json.dumps(records, indent=2))
    return 0 if all(r["ok"] for r in records) else 1


if __name__ == "__main__":
    sys.exit(main())
