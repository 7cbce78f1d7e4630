"""Mutation operators of the search; each satisfies evolution.types.Mutator.

- `llm.LLMMutator` ("llm:<model>"): asks an OpenAI-compatible endpoint for a SEARCH/REPLACE diff or a
  rewrite of the parent's EVOLVE-BLOCK, prompted with the parent's structured feedback;
- `inductor_seed.InductorSeedMutator` ("seed:inductor"): a first candidate from the Triton code
  torch.compile generates for the reference, made standalone;
- `launch_tuning.LaunchTuningMutator` ("tune:launch"): moves block sizes, warps and stages;
- `bucket_crossover.BucketCrossoverMutator` ("cross:bucket"): combines the parent with a correct inspiration
  that is faster on part of the cases, routing each call by the bytes of its tensor inputs
  (`crossover.source` writes the combined file).

Modules are imported by name (evolution.operators does so lazily); importing this package is cheap.
"""
