"""Checkout: a small service that exposes its own latency to Prometheus.

GET /checkout/<sku> calls GET {DEPENDENCY_URL}/inventory/<sku> with a
deadline of CALL_TIMEOUT_MS; on a failure or a timeout it answers 200 with
a cached answer and the header `x-fallback: cached`. Every answer's
duration is observed in the histogram `checkout_request_duration_seconds`
(prometheus_client), served at GET /metrics on the same port, with
`checkout_requests_total{outcome="ok"|"fallback"}`.

Environment: PORT (0: a free one), DEPENDENCY_URL (required),
CALL_TIMEOUT_MS (default 100; a large one is the broken service: it waits
for a slow dependency). Once listening it prints exactly one line:
`listening on 127.0.0.1:<port>`.
"""

import os
import sys
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CONTENT_TYPE_LATEST, Counter, Histogram, generate_latest

DEPENDENCY_URL = os.environ["DEPENDENCY_URL"].rstrip("/")
CALL_TIMEOUT_S = int(os.environ.get("CALL_TIMEOUT_MS", "100")) / 1000.0

LATENCY = Histogram(
    "checkout_request_duration_seconds",
    "Time to answer GET /checkout/<sku>.",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1.0, 2.5),
)
REQUESTS = Counter("checkout_requests", "Answers by outcome.", ["outcome"])


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, status, body, content_type="application/json", extra=()):
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(body)))
        for name, value in extra:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path == "/metrics":
            self.answer(200, generate_latest(), CONTENT_TYPE_LATEST)
            return
        if not self.path.startswith("/checkout/"):
            self.answer(404, b'{"error":"not found"}')
            return
        started = time.monotonic()
        sku = self.path[len("/checkout/"):]
        try:
            with urllib.request.urlopen(
                f"{DEPENDENCY_URL}/inventory/{sku}", timeout=CALL_TIMEOUT_S
            ) as resp:
                body = resp.read()
            outcome, extra = "ok", ()
        except Exception:
            body = b'{"items":[],"cached":true}'
            outcome, extra = "fallback", (("x-fallback", "cached"),)
        REQUESTS.labels(outcome).inc()
        LATENCY.observe(time.monotonic() - started)
        self.answer(200, body, extra=extra)


def main():
    server = ThreadingHTTPServer(("127.0.0.1", int(os.environ.get("PORT", "0"))), Handler)
    server.daemon_threads = True
    print(f"listening on 127.0.0.1:{server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
