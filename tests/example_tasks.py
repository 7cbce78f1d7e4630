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
