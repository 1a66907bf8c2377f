"""The viewer's HTTP server: the standard library's threaded server, GET only, read-only.

Safety: every response carries the strict ``CSP`` (no inline script or style, no other origin),
``nosniff``, ``no-referrer`` and ``frame-ancestors 'none'``. On a loopback address the Host header
must name that address (a page on another site cannot reach the viewer by rebinding a DNS name to
127.0.0.1). On any other address a token is required on every request: ``?token=`` once (the
viewer then sets it as a same-site, HTTP-only cookie) or the cookie.
"""

from __future__ import annotations

import hmac
import ipaddress
import re
import secrets
import socket
import sys
import traceback
from http import HTTPStatus
from http.cookies import SimpleCookie
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from ..store import RunStore
from . import _pages
from ._layout import CSP, STATIC, asset

COOKIE = "assay_view_token"
_TRACE = re.compile(r"^/runs/([^/]+)/traces/(\d{1,12})$")
_RUN = re.compile(r"^/runs/([^/]+)$")


def is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return host == "localhost"


def loopback_hosts(port: int) -> frozenset[str]:
    """The Host headers a server on a loopback address answers (``assay view``, ``assay serve``): a page
    that rebinds its own DNS name to 127.0.0.1 sends its name, and is refused."""
    return frozenset((f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"))


class ViewServer(ThreadingHTTPServer):
    """Serves ``store`` on (host, port); ``token`` None on a loopback address only."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, store: RunStore, host: str = "127.0.0.1", port: int = 0, *, token: str | None = None,
                 log: bool = False) -> None:
        if token is None and not is_loopback(host):
            token = secrets.token_urlsafe(24)
        self.store, self.token, self.log = store, token, log
        if ":" in host:
            self.address_family = socket.AF_INET6
        super().__init__((host.strip("[]"), port), _Handler)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        host = host.decode() if isinstance(host, bytes) else str(host)
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{port}/" + (f"?token={self.token}" if self.token else "")

    def allowed_hosts(self) -> frozenset[str]:
        return loopback_hosts(self.server_address[1])


class _Handler(BaseHTTPRequestHandler):
    server: ViewServer
    server_version = "assay-view"
    sys_version = ""
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        if self.server.log:
            sys.stderr.write("assay view: " + (format % args) + "\n")

    def _send(self, status: int, body: bytes, content_type: str = "text/html; charset=utf-8",
              headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Content-Security-Policy", CSP)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("X-Frame-Options", "DENY")
        self.send_header("Cross-Origin-Resource-Policy", "same-origin")
        self.send_header("Cache-Control", "no-store" if content_type.startswith("text/html") else "max-age=300")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _html(self, status: int, text: str, headers: dict[str, str] | None = None) -> None:
        self._send(status, text.encode("utf-8"), headers=headers)

    def _refuse(self, status: HTTPStatus, why: str) -> None:
        self._send(status, f"{status.value} {status.phrase}: {why}\n".encode(), "text/plain; charset=utf-8")

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        self._refuse(HTTPStatus.METHOD_NOT_ALLOWED, "the viewer is read-only")

    do_PUT = do_DELETE = do_PATCH = do_POST  # noqa: N815

    def do_HEAD(self) -> None:  # noqa: N802
        self.do_GET()

    def _authorised(self, query: dict[str, list[str]]) -> tuple[bool, dict[str, str]]:
        """Whether the request may be served, and the headers that set the token's cookie."""
        token = self.server.token
        if token is None:
            return self.headers.get("Host", "") in self.server.allowed_hosts(), {}
        given = (query.get("token") or [""])[0]
        if given and hmac.compare_digest(given.encode(), token.encode()):
            return True, {"Set-Cookie": f"{COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/"}
        cookie = SimpleCookie()
        try:
            cookie.load(self.headers.get("Cookie", ""))
        except Exception:  # noqa: BLE001 - a malformed Cookie header is no token
            return False, {}
        held = cookie.get(COOKIE)
        return held is not None and hmac.compare_digest(held.value.encode(), token.encode()), {}

    def do_GET(self) -> None:  # noqa: N802
        parts = urlsplit(self.path)
        query = parse_qs(parts.query, keep_blank_values=True)
        ok, cookie = self._authorised(query)
        if not ok:
            if self.server.token is None:
                self._refuse(HTTPStatus.MISDIRECTED_REQUEST, "unexpected Host header (open the viewer at 127.0.0.1)")
            else:
                self._refuse(HTTPStatus.FORBIDDEN, "a token is needed: open the URL `assay view` printed")
            return
        path = parts.path
        q = _pages.Query({k: v[0] for k, v in query.items() if k != "token"})
        try:
            if path.startswith("/static/"):
                name = path[len("/static/"):]
                if name not in STATIC:
                    raise _pages.NotFound(f"no file {name!r}")
                self._send(200, asset(name), STATIC[name][1] + "; charset=utf-8", cookie)
                return
            if path == "/favicon.ico":
                self._send(204, b"", "image/x-icon")
                return
            if path == "/":
                text = _pages.runs_page(self.server.store, q)
            elif path == "/compare":
                text = _pages.compare_page(self.server.store, q)
            elif m := _TRACE.match(path):
                text = _pages.trace_page(self.server.store, unquote(m[1]), int(m[2]))
            elif m := _RUN.match(path):
                text = _pages.run_page(self.server.store, unquote(m[1]), q)
            else:
                raise _pages.NotFound(f"no page {path!r}")
        except _pages.NotFound as exc:
            self._html(404, _pages.error_page(404, str(exc)), cookie)
            return
        except Exception as exc:  # noqa: BLE001 - one page failing never stops the viewer
            traceback.print_exc(file=sys.stderr)
            self._html(500, _pages.error_page(500, f"{type(exc).__name__}: {exc}"), cookie)
            return
        self._html(200, text, cookie)
