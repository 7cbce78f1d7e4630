"""docs/model_shapes.md is the shape table the presets give: regenerated whenever a preset changes."""

from __future__ import annotations

from pathlib import Path

from extractors.drafting.serving_shapes import load_profile, shapes_doc

DOC = Path(__file__).resolve().parents[2] / "docs" / "model_shapes.md"


def test_the_doc_is_the_presets_table() -> None:
    assert DOC.read_text() == shapes_doc(), (
        "docs/model_shapes.md is stale: python -m extractors.drafting.serving_shapes > docs/model_shapes.md"
    )


def test_each_engine_serves_several_families_and_both_half_dtypes() -> None:
    for name in ("sglang", "lmdeploy"):
        profile = load_profile(name)
        families = {m.family for m in profile.served}
        assert {"llama-3", "qwen2.5", "qwen3", "qwen3-moe", "deepseek-v3", "mixtral"} <= families, name
        assert all(m.config for m in profile.served), name  # every row names its config.json
        assert set(profile.dtypes) == {"bfloat16", "float16"}
        dense = profile.models_using({"intermediate"})
        moe = profile.models_using({"num_experts", "topk"})
        assert len({m.family for m in dense}) >= 3 and len({m.family for m in moe}) >= 3
        assert not {m.name for m in moe} & {"llama-3.1-8b", "qwen2.5-7b"}
