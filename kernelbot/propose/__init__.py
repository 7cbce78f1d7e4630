"""From a verified change to a proposal: the Evidence of every number, the PR body rendered from it, the
bundle in RUN/pr/, and opening or updating the pull request through the forge.

    evidence = build_evidence(search_dir=..., task_dir=..., profile=..., integration=..., verify=..., ...)
    bundle = write_bundle(run_dir, evidence, profile, patch)          # RUN/pr/{patch.diff,body.md,...}
    outcome = open_or_update(bundle, profile, forge, repo, fork=..., token_env="GITHUB_TOKEN")
"""

from __future__ import annotations

from kernelbot.propose.bundle import Bundle, SecretInBundle, load_bundle, write_bundle
from kernelbot.propose.collect import build_evidence, kernel_hash
from kernelbot.propose.evidence import EVIDENCE_SCHEMA, Evidence
from kernelbot.propose.publish import ProposeOutcome, open_or_update
from kernelbot.propose.render import body_templates, render_body

__all__ = [
    "EVIDENCE_SCHEMA",
    "Bundle",
    "Evidence",
    "ProposeOutcome",
    "SecretInBundle",
    "body_templates",
    "build_evidence",
    "kernel_hash",
    "load_bundle",
    "open_or_update",
    "render_body",
    "write_bundle",
]
