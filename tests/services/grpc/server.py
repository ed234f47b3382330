"""A gRPC server on grpcio with no generated code: raw-bytes methods of
`inventory.Inventory`, for tests/grpc.rs to call through firedrill.

  Get    (unary)          answers b"item:" + the request
  Watch  (server stream)  answers 1,000 messages: the index (4 bytes,
                          big-endian) + the request

Listens on 127.0.0.1 (a port of the kernel's choosing), prints
`listening PORT` and serves until its stdin closes."""

import sys
import threading
from concurrent import futures

import grpc


def get(request, context):
    return b"item:" + request


def watch(request, context):
    for i in range(1000):
        yield i.to_bytes(4, "big") + request


def main():
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    handlers = {
        "Get": grpc.unary_unary_rpc_method_handler(get),
        "Watch": grpc.unary_stream_rpc_method_handler(watch),
    }
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler("inventory.Inventory", handlers),)
    )
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(f"listening {port}", flush=True)
    done = threading.Event()

    def wait_for_eof():
        sys.stdin.read()
        done.set()

    threading.Thread(target=wait_for_eof, daemon=True).start()
    done.wait()
    server.stop(grace=0)


if __name__ == "__main__":
    main()
