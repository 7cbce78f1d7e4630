"""Serving shapes: real model dimensions (data files under presets/models) and, per target profile
(presets/profiles), which models to draw them from and the token counts of decode and prefill forwards.

A draft asks for the sizes it uses by their meaning (`hidden`, `heads`, `num_experts`, `groups`, ...); the
first model of the profile that defines all of them supplies the values, so a dense layer gets Llama-3's
dimensions and a grouped MoE router DeepSeek-V3's 256 experts in 8 groups."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from extractors.errors import ExtractionError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

PRESETS = Path(__file__).parent / "presets"
# Sizes a model defines (the rest come from the profile: tokens, batch, page_size, pool, context).
MODEL_SIZES = (
    "hidden",
    "intermediate",
    "moe_intermediate",
    "heads",
    "kv_heads",
    "head_dim",
    "rotary_dim",
    "kv_lora_rank",
    "q_lora_rank",
    "num_experts",
    "groups",
    "topk_group",
    "topk",
    "vocab",
    "max_positions",
)
PROFILE_SIZES = ("page_size", "pool", "context", "max_positions", "spec_tokens")


@dataclass(frozen=True)
class ModelShapes:
    name: str
    dtype: str
    sizes: dict[str, int]
    values: dict[str, Any] = field(default_factory=dict)  # eps, routed_scaling_factor, scoring_func, ...
    family: str = ""  # "llama-3", "qwen3-moe", ...: cases from two families differ in more than scale
    config: str = ""  # the Hugging Face repository whose config.json the sizes come from


@dataclass(frozen=True)
class ServingProfile:
    name: str
    models: tuple[ModelShapes, ...]
    decode_tokens: tuple[int, ...]
    prefill_tokens: tuple[int, ...]
    decode_batch: tuple[int, ...]
    sizes: dict[str, int]  # page_size, pool, context
    # Every model the engine serves that shapes are taken from (the drafting models first), and the
    # activation dtypes it serves them in.
    served: tuple[ModelShapes, ...] = ()
    dtypes: tuple[str, ...] = ("bfloat16",)

    def models_using(self, needed: set[str]) -> tuple[ModelShapes, ...]:
        """Every served model that defines each of the model sizes in `needed`: the models whose layers run a
        function using those sizes (an activation over `intermediate` is run by dense models, a router over
        `num_experts` and `topk` by MoE ones). Empty when `needed` names no model size."""
        wanted = needed & set(MODEL_SIZES)
        if not wanted:
            return ()
        return tuple(m for m in self.served or self.models if wanted <= set(m.sizes))

    def model_for(self, needed: set[str]) -> ModelShapes:
        """The first model defining every needed model size (else the one defining most of them)."""
        wanted = needed & set(MODEL_SIZES)
        return max(self.models, key=lambda m: (len(wanted & set(m.sizes)), -self.models.index(m)))


def load_profile(name: str) -> ServingProfile:
    path = PRESETS / "profiles" / f"{name}.toml"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in (PRESETS / "profiles").glob("*.toml")))
        raise ExtractionError(f"no serving-shape profile {name!r} (known: {known})")
    raw = tomllib.loads(path.read_text())
    models = tuple(load_model(m) for m in raw["models"])
    served = [*models, *(load_model(m) for m in raw.get("served_models", []) if m not in raw["models"])]
    return ServingProfile(
        name=name,
        models=models,
        decode_tokens=tuple(raw["decode_tokens"]),
        prefill_tokens=tuple(raw["prefill_tokens"]),
        decode_batch=tuple(raw["decode_batch"]),
        sizes={k: int(raw[k]) for k in PROFILE_SIZES if k in raw},
        served=tuple(served),
        dtypes=tuple(raw.get("dtypes", ["bfloat16"])),
    )


def load_model(name: str) -> ModelShapes:
    path = PRESETS / "models" / f"{name}.toml"
    if not path.is_file():
        raise ExtractionError(f"no model preset {name!r} under {PRESETS / 'models'}")
    raw = tomllib.loads(path.read_text())
    return ModelShapes(
        raw["name"],
        raw.get("dtype", "bfloat16"),
        dict(raw["sizes"]),
        dict(raw.get("values", {})),
        family=str(raw.get("family", raw["name"])),
        config=str(raw.get("config", "")),
    )


def profile_named(name: str) -> str | None:
    """`name` when a serving profile has it (a target profile named after its engine: lmdeploy, sglang)."""
    return name if (PRESETS / "profiles" / f"{name}.toml").is_file() else None


def profile_for_source(source: str) -> str:
    """The profile of a release (`sglang==0.5.9`), a checkout directory (`.../sglang`), else "default"."""
    text = source.lower()
    for name in sorted(p.stem for p in (PRESETS / "profiles").glob("*.toml")):
        if name != "default" and name in text:
            return name
    return "default"


def shape_table(profile: ServingProfile) -> str:
    """The profile's served models as a markdown table (one row per model, the sizes drafts and generated
    tests take from it), then its token counts and dtypes: docs/model_shapes.md is made of these."""
    models = profile.served or profile.models
    sizes = [s for s in MODEL_SIZES if any(s in m.sizes for m in models)]
    columns = ["model", "family", "config.json of", *sizes]
    rows = ["| " + " | ".join(columns) + " |", "|" + " --- |" * len(columns)]
    for model in models:
        cells = [model.name, model.family, f"`{model.config}`"]
        cells += [str(model.sizes.get(s, "–")) for s in sizes]
        rows.append("| " + " | ".join(cells) + " |")
    tokens = ", ".join(map(str, profile.decode_tokens))
    prefill = ", ".join(map(str, profile.prefill_tokens))
    dtypes = ", ".join(profile.dtypes)
    rows += ["", f"Decode tokens per forward: {tokens}; prefill chunk: {prefill}; dtypes: {dtypes}."]
    return "\n".join(rows) + "\n"


DOC_INTRO = """# Model shapes per engine

The sizes kernelbot drafts inputs with, checks generated tests at and lets guards take at run time, per
serving profile (`extractors/drafting/presets/profiles/<engine>.toml`). Each model's numbers come from the
public `config.json` of the repository the table names (one file per model under
`extractors/drafting/presets/models/`); a function is checked at the sizes of every model that defines the
sizes it uses (an activation over `intermediate`: the dense models; a router over `num_experts`/`topk`: the
MoE models). `–`: the model has no such size. Regenerate with
`python -m extractors.drafting.serving_shapes > docs/model_shapes.md` after editing the presets
(tests/extractors/test_model_shapes_doc.py checks this file against them).
"""


def shapes_doc() -> str:
    """docs/model_shapes.md: the shape table of every serving profile."""
    names = sorted(p.stem for p in (PRESETS / "profiles").glob("*.toml"))
    parts = [DOC_INTRO] + [f"## {name}\n\n{shape_table(load_profile(name))}" for name in names]
    return "\n".join(parts)


if __name__ == "__main__":
    print(shapes_doc(), end="")
