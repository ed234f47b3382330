"""tests/clients/locust/locustfile.py's shoppers, with firedrill's hook made
to lose every 10th outcome before it ships them (a worker that drops what
it should send): Locust still counts every request, so the drill must find
the loss and leave its verdicts inconclusive (tests/locust.rs)."""

import sys

from locust import events

from locustfile import Shopper  # noqa: F401 - the users Locust runs

_dropped = 0


@events.init.add_listener
def _lose_every_tenth(environment, **_kwargs):
    hook = sys.modules["firedrill_hook"]
    take = hook._take

    def lossy():
        global _dropped
        kept = []
        for outcome in take():
            _dropped += 1
            if _dropped % 10:
                kept.append(outcome)
        return kept

    hook._take = lossy
