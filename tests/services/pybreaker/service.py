"""A tiny "stock" service whose one HTTP dependency (an inventory service) is
guarded by the real `pybreaker` circuit breaker. firedrill's tests drive it
black-box: they start it, point DEPENDENCY_URL at a fault proxy and watch its
answers and the breaker's state changes. Standard library besides pybreaker.

Environment (all optional except DEPENDENCY_URL):
  PORT             listen on 127.0.0.1:PORT; 0 or unset picks a free port. Once
                   listening, prints exactly one stdout line:
                   `listening on 127.0.0.1:<port>`
  DEPENDENCY_URL   base URL of the dependency, e.g. http://127.0.0.1:19001
  CALL_TIMEOUT_MS  whole-call deadline of a dependency call (default 1000)
  FAIL_MAX         pybreaker fail_max: consecutive failures that open it (default 5)
  RESET_TIMEOUT_S  pybreaker reset_timeout in seconds, float allowed (default 2)
  PROPAGATE        1 (default): copy `x-request-id` and `traceparent` from the
                   incoming request to the dependency call; 0: do not
  NO_BREAKER=1     call the dependency directly, no breaker (failures still get
                   the fallback answer; no events are written)
  EVENTS_FILE      append one JSON line per breaker state change, written from
                   pybreaker's CircuitBreakerListener.state_change as it happens:
                   {"at_ms": <epoch ms>, "from": "closed|open|half_open",
                    "to": "closed|open|half_open", "library": "pybreaker"}
                   (the file is created, empty, at start-up)

Routes:
  GET /stock/<sku>  -> GET {DEPENDENCY_URL}/inventory/<sku> through the breaker.
                       A status >= 500, a timeout or a connection error is a
                       failure. Success: 200 with the dependency's body (and
                       content-type). Failure or open breaker: 200
                       {"items":[],"fallback":true} with `x-fallback: cached`.
  GET /health       -> 200 `ok` (never touches the breaker)
  anything else     -> 404 (405 for a non-GET method on a known route)

SIGTERM / SIGINT: stop serving, exit 0.

pybreaker behaviour worth knowing when reading results: it holds one lock for
the whole guarded call, so calls through the breaker run one at a time; it
opens on the FAIL_MAX-th consecutive failure (that call raises
CircuitBreakerError too); it turns half-open lazily, on the first call after
RESET_TIMEOUT_S, and that call is the trial.
"""

from __future__ import annotations

import functools
import http.client
import json
import os
import socket
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pybreaker

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import stock  # noqa: E402 - tests/services/stock.py, shared with the hand-written service

STATE_NAMES = {
    pybreaker.STATE_CLOSED: "closed",
    pybreaker.STATE_OPEN: "open",
    pybreaker.STATE_HALF_OPEN: "half_open",
}


def die(message: str) -> None:
    stock.die("pybreaker", message)


def number_env(name: str, default: float, integer: bool = False) -> float:
    return stock.number_env("pybreaker", name, default, integer)


class DependencyError(Exception):
    """The dependency answered with a status >= 500."""


class _RememberingConnection(http.client.HTTPConnection):
    """Records its socket so a watchdog can cut the exchange at the deadline."""

    def __init__(self, *args, sockets: list, **kwargs):
        super().__init__(*args, **kwargs)
        self._sockets = sockets

    def connect(self):
        super().connect()
        self._sockets.append(self.sock)


class _DeadlineHandler(urllib.request.HTTPHandler):
    def __init__(self, sockets: list):
        super().__init__()
        self._sockets = sockets

    def http_open(self, req):
        return self.do_open(functools.partial(_RememberingConnection, sockets=self._sockets), req)


def fetch_inventory(base_url: str, sku: str, headers: dict, timeout_s: float) -> tuple[str, bytes]:
    """GET {base_url}/inventory/<sku> with `headers`; returns (content_type, body) for a status
    below 500. Raises DependencyError for >= 500, TimeoutError when the whole
    exchange (connect, headers, body) exceeds timeout_s, OSError/URLError for a
    connection error. urlopen's timeout bounds each socket wait; the watchdog
    bounds the total (a slowly trickling answer)."""
    sockets: list = []
    expired = threading.Event()

    def cut():
        expired.set()
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    watchdog = threading.Timer(timeout_s, cut)
    watchdog.daemon = True
    watchdog.start()
    opener = urllib.request.build_opener(_DeadlineHandler(sockets))
    try:
        try:
            request = urllib.request.Request(f"{base_url}/inventory/{sku}", headers=headers)
            with opener.open(request, timeout=timeout_s) as resp:
                return resp.headers.get("content-type", "application/json"), resp.read()
        except urllib.error.HTTPError as err:  # any status >= 400
            with err:
                if err.code >= 500:
                    raise DependencyError(f"dependency answered {err.code}") from None
                return err.headers.get("content-type", "application/json"), err.read()
    except Exception as err:
        if expired.is_set():
            raise TimeoutError(f"timed out after {timeout_s * 1000:.0f}ms") from err
        raise
    finally:
        watchdog.cancel()


class EventsFile(pybreaker.CircuitBreakerListener):
    """Appends one JSON line per state change that pybreaker reports."""

    def __init__(self, path: str):
        self._file = open(path, "a", encoding="utf-8")  # noqa: SIM115 - lives as long as the process
        self._lock = threading.Lock()

    def state_change(self, cb, old_state, new_state):
        line = json.dumps({
            "at_ms": time.time_ns() // 1_000_000,
            "from": STATE_NAMES[old_state.name] if old_state is not None else "closed",
            "to": STATE_NAMES[new_state.name],
            "library": "pybreaker",
        })
        with self._lock:
            self._file.write(line + "\n")
            self._file.flush()


def make_answer(call):
    """The answer to one /stock/<sku>: the dependency's, or None (the
    fallback) for an open breaker (the dependency was not called), the call
    that tripped it, a failed half-open trial, or a failed call."""

    def answer(sku: str, along: dict, _incoming):
        try:
            return call(sku, along)
        except Exception:  # CircuitBreakerError, DependencyError, TimeoutError, connection errors
            return None

    return answer


def main() -> None:
    timeout_s = number_env("CALL_TIMEOUT_MS", 1000, integer=True) / 1000
    base_url = os.environ.get("DEPENDENCY_URL", "").rstrip("/")
    if not base_url:
        die("DEPENDENCY_URL is required (e.g. http://127.0.0.1:19001)")
    if not base_url.startswith("http://"):
        die(f"DEPENDENCY_URL={base_url}: only http:// is supported")

    events_path = os.environ.get("EVENTS_FILE", "")
    events = EventsFile(events_path) if events_path else None  # created, empty, at start-up

    fetch = functools.partial(fetch_inventory, base_url, timeout_s=timeout_s)
    if os.environ.get("NO_BREAKER") == "1":
        call = fetch
    else:
        breaker = pybreaker.CircuitBreaker(
            fail_max=int(number_env("FAIL_MAX", 5, integer=True)),
            reset_timeout=number_env("RESET_TIMEOUT_S", 2),
            listeners=[events] if events else [],
            name="inventory",
        )

        def call(sku: str, headers: dict):
            return breaker.call(fetch, sku, headers)

    stock.serve("pybreaker", make_answer(call))


if __name__ == "__main__":
    main()
