"""The GitHub forge, over PyGithub. The only module in kernelbot that talks to GitHub's API.

The API base URL is configurable (GitHub Enterprise, or a loopback fake in tests): the argument, else
$KERNELBOT_GITHUB_API, else https://api.github.com. The token is read from the environment variable the
profile or the command line names (default GITHUB_TOKEN) and lives only inside PyGithub's auth object; no
message, repr or log line shows it. PyGithub's failures are translated in one place (`_translated`):

    401 / 403 (not a rate limit)  -> ForgeAuthError  "the GitHub token in $GITHUB_TOKEN was refused: ..."
    rate limit                    -> TransportError  with when to try again
    no connection / timeout       -> TransportError  naming the API URL
    404                           -> ForgeError      "owner/name not found at ...: check the name and access"
    anything else                 -> ForgeError      with GitHub's message and status
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import requests
from github import Auth, Consts, Github, GithubException, GithubRetry
from github.GithubException import BadCredentialsException, RateLimitExceededException, UnknownObjectException

from evaluators import secrets
from kernelbot.errors import ConfigError, TransportError
from kernelbot.forge.errors import ForgeAuthError, ForgeError
from kernelbot.forge.types import CommentResult, PRState, PullRequest

if TYPE_CHECKING:
    from kernelbot.engines.model import Profile

DEFAULT_API_URL = "https://api.github.com"
API_URL_VARIABLE = "KERNELBOT_GITHUB_API"
DEFAULT_TOKEN_ENV = "GITHUB_TOKEN"
BODY_LIMIT = 65_536  # GitHub refuses longer PR bodies and comments
_TRUNCATED = "\n\n*(The body was cut to fit GitHub's size limit; the bundle's body.md holds all of it.)*\n\n"
_TOPIC = "<!-- kernelbot-topic:{topic} -->"
_MARKER_AT_END = re.compile(r"(<!--\s*kernelbot:\{.*?\}\s*-->\s*)$", re.DOTALL)


def repo_from_url(url: str) -> str:
    """ "owner/name" from a GitHub URL (https://github.com/owner/name(.git), git@github.com:owner/name.git)
    or an "owner/name" string."""
    text = url.strip()
    if re.fullmatch(r"[\w.-]+/[\w.-]+", text):
        return text.removesuffix(".git")
    path = text.split(":", 1)[1] if text.startswith("git@") else urlsplit(text).path
    parts = [p for p in path.strip("/").removesuffix(".git").split("/") if p]
    if len(parts) < 2:
        raise ConfigError(
            f"cannot tell the GitHub repository from {url!r}: expected https://github.com/owner/name"
        )
    return f"{parts[-2]}/{parts[-1]}"


def resolve_api_url(api_url: str | None = None, profile_default: str | None = None) -> str:
    """The flag's URL, else $KERNELBOT_GITHUB_API, else the profile's api_url, else api.github.com."""
    return (api_url or os.environ.get(API_URL_VARIABLE) or profile_default or DEFAULT_API_URL).rstrip("/")


def is_loopback(api_url: str) -> bool:
    """Whether the API URL's host is this machine's loopback (localhost, 127.0.0.0/8, ::1)."""
    host = urlsplit(api_url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name
        return False


def read_token(token_env: str = DEFAULT_TOKEN_ENV) -> str:
    """The token in $token_env; ConfigError naming the variable when it is unset or empty."""
    token = secrets.get(token_env).strip()
    if not token:
        raise ForgeAuthError(
            f"no GitHub token: set ${token_env} to a token that may push to your fork and open pull requests "
            "upstream (or name another variable with --token-env)"
        )
    return token


class GitHubForge:
    """`Forge` for one upstream GitHub repository; PR heads live in `head_owner`'s fork (the token's user
    when not given)."""

    def __init__(
        self,
        repo: str,
        token: str,
        *,
        api_url: str | None = None,
        token_env: str = DEFAULT_TOKEN_ENV,
        head_owner: str | None = None,
        retries: int = 3,
        timeout_s: int = 15,
        pace: bool | None = None,
    ) -> None:
        self._repo_name = repo_from_url(repo)
        self.api_url = resolve_api_url(api_url)
        self.token_env = token_env
        self._head_owner = head_owner
        retry = GithubRetry(total=retries, backoff_factor=0.5, max_rate_limit_wait=120) if retries else None
        # `pace` keeps PyGithub's spacing between requests (up to a second before each write), GitHub's
        # advice against its secondary rate limits; a loopback server does not need it, so by default (None)
        # only an API on this machine goes unpaced.
        self.paced = not is_loopback(self.api_url) if pace is None else pace
        self._github = Github(
            base_url=self.api_url,
            auth=Auth.Token(token),
            retry=retry,
            timeout=timeout_s,
            per_page=100,
            seconds_between_requests=Consts.DEFAULT_SECONDS_BETWEEN_REQUESTS if self.paced else None,
            seconds_between_writes=Consts.DEFAULT_SECONDS_BETWEEN_WRITES if self.paced else None,
        )
        self._upstream: Any = None

    @classmethod
    def from_env(
        cls, repo: str, *, api_url: str | None = None, token_env: str = DEFAULT_TOKEN_ENV, **options: Any
    ) -> GitHubForge:
        return cls(repo, read_token(token_env), api_url=api_url, token_env=token_env, **options)

    @classmethod
    def for_profile(
        cls,
        profile: Profile,
        *,
        api_url: str | None = None,
        token_env: str = DEFAULT_TOKEN_ENV,
        **options: Any,
    ) -> GitHubForge:
        """The forge of a target profile's upstream (profile.repo_url), its API URL resolved as
        resolve_api_url says, the token read from $token_env."""
        url = resolve_api_url(api_url, profile.api_url)
        return cls.from_env(profile.repo_url, api_url=url, token_env=token_env, **options)

    def __repr__(self) -> str:
        return f"GitHubForge({self._repo_name!r}, api_url={self.api_url!r}, token from ${self.token_env})"

    @property
    def repo(self) -> str:
        return self._repo_name

    @property
    def head_owner(self) -> str:
        if self._head_owner is None:
            with self._translated("reading the token's user"):
                self._head_owner = self._github.get_user().login
        return self._head_owner

    # --- Forge verbs ---------------------------------------------------------------------------------------

    def find_prs(self, head_branch: str | None = None, *, state: str = "all") -> list[PullRequest]:
        filters: dict[str, str | int] = {"state": state, "sort": "created", "direction": "desc"}
        if head_branch is not None:
            filters["head"] = f"{self.head_owner}:{head_branch}"
        with self._translated(f"listing pull requests of {self._repo_name}"):
            return [_to_pr(pr) for pr in self._upstream_repo().get_pulls(**filters)]

    def create_pr(
        self, *, head_branch: str, base_branch: str, title: str, body: str, draft: bool = False
    ) -> PullRequest:
        head = f"{self.head_owner}:{head_branch}"
        try:
            with self._translated(f"opening a pull request from {head}", passthrough=(422,)):
                created = self._upstream_repo().create_pull(
                    title=title,
                    body=body,
                    base=base_branch,
                    head=head,
                    draft=draft,
                    maintainer_can_modify=True,
                )
                return _to_pr(created)
        except GithubException as exc:
            if not _already_exists(exc):
                raise ForgeError(
                    f"GitHub refused to open a pull request from {head} into {base_branch}: "
                    f"{_message(exc)} (HTTP {exc.status}); check that the branch was pushed to the fork"
                ) from None
        # GitHub says a PR for this head is already open: it is the same PR.
        same = [pr for pr in self.find_prs(head_branch, state="open") if pr.base_branch == base_branch]
        if not same:
            raise ForgeError(f"GitHub says a PR from {head} exists, but none is open: try again")
        return same[0]

    def update_pr(
        self, number: int, *, title: str | None = None, body: str | None = None, state: PRState | None = None
    ) -> PullRequest:
        changes: dict[str, str] = {}
        if title is not None:
            changes["title"] = title
        if body is not None:
            changes["body"] = body
        if state is not None:
            if state is PRState.MERGED:
                raise ValueError("a PR cannot be set to merged through update_pr")
            changes["state"] = state.value
        with self._translated(f"updating pull request #{number}"):
            pr = self._upstream_repo().get_pull(number)
            if changes:
                pr.edit(**changes)
            return _to_pr(self._upstream_repo().get_pull(number))

    def close_pr(self, number: int) -> PullRequest:
        return self.update_pr(number, state=PRState.CLOSED)

    def ensure_comment(self, number: int, topic: str, body: str) -> CommentResult:
        tag = _TOPIC.format(topic=topic)
        text = self.massage_markdown(f"{tag}\n{body.rstrip()}\n")
        with self._translated(f"commenting on pull request #{number}"):
            pr = self._upstream_repo().get_pull(number)
            for comment in pr.get_issue_comments():
                if tag in (comment.body or ""):
                    if _normalised(comment.body) == _normalised(text):
                        return CommentResult(comment.id, "unchanged", comment.html_url)
                    comment.edit(text)
                    return CommentResult(comment.id, "updated", comment.html_url)
            created = pr.create_issue_comment(text)
            return CommentResult(created.id, "created", created.html_url)

    def massage_markdown(self, body: str) -> str:
        """LF line endings, and within GitHub's size limit (cut in the middle, the marker kept at the end)."""
        text = _normalised(body)
        if len(text) <= BODY_LIMIT:
            return text
        match = _MARKER_AT_END.search(text)
        tail = match.group(1) if match else ""
        room = BODY_LIMIT - len(tail) - len(_TRUNCATED)
        return text[:room].rstrip() + _TRUNCATED + tail

    # --- plumbing ------------------------------------------------------------------------------------------

    def _upstream_repo(self) -> Any:
        if self._upstream is None:
            self._upstream = self._github.get_repo(self._repo_name)
        return self._upstream

    @contextlib.contextmanager
    def _translated(self, doing: str, *, passthrough: tuple[int, ...] = ()) -> Iterator[None]:
        """PyGithub's and requests' failures as kernelbot errors (see the module docstring)."""
        try:
            yield
        except RateLimitExceededException as exc:
            reset = exc.headers.get("x-ratelimit-reset") if exc.headers else None
            when = f" (it resets at unix time {reset})" if reset else ""
            raise TransportError(
                f"GitHub's rate limit was reached while {doing}{when}: try again later"
            ) from None
        except BadCredentialsException as exc:
            raise self._refused(exc) from None
        except UnknownObjectException:
            raise ForgeError(
                f"{self._repo_name} not found at {self.api_url} while {doing}: check the repository name, "
                f"the API URL (${API_URL_VARIABLE}) and that the token in ${self.token_env} can see it"
            ) from None
        except GithubException as exc:
            if exc.status in passthrough:
                raise
            if exc.status in (401, 403):
                raise self._refused(exc) from None
            raise ForgeError(f"GitHub refused {doing}: {_message(exc)} (HTTP {exc.status})") from None
        except requests.exceptions.RequestException as exc:
            raise TransportError(
                f"cannot reach the GitHub API at {self.api_url} while {doing} ({type(exc).__name__}): check "
                f"the URL (${API_URL_VARIABLE} or the profile's api_url) and the network"
            ) from None

    def _refused(self, exc: GithubException) -> ForgeAuthError:
        return ForgeAuthError(
            f"the GitHub token in ${self.token_env} was refused: {_message(exc)} (HTTP {exc.status}); it "
            f"needs to be valid for {self.api_url} with pull-request write access to {self._repo_name}"
        )


