"""A loopback, stateful GitHub REST fake for tests: the part of the API that kernelbot's forge calls.

It serves one upstream repository under an Enterprise-style prefix (`{url}/api/v3`, PyGithub's base_url),
and keeps pull requests and issue comments in memory:

    GET   /user                                      the token's user
    GET   /repos/{owner}/{name}                      the upstream (and any registered fork)
    GET   /repos/{o}/{n}/pulls?state=&head=&base=    filtered, paginated with Link headers
    POST  /repos/{o}/{n}/pulls                       422 when an open PR has the same head and base, or the
                                                     head branch is not in the fork's bare repository
    GET   /repos/{o}/{n}/pulls/{number}
    PATCH /repos/{o}/{n}/pulls/{number}              title, body, state (a merged PR stays merged)
    GET   /repos/{o}/{n}/issues/{number}/comments
    POST  /repos/{o}/{n}/issues/{number}/comments
    GET   /repos/{o}/{n}/issues/comments/{id}
    PATCH /repos/{o}/{n}/issues/comments/{id}

Only requests carrying the accepted token (`Authorization: token ...` or `Bearer ...`) are served; others get
GitHub's 401 "Bad credentials". A fork registered with the path of its bare git repository is where head
branches are looked up: a PR records the sha its branch has there, and an open PR follows later pushes.
Every URL in a response (url, html_url, issue_url, comments_url) points at this server. Test hooks merge or
close a PR, seed a PR someone else opened, make the next requests fail, and list every request received.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from werkzeug.routing import Map, Rule
from werkzeug.serving import make_server
from werkzeug.wrappers import Request, Response

API_PREFIX = "/api/v3"
ACCEPTED_TOKEN = (
    "ghp_kernelbotTestToken0123456789abcdef"  # what the fixture's fakes accept; tests grep for it
)


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str  # without the API prefix
    query: dict[str, str]
    headers: dict[str, str]  # lower-case names
    body: Any  # parsed JSON, or None


@dataclass(frozen=True)
class Failure:
    """Make the next matching request fail with `status` and GitHub's error shape."""

    status: int
    message: str = "fake failure"
    method: str | None = None  # None: any


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _branch_sha(bare_repo: Path, branch: str) -> str | None:
    done = subprocess.run(
        ["git", "--git-dir", str(bare_repo), "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}"],
        capture_output=True,
        text=True,
    )
    return done.stdout.strip() or None


