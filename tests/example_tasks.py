"""The bundled example's silu_and_mul task copied with other [[cases]], for tests about how cases of several
dtypes are treated (which one is traced, which get hidden cases)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "tasks" / "silu_and_mul"

# bfloat16 at one and 64 tokens, float16 at one token only: the smallest case is bfloat16's.
ONE_TOKEN_FP16 = """
[[cases]]
name = "t1_bf16"
tokens = 1
d = 32
dtype = "bfloat16"

[[cases]]
name = "t1_fp16"
tokens = 1
d = 32
dtype = "float16"

[[cases]]
name = "t64_bf16"
tokens = 64
d = 32
dtype = "bfloat16"
"""


def silu_and_mul_with_cases(root: Path, cases: str = ONE_TOKEN_FP16) -> Path:
    """root/silu_and_mul: the example task (no candidates/) with `cases` in place of its own."""
    task_dir = root / "silu_and_mul"
    shutil.copytree(EXAMPLE, task_dir, ignore=shutil.ignore_patterns("candidates"))
    toml = (task_dir / "task.toml").read_text()
    (task_dir / "task.toml").write_text(re.split(r"\n\[\[cases\]\]", toml, maxsplit=1)[0] + cases)
    return task_dir


# The example's two smallest cases, one per dtype: the interpreter judges a candidate on them in about two
# seconds, where the example's own runnable cases take three to four.
SMALL_CASES = ("t1_d2048_bf16", "t16_d1792_fp32")


def silu_and_mul_small(root: Path, names: tuple[str, ...] = SMALL_CASES) -> Path:
    """root/silu_and_mul: the example task, candidates/ included, with only its own [[cases]] named in
    `names` (for tests of the search and the pools around the evaluator, where the case sizes do not
    matter)."""
    task_dir = root / "silu_and_mul"
    shutil.copytree(EXAMPLE, task_dir)
    head, *blocks = re.split(r"\n(?=\[\[cases\]\]\n)", (task_dir / "task.toml").read_text())
    kept = [b for b in blocks if re.search(r'^name = "(.*)"$', b, re.M).group(1) in names]  # type: ignore[union-attr]
    assert len(kept) == len(names), names
    (task_dir / "task.toml").write_text("\n".join([head, *kept]))
    return task_dir
