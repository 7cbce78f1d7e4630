"""The seven engine functions of the LLM-free acceptance, as the fusion generator's CPU test and its GPU smoke
run extract them: release, target, regime, spec name, and the comparison rules their outputs need.

The comparison rules are part of a top-k's contract that `kernelbot extract` does not write yet:
- `torch.topk(..., sorted=False)` (SGLang's biased_grouped_topk_impl) leaves the order of the chosen experts
  to the implementation (CPU and CUDA differ), so the rows of the ids are compared as sets, the weights
  following their ids; near-ties at the selection boundary may pick either expert (0.1 % of ids);
- a softmax of bfloat16 logits has exact ties (equal logits), and which of two equal experts comes first is
  again the implementation's (torch's own CPU and CUDA orders differ): the rows of ids are compared as sets
  too, and up to 10 % may differ where the 8th and 9th experts tie; the weights still follow their ids, so a
  wrong selection fails. (With one token a single boundary tie is 25 % of the ids: the CPU test's spec
  draws float32 logits, which do not tie.)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

UNORDERED_TOPK = """
[compare]
mismatch_fraction = 0.001

[[compare.unordered]]
key = "return[1]"
values = ["return[0]"]
"""
BF16_TIES = """
[compare]
mismatch_fraction = 0.1

[[compare.unordered]]
key = "return[1]"
values = ["return[0]"]
"""


@dataclass(frozen=True)
class Target:
    name: str  # the task directory's name and its spec's stem
    release: str
    function: str  # package.module:Qualname
    regime: str = "graph"
    compare: str = ""  # a [compare] table the task needs (see the module docstring)


TARGETS = (
    Target(
        "sglang_decode_metadata",
        "sglang==0.5.9",
        "sglang.srt.layers.attention.flashattention_backend:normal_decode_set_metadata",
        regime="wall",
    ),
    Target("sglang_rmsnorm_residual", "sglang==0.5.23", "sglang.srt.layers.layernorm:RMSNorm.forward_native"),
    Target("sglang_silu_and_mul", "sglang==0.5.23", "sglang.srt.layers.activation:SiluAndMul.forward_native"),
    Target(
        "sglang_biased_grouped_topk",
        "sglang==0.5.23",
        "sglang.srt.layers.moe.topk:biased_grouped_topk_impl",
        compare=UNORDERED_TOPK,
    ),
    Target(
        "lmdeploy_softmax_topk",
        "lmdeploy==0.18.0",
        "lmdeploy.pytorch.backends.default.moe:DefaultSoftmaxTopKImpl.forward",
        compare=BF16_TIES,
    ),
    Target(
        "lmdeploy_rmsnorm_residual",
        "lmdeploy==0.18.0",
        "lmdeploy.pytorch.backends.default.norm:DefaultRMSNormImpl.forward",
    ),
    Target(
        "lmdeploy_apply_rotary",
        "lmdeploy==0.18.0",
        "lmdeploy.pytorch.backends.default.apply_rotary_emb:DefaultApplyRotaryEmbImpl.forward",
    ),
)


def extract_target(target: Target, out: Path, specs: Path) -> Path:
    """`kernelbot extract --repo pypi:<release> --function <target> --spec <specs>/<name>.toml` into
    out/<name> (replaced), plus the comparison rules the target needs; the task directory."""
    from extractors.extract import ExtractOptions, extract
    from extractors.release_sources import fetch_release

    task_dir = out / target.name
    extract(
        ExtractOptions(
            fetch_release(target.release),
            target.function,
            out=task_dir,
            spec=specs / f"{target.name}.toml",
            regime=target.regime,
            name=target.name,
            force=True,
        )
    )
    toml = task_dir / "task.toml"
    if target.compare and "[compare]" not in toml.read_text():
        toml.write_text(toml.read_text() + target.compare)
    return task_dir
