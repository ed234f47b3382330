"""What the Python "stock" services of tests/services/ share (standard library
only): reading the environment, the routes and their answers, and serving
until SIGTERM (the contract of tests/services/README.md). A service hands
`serve` its answer to one `GET /stock/<sku>`: `answer(sku, along, incoming)`
returns `(content_type, body)` for the dependency's answer, or None for the
cached fallback; `along` holds the correlation headers to pass on to the
dependency (none with PROPAGATE=0), `incoming` every header of the request.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

FALLBACK_BODY = json.dumps({"items": [], "fallback": True}, separators=(",", ":")).encode()
# The route served: /stock/<sku>, or /<ROUTE>/<sku> (a service called by
# another stock service, as its dependency, serves /inventory/<sku>).
ROUTE = os.environ.get("ROUTE", "stock")
if not re.fullmatch(r"[a-z][a-z0-9-]*", ROUTE):
    sys.stderr.write(f"ROUTE={ROUTE}: expected a lowercase path segment, e.g. stock\n")
    sys.exit(2)
STOCK_PATH = re.compile(rf"^/{ROUTE}/([^/]+)$")
# The correlation headers copied onto the dependency call (PROPAGATE=1).
PROPAGATED = ("x-request-id", "traceparent")


def die(service: str, message: str) -> None:
    sys.stderr.write(f"{service} service: {message}\n")
    sys.exit(2)


def number_env(service: str, name: str, default: float, integer: bool = False) -> float:
    raw = os.environ.get(name, "")
    if raw == "":
        return default
    try:
        value = int(raw) if integer else float(raw)
    except ValueError:
        value = -1
    if value < 0:
        die(service, f"{name}={raw}: expected a non-negative {'integer' if integer else 'number'}")
    return value


def make_handler(answer, propagate: bool):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body go out as separate writes

        def log_message(self, format, *args):  # noqa: A002 - keep stderr quiet under load
            pass

        def send(self, status: int, content_type: str, body: bytes, extra: dict | None = None):
            self.send_response(status)
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(body)))
            for name, value in (extra or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

        def route(self):
            """Answers 404/405 itself; returns "health", a /stock match, or None."""
            path = self.path.split("?", 1)[0]
            stock = STOCK_PATH.match(path)
            if path != "/health" and not stock:
                self.send(404, "text/plain", b"not found")
                return None
            if self.command != "GET":
                self.send(405, "text/plain", b"method not allowed", {"allow": "GET"})
                return None
            return stock or "health"

        def do_GET(self):
            route = self.route()
            if route is None:
                return
            if route == "health":
                self.send(200, "text/plain", b"ok")
                return
            along = {}
            if propagate:
                along = {h: self.headers[h] for h in PROPAGATED if self.headers.get(h)}
            result = answer(route.group(1), along, self.headers)
            if result is None:
                self.send(200, "application/json", FALLBACK_BODY, {"x-fallback": "cached"})
            else:
                self.send(200, *result)

        def do_other(self):
            self.route()

        do_POST = do_PUT = do_DELETE = do_PATCH = do_other

    return Handler


def serve(service: str, answer) -> None:
    """Listens on 127.0.0.1:PORT, prints `listening on 127.0.0.1:<port>`,
    answers until SIGTERM or SIGINT, then returns (exit code 0)."""
    port = int(number_env(service, "PORT", 0, integer=True))
    propagate = os.environ.get("PROPAGATE", "1") or "1"
    if propagate not in ("0", "1"):
        die(service, f"PROPAGATE={propagate}: expected 0 or 1")
    server = ThreadingHTTPServer(("127.0.0.1", port), make_handler(answer, propagate == "1"))
    server.daemon_threads = True

    def stop(_signum, _frame):
        # shutdown() waits for serve_forever() to return, so not on this thread.
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(f"listening on 127.0.0.1:{server.server_address[1]}", flush=True)
    try:
        server.serve_forever(poll_interval=0.1)
    finally:
        server.server_close()
