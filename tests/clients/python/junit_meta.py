"""Reads a JUnit XML report with junitparser and prints, as JSON, what a CI
system shows about the suite: its timestamp, time and properties."""
import json
import sys

from junitparser import JUnitXml

xml = JUnitXml.fromfile(sys.argv[1])
suite = next(iter(xml))
print(json.dumps({
    "timestamp": suite.timestamp,
    "time": suite.time,
    "properties": [[p.name, p.value] for p in suite.properties()],
}))
