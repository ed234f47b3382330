"""A tiny "stock" service whose one HTTP dependency (an inventory service) is
guarded by a hand-written consecutive-failures circuit breaker, with switches
that break the breaker on purpose. firedrill's tests drive it black-box to
prove that a drill's verdicts can fail. Python 3.11 standard library only.

Environment (all optional except DEPENDENCY_URL), the "stock" contract of
tests/services/README.md:
  PORT             listen on 127.0.0.1:PORT; 0 or unset picks a free port. Once
                   listening, prints exactly one stdout line:
                   `listening on 127.0.0.1:<port>`
  DEPENDENCY_URL   base URL of the dependency, e.g. http://127.0.0.1:19001
  CALL_TIMEOUT_MS  whole-call deadline of a dependency call (default 1000)
  FAIL_MAX         consecutive failures that open the breaker (default 5)
  RESET_TIMEOUT_S  seconds in open before the next call is a trial (default 2,
                   float allowed); half-open is entered lazily, on that call
  EVENTS_FILE      append one JSON line per state change:
                   {"at_ms": <epoch ms>, "from": "closed|open|half_open",
                    "to": "closed|open|half_open", "library": "handwritten"}
                   (the file is created, empty, at start-up)
  PROPAGATE        1 (default): copy `x-request-id` and `traceparent` from the
                   incoming request to the dependency call; 0: do not
  SECOND_DEPENDENCY_URL  a second dependency, called for every request after
                   the first through a breaker of its own (the same settings
                   and switches): the answer is the fallback when either
                   fails or is rejected
  SECOND_EVENTS_FILE     the second breaker's state changes, as EVENTS_FILE
The switches that break it:
  LEAK_EVERY=N     while open, every Nth call is sent to the dependency anyway
                   (a leak); its outcome changes nothing and EVENTS_FILE still
                   says open
  LEAK_EVENTS=FILE append one JSON line per leaked call to FILE (not to
                   EVENTS_FILE, which stays the breaker's own story):
                   {"at_ms": <epoch ms>, "leak": true, "path": "/inventory/<sku>",
                    "request_id": "<x-request-id or null>"}
  HALF_OPEN=burst  in half-open, admit every call until the first admitted one
                   completes, then close on its success or reopen on its
                   failure (Python `circuitbreaker` 2.x); default `single`: one
                   trial, every other call rejected until it completes
  NO_BREAKER=1     no breaker at all: every call goes to the dependency (failures
                   still get the fallback; no events are written)
A stall (not a breaker defect; a pause such as a garbage collector's):
  STALL_AT=N       the Nth /stock request (from 1) starts a stall of STALL_MS
  STALL_MS         (default 400): it and every request arriving during the stall
                   wait until it ends before calling the dependency

Routes:
  GET /stock/<sku>  -> GET {DEPENDENCY_URL}/inventory/<sku> through the breaker.
                       A status >= 500, a timeout or a connection error is a
                       failure. Success: 200 with the dependency's body (and
                       content-type). Failure or rejected: 200
                       {"items":[],"fallback":true} with `x-fallback: cached`.
  GET /health       -> 200 `ok` (never touches the breaker)
  anything else     -> 404 (405 for a non-GET method on a known route)

SIGTERM / SIGINT: stop serving, exit 0.

Unlike pybreaker, calls are not serialised: each request runs on its own
thread and the breaker's lock is held only to decide and to record.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import stock  # noqa: E402 - tests/services/stock.py, shared with the pybreaker service



def die(message: str) -> None:
    stock.die("handwritten", message)


def number_env(name: str, default: float, integer: bool = False) -> float:
    return stock.number_env("handwritten", name, default, integer)


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class JsonLines:
    """A JSON-lines file appended to from any thread (created at start-up)."""

    def __init__(self, path: str):
        self._file = open(path, "a", encoding="utf-8")  # noqa: SIM115 - lives as long as the process
        self._lock = threading.Lock()

    def write(self, record: dict) -> None:
        with self._lock:
            self._file.write(json.dumps(record) + "\n")
            self._file.flush()


class Breaker:
    """Consecutive failures open it; RESET_TIMEOUT_S later the next call is
    the trial (lazy half-open). `before` says what to do with a call, `after`
    records how an admitted one ended."""

    def __init__(self, fail_max, reset_s, events, leak_every, burst):
        self.fail_max, self.reset_s = max(1, fail_max), reset_s
        self.events, self.leak_every, self.burst = events, leak_every, burst
        self.lock = threading.Lock()
        self.state = "closed"
        self.failures = 0
        self.opened_at = 0.0
        self.trial_running = False
        self.calls_while_open = 0

    def _move(self, to: str) -> None:
        if self.events:
            self.events.write({"at_ms": now_ms(), "from": self.state, "to": to,
                               "library": "handwritten"})
        self.state = to
        if to == "open":
            self.opened_at = time.monotonic()
            self.calls_while_open = 0
        self.trial_running = False

    def before(self) -> str:
        """"call" (closed), "trial" (half-open), "leak" or "reject"."""
        with self.lock:
            if self.state == "open" and time.monotonic() - self.opened_at >= self.reset_s:
                self._move("half_open")
            if self.state == "open":
                self.calls_while_open += 1
                if self.leak_every and self.calls_while_open % self.leak_every == 0:
                    return "leak"
                return "reject"
            if self.state == "half_open":
                if self.trial_running and not self.burst:
                    return "reject"
                self.trial_running = True
                return "trial"
            return "call"

    def after(self, kind: str, ok: bool) -> None:
        with self.lock:
            if kind == "trial" and self.state == "half_open":
                # The first admitted call to complete decides.
                self.failures = 0
                self._move("closed" if ok else "open")
            elif kind == "call" and self.state == "closed":
                self.failures = 0 if ok else self.failures + 1
                if self.failures >= self.fail_max:
                    self._move("open")


class Dependency:
    """GET {base}/inventory/<sku> within a whole-call deadline."""

    def __init__(self, base_url: str, timeout_s: float):
        parts = urlsplit(base_url)
        if parts.scheme != "http" or not parts.hostname:
            die(f"DEPENDENCY_URL={base_url}: only http://host[:port] is supported")
        self.host, self.port = parts.hostname, parts.port or 80
        self.prefix = parts.path.rstrip("/")
        self.timeout_s = timeout_s

    def fetch(self, sku: str, headers: dict) -> tuple[bool, str, bytes]:
        """(ok, content_type, body): ok is False for a status >= 500, a
        timeout or a connection error."""
        conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout_s)

        def cut():
            try:
                if conn.sock:
                    conn.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

        # The watchdog bounds the whole exchange (a slowly trickling answer).
        watchdog = threading.Timer(self.timeout_s, cut)
        watchdog.daemon = True
        watchdog.start()
        try:
            conn.request("GET", f"{self.prefix}/inventory/{sku}", headers=headers)
            resp = conn.getresponse()
            body = resp.read()
            if resp.status >= 500:
                return False, "", b""
            return True, resp.getheader("content-type", "application/json"), body
        except (OSError, http.client.HTTPException):
            return False, "", b""
        finally:
            watchdog.cancel()
            conn.close()


class Stall:
    """STALL_AT: holds requests from the Nth on for STALL_MS."""

    def __init__(self, at: int, ms: float):
        self.at, self.seconds = at, ms / 1000
        self.lock = threading.Lock()
        self.seen = 0
        self.until = None

    def wait(self) -> None:
        with self.lock:
            self.seen += 1
            if self.at and self.seen == self.at:
                self.until = time.monotonic() + self.seconds
            until = self.until
        if until is not None and time.monotonic() < until:
            time.sleep(until - time.monotonic())


def make_answer(guarded, leaks, stall):
    """The answer to one /stock/<sku> through each (dependency, breaker) of
    `guarded` in turn (see stock.serve): the first one's answer, or the
    fallback when any failed or was rejected."""

    def call(dependency, breaker, sku: str, along: dict, incoming):
        kind = breaker.before() if breaker else "call"
        if kind == "reject":
            return None
        if kind == "leak" and leaks:
            leaks.write({"at_ms": now_ms(), "leak": True,
                         "path": f"{dependency.prefix}/inventory/{sku}",
                         "request_id": incoming.get("x-request-id")})
        ok, content_type, body = dependency.fetch(sku, along)
        if breaker:
            breaker.after(kind, ok)
        return (content_type, body) if ok else None

    def answer(sku: str, along: dict, incoming):
        stall.wait()
        results = [call(d, b, sku, along, incoming) for d, b in guarded]
        return None if None in results else results[0]

    return answer


def main() -> None:
    base_url = os.environ.get("DEPENDENCY_URL", "").rstrip("/")
    if not base_url:
        die("DEPENDENCY_URL is required (e.g. http://127.0.0.1:19001)")
    timeout_s = number_env("CALL_TIMEOUT_MS", 1000, integer=True) / 1000
    half_open = os.environ.get("HALF_OPEN", "single")
    if half_open not in ("single", "burst"):
        die(f"HALF_OPEN={half_open}: expected single or burst")
    leaks_path = os.environ.get("LEAK_EVENTS", "")
    leaks = JsonLines(leaks_path) if leaks_path else None

    def guard(events_path: str):
        if os.environ.get("NO_BREAKER") == "1":
            return None
        return Breaker(
            fail_max=int(number_env("FAIL_MAX", 5, integer=True)),
            reset_s=number_env("RESET_TIMEOUT_S", 2),
            events=JsonLines(events_path) if events_path else None,
            leak_every=int(number_env("LEAK_EVERY", 0, integer=True)),
            burst=half_open == "burst",
        )

    guarded = [(Dependency(base_url, timeout_s), guard(os.environ.get("EVENTS_FILE", "")))]
    second_url = os.environ.get("SECOND_DEPENDENCY_URL", "").rstrip("/")
    if second_url:
        second_events = os.environ.get("SECOND_EVENTS_FILE", "")
        guarded.append((Dependency(second_url, timeout_s), guard(second_events)))

    stall = Stall(int(number_env("STALL_AT", 0, integer=True)), number_env("STALL_MS", 400))
    stock.serve("handwritten", make_answer(guarded, leaks, stall))


if __name__ == "__main__":
    main()
