"""A grpcio client calling `inventory.Inventory` (raw bytes, no
generated code) CALLS times (default once) on one channel, one call after
the other, printing what it saw as one JSON line (the first status that is
not OK, every message of every call):

  python client.py ADDR get|watch REQUEST TIMEOUT_S [CALLS]

{"code": "OK"|"UNAVAILABLE"|..., "details": ..., "messages": N,
 "sha256": hex of the messages in order}"""

import hashlib
import json
import sys

import grpc


def main():
    addr, method, request, timeout = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
    calls = int(sys.argv[5]) if len(sys.argv) > 5 else 1
    messages = []
    code, details = "OK", None
    with grpc.insecure_channel(addr) as channel:
        for _ in range(calls):
            try:
                if method == "get":
                    call = channel.unary_unary("/inventory.Inventory/Get")
                    messages.append(call(request.encode(), timeout=timeout))
                else:
                    call = channel.unary_stream("/inventory.Inventory/Watch")
                    for message in call(request.encode(), timeout=timeout):
                        messages.append(message)
            except grpc.RpcError as e:
                code, details = e.code().name, e.details()
                break
    digest = hashlib.sha256(b"".join(messages)).hexdigest()
    print(json.dumps({"code": code, "details": details, "messages": len(messages), "sha256": digest}))


if __name__ == "__main__":
    main()
