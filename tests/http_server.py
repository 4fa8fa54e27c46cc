"""A local HTTP server for download tests: serves bytes from memory and can fail on purpose.

``ServerPlan`` says what to serve and how to misbehave (503s, responses cut short, ignored Range
headers); ``serve(plan)`` runs a threaded server on 127.0.0.1 and yields its base URL. It answers
``Range`` requests with 206 (or 416 past the end), so downloads can resume, and records every
request for the tests to inspect. With ``etags`` it sends a strong ETag and answers an ``If-Range``
that no longer matches with the whole file (200), as a real server does after the file changed.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Iterator


@dataclass
class ServerPlan:
    """What the test server does; handlers read and update it under ``lock``."""

    files: dict[str, bytes] = field(default_factory=dict)  # URL path -> body
    fail_503: dict[str, int] = field(default_factory=dict)  # path -> how many 503s to answer first
    truncate_to: dict[str, list[int]] = field(default_factory=dict)  # path -> body bytes of the next responses
    ignore_range: bool = False  # answer 200 with the whole file even when Range is asked
    etags: bool = False  # send a strong ETag (of the body) and honour If-Range with it, as real servers do
    not_found_headers: dict[str, str] = field(default_factory=dict)  # sent with every 404 (e.g. the Hub's X-Error-Code)
    requests: list[tuple[str, str | None]] = field(default_factory=list)  # (path, Range header)
    if_range: list[str | None] = field(default_factory=list)  # the If-Range header of each request
    headers: list[dict[str, str]] = field(default_factory=list)  # every header of each request
    lock: threading.Lock = field(default_factory=threading.Lock)


class PlannedHandler(BaseHTTPRequestHandler):
    plan: ServerPlan  # set on a per-server subclass

    def log_message(self, format, *args):  # noqa: A002 - silence the default stderr log
        pass

    def do_GET(self):  # noqa: N802 - http.server's naming
        plan = self.plan
        range_header = self.headers.get("Range")
        with plan.lock:
            plan.requests.append((self.path, range_header))
            plan.if_range.append(self.headers.get("If-Range"))
            plan.headers.append(dict(self.headers.items()))
            if plan.fail_503.get(self.path, 0) > 0:
                plan.fail_503[self.path] -= 1
                self._send_status_only(503)
                return
            body = plan.files.get(self.path.split("?", 1)[0])  # a query string (the Hub API's) does not select
            cuts = plan.truncate_to.get(self.path) or []
            cut = cuts.pop(0) if cuts else None
        if body is None:
            self._send_status_only(404, plan.not_found_headers)
            return
        start = 0
        etag = f'"{hashlib.sha1(body).hexdigest()}"' if plan.etags else None
        if_range = self.headers.get("If-Range")
        if range_header and if_range is not None and if_range != etag:
            range_header = None  # the file changed since the validator: send all of it (RFC 9110 13.1.5)
        if range_header and not plan.ignore_range:
            start = int(range_header.removeprefix("bytes=").split("-")[0])
            if start >= len(body):
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{len(body)}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
        else:
            self.send_response(200)
        remaining = body[start:]
        if etag:
            self.send_header("ETag", etag)
        self.send_header("Content-Length", str(len(remaining)))
        self.end_headers()
        self.wfile.write(remaining if cut is None else remaining[:cut])
        self.wfile.flush()
        self.close_connection = True

    def _send_status_only(self, status: int, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", "0")
        self.end_headers()


@contextlib.contextmanager
def serve(plan: ServerPlan) -> Iterator[str]:
    """Serve ``plan`` on an ephemeral port of 127.0.0.1; yield ``http://127.0.0.1:<port>``."""
    handler = type("Handler", (PlannedHandler,), {"plan": plan})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
