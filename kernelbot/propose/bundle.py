"""The proposal bundle, RUN/pr/ (kernelbot.target.run_dir reads and writes its files):

    patch.diff     the change; `git apply`s on the base commit
    body.md        the PR body, rendered from evidence.json (hidden marker at the end)
    evidence.json  every number body.md shows
    reproduce.sh   re-applies the patch on the base commit and re-runs the checks (executable)

Written before anything is pushed, and enough on its own: without --open-pr it is the result. A secret from
the environment (a GitHub token, an LLM key) found in any of the four refuses the whole bundle.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from evaluators import secrets
from evolution.config import WELL_KNOWN_SECRET_ENVS
from kernelbot.engines.model import Profile
from kernelbot.errors import KernelbotError, RunStateError
from kernelbot.forge.marker import Marker, parse_marker
from kernelbot.propose.evidence import Evidence
from kernelbot.propose.render import render_body, render_reproduce
from kernelbot.target.run_dir import (
    BundleFiles,
    bundle_body_path,
    bundle_dir,
    read_bundle_files,
    write_bundle_files,
)

MIN_SECRET_LEN = 8
_SECRET_ENVS = (*WELL_KNOWN_SECRET_ENVS, "GH_TOKEN")


class SecretInBundle(KernelbotError):
    """Raised when a secret from the environment would be written into the bundle."""


@dataclass(frozen=True)
class Bundle:
    dir: Path
    evidence: Evidence
    patch: str
    body: str

    @property
    def title(self) -> str:
        return self.evidence.op.title

    @property
    def marker(self) -> Marker:
        found = parse_marker(self.body)
        assert found is not None, "a bundle body always ends with its marker"
        return found

    @property
    def branch(self) -> str:
        return f"kernelbot/{self.evidence.op.slug}"


def write_bundle(
    run_dir: Path, evidence: Evidence, profile: Profile, patch: str, *, secret_envs: Iterable[str] = ()
) -> Bundle:
    """Write RUN/pr/ for `evidence` and `patch`; the body uses the profile's template (profile.template,
    e.g. "sglang" for pr_templates/sglang.md.j2). `secret_envs` names token variables beyond the well-known
    ones whose values must not appear in any file."""
    if not patch.strip():
        raise RunStateError("the change is empty: there is nothing to propose (did integrate run?)")
    files = BundleFiles(
        dir=bundle_dir(run_dir),
        patch=patch if patch.endswith("\n") else patch + "\n",
        evidence=evidence.to_json(),
        body=render_body(evidence, profile.template),
        reproduce=render_reproduce(evidence),
    )
    _refuse_secrets(files.by_name(), (*_SECRET_ENVS, *secret_envs))
    write_bundle_files(run_dir, files)
    return Bundle(dir=files.dir, evidence=evidence, patch=files.patch, body=files.body)


def load_bundle(run_dir: Path) -> Bundle:
    """The bundle written earlier in RUN/pr/ (a resumed run proposes what it wrote)."""
    files = read_bundle_files(run_dir)
    try:
        evidence = Evidence.from_json(files.evidence)
    except ValueError as exc:
        raise RunStateError(f"cannot read the bundle in {files.dir}: {exc}") from exc
    if parse_marker(files.body) is None:
        raise RunStateError(
            f"{bundle_body_path(run_dir)} has lost its kernelbot marker: write the bundle again"
        )
    return Bundle(dir=files.dir, evidence=evidence, patch=files.patch, body=files.body)


def _refuse_secrets(files: Mapping[str, str], names: Iterable[str]) -> None:
    for name in dict.fromkeys(names):
        value = secrets.get(name)
        if len(value) < MIN_SECRET_LEN:
            continue
        for filename, text in files.items():
            if value in text:
                raise SecretInBundle(
                    f"the proposal's {filename} would contain the value of ${name}: refusing to write the "
                    "bundle (find what echoed it into the run's outputs)"
                )
