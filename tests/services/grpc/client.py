"""A grpcio client calling `inventory.Inventory` (raw bytes, no
generated code) once, printing what it saw as one JSON line:

  python client.py ADDR get|watch REQUEST TIMEOUT_S

{"code": "OK"|"UNAVAILABLE"|..., "details": ..., "messages": N,
 "sha256": hex of the messages in order}"""

import hashlib
import json
import sys

import grpc


def main():
    addr, method, request, timeout = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
    messages = []
    code, details = "OK", None
    with grpc.insecure_channel(addr) as channel:
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
    digest = hashlib.sha256(b"".join(messages)).hexdigest()
    print(json.dumps({"code": code, "details": details, "messages": len(messages), "sha256": digest}))


if __name__ == "__main__":
    main()
