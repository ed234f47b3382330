"""firedrill's event hook for Locust: sends each request's caller outcome
back to the drill, so that a drill whose load Locust drives
(`load: { locust: ... }`) counts and judges the requests as it does its
built-in load's.

The drill loads it beside your locustfile (`locust -f yours.py,firedrill_hook.py`)
on the master and on the workers it starts. Workers you start on other
machines need it too, with the same FIREDRILL_* variables the drill prints
when it starts:

    locust -f locustfile.py,firedrill_hook.py --worker --master-host DRILL_HOST

What it does, on each user's requests made with `self.client` (HttpUser):
  * gives each request an id, in the headers firedrill's built-in load uses
    (FIREDRILL_CORRELATION: `x-request-id`, `traceparent`), so that the calls
    your service passes them on with are paired with the request;
  * records when it started (this machine's wall clock), its name (the
    route), status, latency, the error if none came, and the response
    headers and body the drill's fallback rules read (FIREDRILL_CAPTURE_HEADERS,
    FIREDRILL_CAPTURE_BODY);
  * ships them to the master every half second (a worker) and the master
    appends them, one JSON line each, to FIREDRILL_OUTCOMES.

Standard library and Locust only.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import threading

import gevent
from locust import events
from locust.clients import HttpSession
from locust.runners import MasterRunner, WorkerRunner

MESSAGE = "firedrill_outcomes"
MARK = 1 << 63
BODY_LIMIT = 64 * 1024

SEED = int(os.environ.get("FIREDRILL_SEED", "0"))
CORRELATION = [h for h in os.environ.get("FIREDRILL_CORRELATION", "").split(",") if h]
CAPTURE_HEADERS = [h for h in os.environ.get("FIREDRILL_CAPTURE_HEADERS", "").split(",") if h]
CAPTURE_BODY = os.environ.get("FIREDRILL_CAPTURE_BODY") == "1"
OUTCOMES = os.environ.get("FIREDRILL_OUTCOMES", "")

# Ids unique across processes and machines: a random 23-bit tag, then a
# counter (the drill reads 63 bits).
_TAG = random.SystemRandom().getrandbits(23) << 40
_ids = itertools.count(1)
_buffer: list[dict] = []
_lock = threading.Lock()
_out = None


def _header_value(name: str, request_id: int) -> str:
    low = MARK | request_id
    trace = f"{SEED:016x}{low:016x}"
    if name == "traceparent":
        return f"00-{trace}-{low:016x}-01"
    return trace


_original_request = HttpSession.request


def _request(self, method, url, name=None, catch_response=False, context={}, **kwargs):
    request_id = _TAG | next(_ids)
    headers = dict(kwargs.pop("headers", None) or {})
    for header in CORRELATION:
        headers[header] = _header_value(header, request_id)
    context = {**context, "firedrill_id": request_id}
    return _original_request(
        self, method, url, name=name, catch_response=catch_response, context=context,
        headers=headers, **kwargs
    )


HttpSession.request = _request


@events.request.add_listener
def _on_request(request_type, name, response_time, response, context, exception, start_time=None,
                url=None, **_kwargs):
    status = getattr(response, "status_code", None) or None
    outcome = {
        "id": (context or {}).get("firedrill_id"),
        "start": start_time,
        "name": name,
        "method": request_type,
        "url": url,
        "status": status,
        "latency_ms": response_time,
        "error": None if exception is None or status else f"{type(exception).__name__}: {exception}",
    }
    if response is not None and status:
        outcome["headers"] = {h: response.headers.get(h) for h in CAPTURE_HEADERS
                              if response.headers.get(h) is not None}
        if CAPTURE_BODY:
            outcome["body"] = (response.text or "")[:BODY_LIMIT]
    with _lock:
        _buffer.append(outcome)


def _take() -> list[dict]:
    global _buffer
    with _lock:
        batch, _buffer = _buffer, []
    return batch


def _write(batch: list[dict]) -> None:
    global _out
    if not batch or not OUTCOMES:
        return
    if _out is None:
        _out = open(OUTCOMES, "a", encoding="utf-8")
    for outcome in batch:
        _out.write(json.dumps(outcome, separators=(",", ":")) + "\n")
    _out.flush()


def _flush(environment) -> None:
    batch = _take()
    if not batch:
        return
    if isinstance(environment.runner, WorkerRunner):
        environment.runner.send_message(MESSAGE, batch)
    else:
        _write(batch)


@events.init.add_listener
def _on_init(environment, **_kwargs):
    if isinstance(environment.runner, MasterRunner):
        environment.runner.register_message(MESSAGE, lambda msg, **_kw: _write(msg.data))
        return

    def ship():
        while True:
            gevent.sleep(0.5)
            _flush(environment)

    gevent.spawn(ship)


@events.test_stop.add_listener
def _on_test_stop(environment, **_kwargs):
    if not isinstance(environment.runner, MasterRunner):
        _flush(environment)


@events.quitting.add_listener
def _on_quitting(environment, **_kwargs):
    if not isinstance(environment.runner, MasterRunner):
        _flush(environment)