def _to_pr(pr: Any) -> PullRequest:
    # Attributes the list answer carries (reading `merged` or raw_data would cost one GET per PR).
    if pr.merged_at is not None:
        state = PRState.MERGED
    else:
        state = PRState.OPEN if pr.state == "open" else PRState.CLOSED
    return PullRequest(
        number=int(pr.number),
        state=state,
        title=pr.title or "",
        body=pr.body or "",
        head_branch=pr.head.ref or "",
        head_sha=pr.head.sha or "",
        base_branch=pr.base.ref or "",
        url=pr.html_url or "",
        head_owner=str(pr.head.label or "").partition(":")[0],
    )


def _message(exc: GithubException) -> str:
    data = exc.data if isinstance(exc.data, dict) else {}
    parts = [str(data.get("message") or exc.message or "no message")]
    for error in data.get("errors") or []:
        if isinstance(error, dict) and error.get("message"):
            parts.append(str(error["message"]))
        elif isinstance(error, dict) and error.get("field"):
            parts.append(f"{error.get('field')} {error.get('code', 'invalid')}")
    return "; ".join(parts)


def _already_exists(exc: GithubException) -> bool:
    return exc.status == 422 and "already exists" in _message(exc).lower()


def _normalised(text: str | None) -> str:
    return (text or "").replace("\r\n", "\n")
