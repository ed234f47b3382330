"""Reads a JUnit XML report with junitparser (what CI systems use) and
prints one line per test case: result and name, then the totals."""
import sys

from junitparser import JUnitXml

xml = JUnitXml.fromfile(sys.argv[1])
tests = failures = 0
for suite in xml:
    for case in suite:
        tests += 1
        failed = any(r._tag in ("failure", "error") for r in case.result)
        failures += failed
        print(("FAIL " if failed else "PASS ") + case.name)
print(f"tests={tests} failures={failures}")
