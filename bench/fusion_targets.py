"""The seven engine functions of the LLM-free acceptance, as the fusion generator's CPU test and its GPU smoke
run extract them: release, target, regime, spec name, and the tolerance for near-ties a target needs.

`kernelbot extract` writes the comparison rules a top-k's code implies ([[compare.unordered]] for an unsorted
top-k, [[compare.ties]] for the ids of any top-k: docs/extraction.md). What it cannot see is how close two
different scores may come: SGLang's biased_grouped_topk_impl ranks float32 sigmoid scores plus a bias, and
the GPU's rounding may flip two experts a few ulps apart at the selection boundary, so up to 0.1 % of its ids
may differ. LMDeploy's softmax over bf16 logits needs nothing more: its scores either tie exactly (equal
logits, the tie rule's business) or lie at least one bf16 ulp of the logits apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Target:
    name: str  # the task directory's name and its spec's stem
    release: str
    function: str  # package.module:Qualname
    regime: str = "graph"
    mismatch_fraction: float = 0.0  # ids allowed to differ at near-ties (see the module docstring)


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
        mismatch_fraction=0.001,
    ),
    Target(
        "lmdeploy_softmax_topk",
        "lmdeploy==0.18.0",
        "lmdeploy.pytorch.backends.default.moe:DefaultSoftmaxTopKImpl.forward",
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
    out/<name> (replaced), plus the near-tie tolerance the target needs; the task directory."""
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
    if target.mismatch_fraction:
        toml = task_dir / "task.toml"
        text = toml.read_text()
        line = f"mismatch_fraction = {target.mismatch_fraction}\n"
        # Into the [compare] table extraction wrote (its rules stay), or a table of its own at the end.
        text = text.replace("[compare]\n", "[compare]\n" + line, 1) if "[compare]\n" in text else text
        toml.write_text(text if line in text else f"{text}\n[compare]\n{line}")
    return task_dir
