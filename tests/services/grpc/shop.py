"""A gRPC "shop" service on grpcio (no generated code, raw-bytes messages)
whose one dependency, `inventory.Inventory/Get` over gRPC, is guarded by the
real `pybreaker` circuit breaker. tests/blackbox.rs drives it black-box
through firedrill: the load calls it over HTTP/2, its dependency calls go
through an experiment's dependency proxy.

Environment (all optional except DEPENDENCY_ADDR):
  PORT             listen on 127.0.0.1:PORT; 0 or unset picks a free port. Once
                   listening, prints one stdout line: `listening on 127.0.0.1:<port>`
  DEPENDENCY_ADDR  host:port of the inventory service (h2c), e.g. 127.0.0.1:19002
  CALL_TIMEOUT_MS  the deadline of a dependency call (default 1000)
  FAIL_MAX         pybreaker fail_max (default 5)
  RESET_TIMEOUT_S  pybreaker reset_timeout in seconds (default 2)
  NO_BREAKER=1     call the dependency directly, no breaker
  EVENTS_FILE      one JSON line per breaker state change, as
                   tests/services/pybreaker/service.py writes them

Method `shop.Shop/Get` (unary): calls `inventory.Inventory/Get` with the
same request message, passing on `x-request-id` and `traceparent`. Its
answer: the dependency's message; on any failure (a non-OK status, the
deadline) or an open breaker the fallback, the message `fallback` with
status OK and the initial metadata `x-fallback: cached`.

SIGTERM / SIGINT: stop serving, exit 0."""

import os
import signal
import sys
import threading
from concurrent import futures
from pathlib import Path

import grpc
import pybreaker

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "pybreaker"))
from service import EventsFile  # noqa: E402 - the pybreaker service's events file

PASSED_ON = ("x-request-id", "traceparent")


def main():
    addr = os.environ.get("DEPENDENCY_ADDR", "")
    if not addr:
        sys.exit("grpc shop: DEPENDENCY_ADDR is required (e.g. 127.0.0.1:19002)")
    timeout_s = float(os.environ.get("CALL_TIMEOUT_MS", "1000")) / 1000
    channel = grpc.insecure_channel(addr)
    inventory_get = channel.unary_unary("/inventory.Inventory/Get")

    def fetch(request, metadata):
        return inventory_get(request, timeout=timeout_s, metadata=metadata)

    events_path = os.environ.get("EVENTS_FILE", "")
    events = EventsFile(events_path) if events_path else None
    if os.environ.get("NO_BREAKER") == "1":
        call = fetch
    else:
        breaker = pybreaker.CircuitBreaker(
            fail_max=int(os.environ.get("FAIL_MAX", "5")),
            reset_timeout=float(os.environ.get("RESET_TIMEOUT_S", "2")),
            listeners=[events] if events else [],
            name="inventory",
        )

        def call(request, metadata):
            return breaker.call(fetch, request, metadata)

    def get(request, context):
        metadata = [(k, v) for k, v in context.invocation_metadata() if k in PASSED_ON]
        try:
            return call(request, metadata)
        except Exception:  # CircuitBreakerError, grpc.RpcError (any non-OK status)
            context.send_initial_metadata((("x-fallback", "cached"),))
            return b"fallback"

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=16))
    server.add_generic_rpc_handlers(
        (
            grpc.method_handlers_generic_handler(
                "shop.Shop", {"Get": grpc.unary_unary_rpc_method_handler(get)}
            ),
        )
    )
    port = server.add_insecure_port(f"127.0.0.1:{os.environ.get('PORT', '0') or '0'}")
    server.start()
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    print(f"listening on 127.0.0.1:{port}", flush=True)
    done.wait()
    server.stop(grace=0)
    channel.close()


if __name__ == "__main__":
    main()
