"""Drives `firedrill server` with the real toxiproxy-python client.

Usage: scenario.py HOST:PORT. Exits non-zero on the first failed check.
Scenario: create a proxy, observe a latency toxic through it, observe a
reset_peer toxic as a connection reset, remove toxics, disable/enable,
reset.
"""
import socket
import socketserver
import sys
import threading
import time

from toxiproxy import Toxiproxy


class Echo(socketserver.BaseRequestHandler):
    def handle(self):
        while True:
            data = self.request.recv(65536)
            if not data:
                return
            self.request.sendall(data)


def start_echo():
    socketserver.ThreadingTCPServer.allow_reuse_address = True
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Echo)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return "127.0.0.1:%d" % server.server_address[1]


def addr(listen):
    host, port = listen.rsplit(":", 1)
    return host, int(port)


def round_trip(listen, payload=b"ping"):
    with socket.create_connection(addr(listen), timeout=10) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        start = time.monotonic()
        s.sendall(payload)
        got = b""
        while len(got) < len(payload):
            chunk = s.recv(65536)
            if not chunk:
                raise AssertionError("connection closed after %r" % got)
            got += chunk
        assert got == payload, got
        return time.monotonic() - start


def check(cond, message):
    if not cond:
        raise AssertionError(message)
    print("ok:", message)


def main():
    host, port = sys.argv[1].rsplit(":", 1)
    toxiproxy = Toxiproxy()
    toxiproxy.update_api_consumer(host, int(port))
    check(toxiproxy.running(), "server is running")
    check(b'"version"' in toxiproxy.version(), "version answers JSON")

    upstream = start_echo()
    proxy = toxiproxy.create(upstream=upstream, name="py_echo", listen="127.0.0.1:0")
    check(not proxy.listen.endswith(":0"), "listen rewritten to the bound port: " + proxy.listen)
    check(round_trip(proxy.listen) < 0.5, "pass-through is fast")

    proxy.add_toxic(type="latency", attributes={"latency": 700})
    check("latency_downstream" in proxy.toxics(), "latency toxic listed")
    slow = round_trip(proxy.listen)
    check(0.7 <= slow < 5.0, "latency observed through the proxy: %.3fs" % slow)
    proxy.destroy_toxic("latency_downstream")
    check(round_trip(proxy.listen) < 0.5, "latency gone after removing the toxic")

    proxy.add_toxic(name="rst", type="reset_peer", attributes={"timeout": 0})
    reset = False
    try:
        round_trip(proxy.listen)
    except ConnectionResetError:
        reset = True
    except (ConnectionError, AssertionError, OSError) as e:
        print("other error:", repr(e))
    check(reset, "reset_peer observed as a connection reset")
    proxy.destroy_toxic("rst")
    check(proxy.toxics() == {}, "no toxics left")
    check(round_trip(proxy.listen) < 0.5, "connections work again")

    proxy.disable()
    refused = False
    try:
        round_trip(proxy.listen)
    except ConnectionRefusedError:
        refused = True
    check(refused, "disabled proxy refuses connections")
    check(toxiproxy.get_proxy("py_echo").enabled is False, "disabled proxy shows enabled=false")
    proxy.enable()
    check(round_trip(proxy.listen) < 0.5, "re-enabled proxy forwards")

    proxy.add_toxic(type="latency", attributes={"latency": 1000})
    proxy.disable()
    check(toxiproxy.reset(), "reset answers")
    again = toxiproxy.get_proxy("py_echo")
    check(again.enabled is True and proxy.toxics() == {}, "reset enables proxies and removes toxics")
    check(round_trip(proxy.listen) < 0.5, "no latency after reset")

    toxiproxy.destroy(proxy)
    check(toxiproxy.get_proxy("py_echo") is None, "proxy destroyed")
    print("python scenario passed")


if __name__ == "__main__":
    main()
