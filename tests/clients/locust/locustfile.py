"""experiments/locust/locustfile.py's shoppers, each process also writing
what Locust itself saw of every request (its own request event, apart from
firedrill's hook) to $SEEN_DIR/seen-<pid>.jsonl: what tests/locust.rs
compares the drill's figures with."""

import json
import os

from locust import HttpUser, constant_throughput, events, task

_seen = None


@events.request.add_listener
def _seen_request(name, response, exception, **_kwargs):
    global _seen
    if _seen is None:
        _seen = open(os.path.join(os.environ["SEEN_DIR"], f"seen-{os.getpid()}.jsonl"), "a")
    status = getattr(response, "status_code", 0) or 0
    fallback = bool(status) and response.headers.get("x-fallback") == "cached"
    _seen.write(json.dumps({"name": name, "status": status, "fallback": fallback,
                            "error": exception is not None and not status}) + "\n")
    _seen.flush()


class Shopper(HttpUser):
    wait_time = constant_throughput(1)

    @task
    def stock(self):
        self.client.get("/stock/sku-1", name="stock", timeout=3)