class FakeGitHub:
    def __init__(
        self,
        *,
        token: str,
        repo: str = "upstream/engine",
        user: str = "contributor",
        default_branch: str = "main",
        forks: dict[str, Path] | None = None,
        first_number: int = 1,
    ) -> None:
        self.token = token
        self.repo = repo
        self.user = user
        self.default_branch = default_branch
        self.forks = dict(forks or {})
        self.requests: list[RecordedRequest] = []
        self._pulls: dict[int, dict[str, Any]] = {}
        self._comments: dict[int, dict[str, Any]] = {}
        self._numbers = itertools.count(first_number)
        self._comment_ids = itertools.count(9001)
        self._failures: list[Failure] = []
        self._lock = threading.RLock()
        self._routes = Map(
            [
                Rule("/user", endpoint="user", methods=["GET"]),
                Rule("/repos/<owner>/<name>", endpoint="repo", methods=["GET"]),
                Rule("/repos/<owner>/<name>/pulls", endpoint="pulls", methods=["GET", "POST"]),
                Rule("/repos/<owner>/<name>/pulls/<int:number>", endpoint="pull", methods=["GET", "PATCH"]),
                Rule(
                    "/repos/<owner>/<name>/issues/<int:number>/comments",
                    endpoint="issue_comments",
                    methods=["GET", "POST"],
                ),
                Rule(
                    "/repos/<owner>/<name>/issues/comments/<int:comment_id>",
                    endpoint="comment",
                    methods=["GET", "PATCH"],
                ),
            ]
        )
        self._server = make_server("127.0.0.1", 0, self._app, threaded=True)
        self._thread = threading.Thread(target=self._serve, name="fake-github", daemon=True)

    # --- lifecycle -----------------------------------------------------------------------------------------

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self._server.server_port}"

    @property
    def url(self) -> str:
        """The API base URL (PyGithub's base_url)."""
        return f"{self.root}{API_PREFIX}"

    def _serve(self) -> None:
        self._server.serve_forever(poll_interval=0.05)

    def start(self) -> FakeGitHub:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> FakeGitHub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- test hooks ----------------------------------------------------------------------------------------

    def pull(self, number: int) -> dict[str, Any]:
        """PR `number` as a GET would return it now."""
        with self._lock:
            self._refresh_head(self._pulls[number])
            return self._pull_json(self._pulls[number])

    def pulls(self) -> list[dict[str, Any]]:
        with self._lock:
            for pull in self._pulls.values():
                self._refresh_head(pull)
            return [self._pull_json(p) for p in self._pulls.values()]

    def comments(self, number: int) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(c) for c in self._comments.values() if c["_issue"] == number]

    def merge(self, number: int) -> None:
        with self._lock:
            pull = self._pulls[number]
            self._refresh_head(pull)
            pull.update(state="closed", merged=True, merged_at=_now(), closed_at=_now())

    def close(self, number: int) -> None:
        with self._lock:
            self._refresh_head(self._pulls[number])
            self._pulls[number].update(state="closed", closed_at=_now())

    def seed_pull(
        self, *, head: str, title: str, body: str, state: str = "open", user: str = "someone"
    ) -> int:
        """A PR opened by someone else (no fork lookup); state "open", "closed" or "merged"."""
        with self._lock:
            number = self._new_pull(head, self.default_branch, title, body, user=user, sha=None)
            if state == "merged":
                self.merge(number)
            elif state == "closed":
                self.close(number)
            return number

    def fail_next(self, *failures: Failure) -> None:
        with self._lock:
            self._failures.extend(failures)

    def requests_to(self, method: str, path_suffix: str = "") -> list[RecordedRequest]:
        return [r for r in self.requests if r.method == method and r.path.endswith(path_suffix)]

    # --- WSGI ----------------------------------------------------------------------------------------------

    def _app(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        return self._respond(Request(environ))(environ, start_response)

    def _respond(self, request: Request) -> Response:
        path = request.path
        if not path.startswith(API_PREFIX + "/"):
            return _error(404, "Not Found")
        path = path[len(API_PREFIX) :]
        body = None
        if request.get_data():
            try:
                body = json.loads(request.get_data(as_text=True))
            except json.JSONDecodeError:
                return _error(400, "Problems parsing JSON")
        with self._lock:
            self.requests.append(
                RecordedRequest(
                    request.method,
                    path,
                    dict(request.args.items()),
                    {k.lower(): v for k, v in request.headers.items()},
                    body,
                )
            )
            if not self._authorised(request.headers.get("Authorization", "")):
                return _error(401, "Bad credentials")
            failure = next((f for f in self._failures if f.method in (None, request.method)), None)
            if failure is not None:
                self._failures.remove(failure)
                return _error(failure.status, failure.message)
            adapter = self._routes.bind("127.0.0.1")
            try:
                endpoint, args = adapter.match(path, method=request.method)
            except Exception:
                return _error(404, "Not Found")
            if "owner" in args and f"{args['owner']}/{args['name']}" not in (self.repo, *self.forks):
                return _error(404, "Not Found")
            handler = getattr(self, f"_{endpoint}_{request.method.lower()}")
            return handler(request, body or {}, **args)

    def _authorised(self, header: str) -> bool:
        scheme, _, value = header.partition(" ")
        return scheme.lower() in ("token", "bearer") and value == self.token

    # --- handlers ------------------------------------------------------------------------------------------

    def _user_get(self, request: Request, body: dict[str, Any]) -> Response:
        return _json({"login": self.user, "id": 1, "type": "User", "url": f"{self.url}/users/{self.user}"})

    def _repo_get(self, request: Request, body: dict[str, Any], owner: str, name: str) -> Response:
        return _json(self._repo_json(f"{owner}/{name}"))

    def _pulls_get(self, request: Request, body: dict[str, Any], owner: str, name: str) -> Response:
        state = request.args.get("state", "open")
        head = request.args.get("head")
        base = request.args.get("base")
        chosen = []
        for pull in sorted(self._pulls.values(), key=lambda p: -p["number"]):
            self._refresh_head(pull)
            if state != "all" and pull["state"] != state:
                continue
            if head and pull["head"]["label"] != self._label(head):
                continue
            if base and pull["base"]["ref"] != base:
                continue
            row = self._pull_json(pull)
            row.pop("merged")  # GitHub's list omits it; merged_at says the same
            chosen.append(row)
        per_page = int(request.args.get("per_page", 30))
        page = int(request.args.get("page", 1))
        window = chosen[(page - 1) * per_page : page * per_page]
        headers = {}
        if page * per_page < len(chosen):
            query = {**request.args.to_dict(), "page": str(page + 1)}
            headers["Link"] = f'<{self.url}/repos/{owner}/{name}/pulls?{urlencode(query)}>; rel="next"'
        return _json(window, headers=headers)

    def _pulls_post(self, request: Request, body: dict[str, Any], owner: str, name: str) -> Response:
        head, base = str(body.get("head", "")), str(body.get("base", ""))
        if not head or not base or "title" not in body:
            return _validation({"resource": "PullRequest", "code": "missing_field", "field": "head"})
        label = self._label(head)
        for pull in self._pulls.values():
            if pull["state"] == "open" and pull["head"]["label"] == label and pull["base"]["ref"] == base:
                return _validation(
                    {
                        "resource": "PullRequest",
                        "code": "custom",
                        "message": f"A pull request already exists for {label}.",
                    }
                )
        sha = self._fork_sha(label)
        if sha == "":
            return _validation({"resource": "PullRequest", "field": "head", "code": "invalid"})
        number = self._new_pull(
            head, base, str(body["title"]), body.get("body") or "", user=self.user, sha=sha
        )
        return _json(self._pull_json(self._pulls[number]), 201)

    def _pull_get(
        self, request: Request, body: dict[str, Any], owner: str, name: str, number: int
    ) -> Response:
        pull = self._pulls.get(number)
        if pull is None:
            return _error(404, "Not Found")
        self._refresh_head(pull)
        return _json(self._pull_json(pull))

    def _pull_patch(
        self, request: Request, body: dict[str, Any], owner: str, name: str, number: int
    ) -> Response:
        pull = self._pulls.get(number)
        if pull is None:
            return _error(404, "Not Found")
        if "state" in body:
            if body["state"] not in ("open", "closed"):
                return _validation({"resource": "PullRequest", "field": "state", "code": "invalid"})
            if pull["merged"] and body["state"] == "open":
                return _validation({"resource": "PullRequest", "code": "custom", "message": "merged"})
            pull["state"] = body["state"]
            pull["closed_at"] = _now() if body["state"] == "closed" else None
        for key in ("title", "body"):
            if key in body:
                pull[key] = body[key]
        pull["updated_at"] = _now()
        self._refresh_head(pull)
        return _json(self._pull_json(pull))

    def _issue_comments_get(
        self, request: Request, body: dict[str, Any], owner: str, name: str, number: int
    ) -> Response:
        if number not in self._pulls:
            return _error(404, "Not Found")
        return _json([self._comment_json(c) for c in self._comments.values() if c["_issue"] == number])

    def _issue_comments_post(
        self, request: Request, body: dict[str, Any], owner: str, name: str, number: int
    ) -> Response:
        if number not in self._pulls:
            return _error(404, "Not Found")
        if not body.get("body"):
            return _validation({"resource": "IssueComment", "code": "missing_field", "field": "body"})
        comment_id = next(self._comment_ids)
        self._comments[comment_id] = {
            "id": comment_id,
            "body": body["body"],
            "_issue": number,
            "created_at": _now(),
            "updated_at": _now(),
        }
        return _json(self._comment_json(self._comments[comment_id]), 201)

    def _comment_get(
        self, request: Request, body: dict[str, Any], owner: str, name: str, comment_id: int
    ) -> Response:
        comment = self._comments.get(comment_id)
        return _json(self._comment_json(comment)) if comment else _error(404, "Not Found")

    def _comment_patch(
        self, request: Request, body: dict[str, Any], owner: str, name: str, comment_id: int
    ) -> Response:
        comment = self._comments.get(comment_id)
        if comment is None:
            return _error(404, "Not Found")
        comment.update(body=body.get("body", comment["body"]), updated_at=_now())
        return _json(self._comment_json(comment))

    # --- state -------------------------------------------------------------------------------------------

    def _label(self, head: str) -> str:
        return head if ":" in head else f"{self.repo.split('/')[0]}:{head}"

    def _fork_sha(self, label: str) -> str | None:
        """The head branch's sha in the registered fork of its owner; "" when the fork lacks the branch,
        None when no fork of that owner is registered (nothing to check against)."""
        owner, _, branch = label.partition(":")
        for full_name, bare in self.forks.items():
            if full_name.split("/")[0] == owner:
                return _branch_sha(bare, branch) or ""
        return None

    def _refresh_head(self, pull: dict[str, Any]) -> None:
        """An open PR follows its branch, as GitHub's does after a push to it."""
        if pull["state"] != "open":
            return
        sha = self._fork_sha(pull["head"]["label"])
        if sha:
            pull["head"]["sha"] = sha

    def _new_pull(self, head: str, base: str, title: str, body: str, *, user: str, sha: str | None) -> int:
        number = next(self._numbers)
        label = self._label(head)
        owner, _, branch = label.partition(":")
        fork = next((n for n in self.forks if n.split("/")[0] == owner), f"{owner}/{self.repo.split('/')[1]}")
        self._pulls[number] = {
            "number": number,
            "title": title,
            "body": body,
            "state": "open",
            "merged": False,
            "merged_at": None,
            "closed_at": None,
            "created_at": _now(),
            "updated_at": _now(),
            "user": user,
            "head": {"label": label, "ref": branch, "sha": sha or "0" * 40, "repo": fork},
            "base": {"ref": base, "repo": self.repo},
        }
        return number

    def _repo_json(self, full_name: str) -> dict[str, Any]:
        owner, _, name = full_name.partition("/")
        return {
            "id": abs(hash(full_name)) % 10**8,
            "name": name,
            "full_name": full_name,
            "owner": {"login": owner, "type": "User", "url": f"{self.url}/users/{owner}"},
            "private": False,
            "fork": full_name != self.repo,
            "default_branch": self.default_branch,
            "url": f"{self.url}/repos/{full_name}",
            "html_url": f"{self.root}/{full_name}",
            "pulls_url": f"{self.url}/repos/{full_name}/pulls{{/number}}",
        }

    def _pull_json(self, pull: dict[str, Any]) -> dict[str, Any]:
        api = f"{self.url}/repos/{self.repo}"
        number = pull["number"]
        return {
            "id": 5000 + number,
            "number": number,
            "title": pull["title"],
            "body": pull["body"],
            "state": pull["state"],
            "merged": pull["merged"],
            "merged_at": pull["merged_at"],
            "closed_at": pull["closed_at"],
            "created_at": pull["created_at"],
            "updated_at": pull["updated_at"],
            "draft": False,
            "user": {"login": pull["user"], "type": "User"},
            "head": {
                "label": pull["head"]["label"],
                "ref": pull["head"]["ref"],
                "sha": pull["head"]["sha"],
                "repo": self._repo_json(pull["head"]["repo"]),
            },
            "base": {"label": f"{self.repo.split('/')[0]}:{pull['base']['ref']}", "ref": pull["base"]["ref"]},
            "url": f"{api}/pulls/{number}",
            "html_url": f"{self.root}/{self.repo}/pull/{number}",
            "issue_url": f"{api}/issues/{number}",
            "comments_url": f"{api}/issues/{number}/comments",
        }

    def _comment_json(self, comment: dict[str, Any]) -> dict[str, Any]:
        api = f"{self.url}/repos/{self.repo}"
        return {
            "id": comment["id"],
            "body": comment["body"],
            "user": {"login": self.user, "type": "User"},
            "created_at": comment["created_at"],
            "updated_at": comment["updated_at"],
            "url": f"{api}/issues/comments/{comment['id']}",
            "html_url": f"{self.root}/{self.repo}/pull/{comment['_issue']}#issuecomment-{comment['id']}",
            "issue_url": f"{api}/issues/{comment['_issue']}",
        }


def _json(payload: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(json.dumps(payload), status, headers=headers or {}, content_type="application/json")


def _error(status: int, message: str) -> Response:
    return _json({"message": message}, status)


def _validation(error: dict[str, Any]) -> Response:
    return _json({"message": "Validation Failed", "errors": [error]}, 422)
