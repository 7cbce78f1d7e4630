"""`kernelbot init-workflow --profile P`: a GitHub Actions workflow that runs `kernelbot scan` on a schedule
(and by hand) on a self-hosted GPU runner, rendered from kernelbot/scan/templates/scan-workflow.yml.j2.

The workflow names its secrets and variables and never holds a value; one concurrency group per profile
keeps scans of one repository from overlapping (the scan's own lock refuses a second one anyway); the last
scan's outcome, the HTML report of its target run and the run directory (without its work trees) are
uploaded as an artifact. Runner labels other than GitHub's own are declared in .github/actionlint.yaml, so
the workflow passes actionlint as written.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Optional

import jinja2
import typer

from kernelbot.cli.application import command
from kernelbot.console import console, warn
from kernelbot.engines.model import Profile
from kernelbot.errors import ConfigError

TEMPLATES = Path(__file__).resolve().parents[1] / "scan" / "templates"
TEMPLATE = "scan-workflow.yml.j2"
DEFAULT_RUNS_ON = ("self-hosted", "linux", "x64", "gpu")
DEFAULT_CRON = "17 3 * * *"
# Labels actionlint knows for self-hosted runners; any other is declared in .github/actionlint.yaml.
_KNOWN_SELF_HOSTED = frozenset({"self-hosted", "linux", "macos", "windows", "x64", "arm", "arm64"})
_SECRET_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_CRON_FIELD = re.compile(r"^[\d*/,\-A-Za-z]+$")


@dataclass(frozen=True)
class WorkflowOptions:
    profile: str
    out: Path | None = None  # default .github/workflows/kernelbot-scan-<profile>.yml
    cron: str = DEFAULT_CRON
    runs_on: tuple[str, ...] = DEFAULT_RUNS_ON
    open_pr: bool = False  # scheduled scans open PRs (a manual one asks)
    fork: str | None = None
    repo: str | None = None
    max_new_prs: int = 1
    only: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    llm: tuple[str, ...] = ()
    time_limit: str | None = None  # each search's wall time
    token_secret: str = "KERNELBOT_GITHUB_TOKEN"
    llm_secret: str = "KERNELBOT_LLM_API_KEY"
    package: str = "kernelbot"  # what pip installs on the runner
    timeout_minutes: int = 720
    retention_days: int = 30
    config: Path | None = None  # kernelbot.toml in this repository, with the user profile
    force: bool = False


@command("init-workflow")
def init_workflow_command(
    profile: Annotated[str, typer.Option(help="Target profile the scheduled scans run with.")],
    out: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option(help="Workflow file (default .github/workflows/kernelbot-scan-PROFILE.yml)."),
    ] = None,
    cron: Annotated[
        str, typer.Option(help="When scheduled scans run (UTC, five cron fields).")
    ] = "17 3 * * *",
    runs_on: Annotated[
        str, typer.Option(help="The self-hosted runner's labels, comma-separated.")
    ] = "self-hosted,linux,x64,gpu",
    open_pr: Annotated[
        bool, typer.Option("--open-pr", help="Scheduled scans open or update PRs (else write bundles).")
    ] = False,
    fork: Annotated[
        Optional[str], typer.Option(help="The fork's git URL the scans push branches to.")  # noqa: UP045
    ] = None,
    repo: Annotated[
        Optional[str], typer.Option(help="--repo of the scans (default: the profile's).")  # noqa: UP045
    ] = None,
    max_new_prs: Annotated[int, typer.Option(help="New proposals per scheduled scan.")] = 1,
    only: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Option("--only", help="--only pattern of the scans; repeatable."),
    ] = None,
    exclude: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Option("--exclude", help="--exclude pattern of the scans; repeatable."),
    ] = None,
    llm: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Option("--llm", help="MODEL@URL the searches use; repeatable (its key from --llm-secret)."),
    ] = None,
    time_limit: Annotated[
        Optional[str], typer.Option(help="Wall time of each search: 30m, 2h.")  # noqa: UP045
    ] = None,
    token_secret: Annotated[
        str, typer.Option(help="Name of the secret holding the GitHub token.")
    ] = "KERNELBOT_GITHUB_TOKEN",
    llm_secret: Annotated[
        str, typer.Option(help="Name of the secret holding the LLM key.")
    ] = "KERNELBOT_LLM_API_KEY",
    package: Annotated[str, typer.Option(help="What pip installs on the runner.")] = "kernelbot",
    timeout_minutes: Annotated[int, typer.Option(help="The job's time limit.")] = 720,
    config: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option(help="kernelbot.toml with the profile, relative to the repository's root."),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing workflow file.")] = False,
) -> int:
    """Write a GitHub Actions workflow running `kernelbot scan --profile PROFILE` on a self-hosted GPU runner.

    Scheduled and manual runs, one concurrency group, secrets by name only, and the scan's outcome, the
    HTML report and the run directory uploaded as an artifact.
    """
    options = WorkflowOptions(
        profile=profile,
        out=out,
        cron=cron,
        runs_on=tuple(label.strip() for label in runs_on.split(",") if label.strip()),
        open_pr=open_pr,
        fork=fork,
        repo=repo,
        max_new_prs=max_new_prs,
        only=tuple(only or ()),
        exclude=tuple(exclude or ()),
        llm=tuple(llm or ()),
        time_limit=time_limit,
        token_secret=token_secret,
        llm_secret=llm_secret,
        package=package,
        timeout_minutes=timeout_minutes,
        config=config,
        force=force,
    )
    return run(options)


def run(options: WorkflowOptions) -> int:
    from kernelbot.engines import load_profile
    from kernelbot.scan.options import default_state_dir

    profile = load_profile(options.profile, config=options.config)
    _check(options)
    out = options.out or Path(".github") / "workflows" / f"kernelbot-scan-{profile.name}.yml"
    if out.exists() and not options.force:
        raise ConfigError(f"{out} exists: pass --force to replace it, or --out another path")
    text = render_workflow(options, profile, state_key=default_state_dir(profile.repo_url, profile.name).name)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    console.print(f"workflow written to {out}", markup=False)
    _declare_labels(out, options.runs_on)
    console.print(
        f"next: register a self-hosted runner with the labels {', '.join(options.runs_on)}, set the secret "
        f"{options.token_secret}" + (f" and {options.llm_secret}" if options.llm else "") + ", and commit it",
        markup=False,
    )
    return 0


def render_workflow(options: WorkflowOptions, profile: Profile, *, state_key: str) -> str:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        block_start_string="[%",
        block_end_string="%]",
        variable_start_string="[[",
        variable_end_string="]]",
        comment_start_string="[#",
        comment_end_string="#]",
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters["shq"] = shlex.quote
    benchmark = profile.benchmark
    variables = sorted(set(benchmark.placeholders.values())) if benchmark is not None else []
    scan_args: list[str] = []
    if options.repo:
        scan_args += ["--repo", options.repo]
    if options.config:
        scan_args += ["--config", options.config.as_posix()]
    for pattern in options.only:
        scan_args += ["--only", pattern]
    for pattern in options.exclude:
        scan_args += ["--exclude", pattern]
    if options.time_limit:
        scan_args += ["--time-limit", options.time_limit]
    return env.get_template(TEMPLATE).render(
        command=_command_line(options),
        profile=profile.name,
        repo_url=profile.repo_url or "its repository",
        state_key=state_key,
        cron=options.cron,
        runs_on="[" + ", ".join(options.runs_on) + "]",
        open_pr=options.open_pr,
        fork=options.fork,
        max_new_prs=options.max_new_prs,
        token_secret=options.token_secret,
        llm_secret=options.llm_secret,
        llm=list(options.llm),
        variables=variables,
        scan_args=scan_args,
        package=options.package,
        config=options.config.as_posix() if options.config else "",
        timeout_minutes=options.timeout_minutes,
        retention_days=options.retention_days,
    )


def _check(options: WorkflowOptions) -> None:
    fields = options.cron.split()
    if len(fields) != 5 or not all(_CRON_FIELD.match(f) for f in fields):
        raise ConfigError(f"--cron {options.cron!r}: expected five fields, e.g. {DEFAULT_CRON!r} (03:17 UTC)")
    for flag, name in (("--token-secret", options.token_secret), ("--llm-secret", options.llm_secret)):
        if not _SECRET_NAME.match(name) or name.upper().startswith("GITHUB_"):
            raise ConfigError(
                f"{flag} {name!r}: a secret's name is letters, digits and _, and may not start with GITHUB_"
            )
    if not options.runs_on or "self-hosted" not in options.runs_on:
        raise ConfigError("--runs-on must include self-hosted: the scan needs the runner's GPU and its state")
    if options.open_pr and not options.fork:
        raise ConfigError("--open-pr needs --fork URL: the fork the scans push their branches to")
    if options.max_new_prs < 0:
        raise ConfigError(f"--max-new-prs {options.max_new_prs}: expected 0 or more")
    if options.config is not None and options.config.is_absolute():
        raise ConfigError(f"--config {options.config}: give it relative to this repository's root")


def _declare_labels(workflow: Path, labels: tuple[str, ...]) -> None:
    """Declare custom runner labels for actionlint in .github/actionlint.yaml (written when absent)."""
    custom = [label for label in labels if label not in _KNOWN_SELF_HOSTED]
    if not custom:
        return
    github_dir = workflow.parent.parent if workflow.parent.name == "workflows" else workflow.parent
    config = github_dir / "actionlint.yaml"
    if config.exists():
        text = config.read_text()
        missing = [label for label in custom if not re.search(rf"(^|[\s\[,-])\s*{re.escape(label)}\b", text)]
        if missing:
            warn(
                f"{config} exists: add the runner label(s) {', '.join(missing)} under self-hosted-runner: "
                "labels, or actionlint reports them as unknown"
            )
        return
    listed = "\n".join(f"    - {label}" for label in custom)
    config.write_text(
        "# Runner labels of the self-hosted runners this repository's workflows use (for actionlint).\n"
        f"self-hosted-runner:\n  labels:\n{listed}\n"
    )
    console.print(f"runner labels declared for actionlint in {config}", markup=False)


def _command_line(options: WorkflowOptions) -> str:
    argv = ["kernelbot", "init-workflow", "--profile", options.profile]
    if options.open_pr:
        argv += ["--open-pr", "--fork", options.fork or ""]
    return shlex.join(argv)
