"""A loopback smart-HTTP git server for tests: `git http-backend` behind HTTP Basic auth that accepts one
token (as GitHub does for HTTPS pushes: any user name, the token as password). It lets a test push through
kernelbot.git's credential helper for real and check that the token went over the wire and nowhere else.

    with GitHttpServer(root=tmp_path / "served", token=TOKEN) as server:
        url = server.url_for("fork.git")      # http://127.0.0.1:PORT/fork.git
"""

from __future__ import annotations

import base64
import os
import subprocess
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from werkzeug.serving import make_server
from werkzeug.wrappers import Request, Response


class GitHttpServer:
    def __init__(self, *, root: Path, token: str) -> None:
        self.root = root
        self.token = token
        self.refused = 0  # requests whose credentials were missing or wrong
        self.authorised = 0
        self._server = make_server("127.0.0.1", 0, self._app, threaded=True)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def url_for(self, name: str) -> str:
        return f"http://127.0.0.1:{self._server.server_port}/{name}"

    def __enter__(self) -> GitHttpServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def _app(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        return self._respond(Request(environ))(environ, start_response)

    def _authorised(self, header: str) -> bool:
        scheme, _, value = header.partition(" ")
        if scheme.lower() != "basic":
            return False
        try:
            _user, _, password = base64.b64decode(value).decode().partition(":")
        except ValueError:
            return False
        return password == self.token

    def _respond(self, request: Request) -> Response:
        if not self._authorised(request.headers.get("Authorization", "")):
            self.refused += 1
            return Response("auth required\n", 401, {"WWW-Authenticate": 'Basic realm="fake"'})
        self.authorised += 1
        env = {
            "PATH": os.environ.get("PATH", ""),
            "GIT_PROJECT_ROOT": str(self.root),
            "GIT_HTTP_EXPORT_ALL": "1",
            "REQUEST_METHOD": request.method,
            "PATH_INFO": request.path,
            "QUERY_STRING": request.query_string.decode(),
            "CONTENT_TYPE": request.headers.get("Content-Type", ""),
            "REMOTE_USER": "contributor",
            "REMOTE_ADDR": "127.0.0.1",
            "GIT_HTTP_MAX_REQUEST_BUFFER": "100M",
        }
        body = request.get_data()
        if request.headers.get("Content-Encoding") == "gzip":
            env["HTTP_CONTENT_ENCODING"] = "gzip"
        env["CONTENT_LENGTH"] = str(len(body))
        done = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True, timeout=60)
        head, _, payload = done.stdout.partition(b"\r\n\r\n")
        if not _:
            head, _, payload = done.stdout.partition(b"\n\n")
        status, headers = 200, {}
        for line in head.decode("latin-1").splitlines():
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.strip().split()[0])
            elif name:
                headers[name.strip()] = value.strip()
        return Response(payload, status, headers)
