"""Parses `firedrill server`'s /metrics with the official Prometheus
client's text parser and prints every sample as JSON lines
({"name", "labels", "value", "type"}), so the Rust test checks values.

Usage: metrics_parse.py HOST:PORT
"""
import json
import sys
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

text = urllib.request.urlopen("http://%s/metrics" % sys.argv[1], timeout=10).read().decode()
for family in text_string_to_metric_families(text):
    for sample in family.samples:
        print(json.dumps({
            "family": family.name,
            "type": family.type,
            "name": sample.name,
            "labels": sample.labels,
            "value": sample.value,
        }, sort_keys=True))
