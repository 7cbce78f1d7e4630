"""The mutation operators of a run, built from config: which seed the population and which evolve it.

Without an LLM endpoint the set is the embedded default: the Inductor seed and the fusion seed (seeding only),
fusion variants (a fusion candidate regenerated with one knob changed), launch-parameter tuning,
torch.compile's own launches for the Inductor seed (on a GPU), and bucket crossover (two correct candidates
combined by input size). With endpoints, LLM mutation joins, weighted against them by `mutation.weights` (by
family: the part of an operator's name before ':'; a family the config leaves out gets
evolution.config.DEFAULT_WEIGHTS). The operator classes live in evolution/mutators/ (imported lazily here).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from evolution.config import DEFAULT_WEIGHTS, SearchConfig
from evolution.errors import SearchConfigError
from evolution.types import Mutator

SEED_ONLY_PREFIX = "seed:"  # operators named seed:* write first candidates and never mutate a parent


def family(mutator: Mutator) -> str:
    return mutator.name.split(":", 1)[0]


@dataclass
class OperatorSet:
    seeders: list[Mutator]
    evolvers: list[Mutator]
    weights: list[float]

    @classmethod
    def of(cls, mutators: Sequence[Mutator], family_weights: dict[str, float] | None = None) -> OperatorSet:
        family_weights = family_weights or {}
        seeders = [m for m in mutators if m.can_seed()]
        evolvers, weights = [], []
        for m in mutators:
            if m.name.startswith(SEED_ONLY_PREFIX):
                continue
            w = family_weights.get(family(m), DEFAULT_WEIGHTS.get(family(m), 1.0))
            if w > 0:
                evolvers.append(m)
                weights.append(w)
        return cls(seeders, evolvers, weights)

    def pick(self, rng: random.Random) -> Mutator:
        if not self.evolvers:
            raise SearchConfigError("no mutation operator is enabled (check mutation.weights)")
        return rng.choices(self.evolvers, weights=self.weights)[0]

    @property
    def names(self) -> list[str]:
        return sorted({m.name for m in [*self.seeders, *self.evolvers]})


def build_operators(config: SearchConfig, device: str) -> OperatorSet:
    """The operators `config` asks for; `device` is where the Inductor seed may run torch.compile."""
    mutators: list[Mutator] = []
    try:
        if config.mutation.inductor_seed:
            from evolution.mutators.inductor_seed import InductorSeedMutator

            mutators.append(InductorSeedMutator(device=device))
        from evolution.mutators.fusion_seed import FusionSeedMutator
        from evolution.mutators.fusion_variant import FusionVariantMutator
        from evolution.writers.fusion.writer import FusionWriter

        # One trace per task, shared by the seed and the variants.
        writer = FusionWriter(line_length=config.mutation.line_length)
        if config.mutation.fusion_seed:
            mutators.append(FusionSeedMutator(writer))
        mutators.append(FusionVariantMutator(writer))  # evolves any parent the generator wrote
        from evolution.mutators.fusion_inductor import FusionInductorMutator

        mutators.append(FusionInductorMutator(writer))  # Inductor's structure where its kernel is faster
        from evolution.mutators.launch_tuning import LaunchTuningMutator

        mutators.append(LaunchTuningMutator(seed=config.seed))
        if config.mutation.inductor_seed and device.startswith("cuda"):  # a CPU has nothing to autotune
            from evolution.mutators.compile_launch import CompileLaunchMutator

            mutators.append(CompileLaunchMutator(device=device))  # compile's own launch at each shape
        from evolution.mutators.bucket_crossover import BucketCrossoverMutator

        mutators.append(BucketCrossoverMutator(writer=writer))
        if config.mutation.llm:
            from evolution.mutators.llm import LLMMutator

            mutators.append(
                LLMMutator(
                    config.mutation.llm,
                    seed=config.seed,
                    max_tokens=config.stop.max_tokens,
                    max_cost_usd=config.stop.max_cost_usd,
                    rewrite_ratio=config.mutation.rewrite_ratio,
                )
            )
    except ImportError as exc:  # pragma: no cover - the mutators package ships with kernelbot
        raise SearchConfigError(f"a mutation operator is missing from this install: {exc}") from exc
    return OperatorSet.of(mutators, config.mutation.weights)
