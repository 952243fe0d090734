"""Checks that mockserver.py answers the way MockServer does for what the ETSI suites use.

Run from this folder: `python3 -m unittest test_mockserver` (run.sh runs it first; the
JSON_SCHEMA case needs the `jsonschema` module of the conformance virtualenv).
"""

import json
import threading
import unittest
import urllib.error
import urllib.request
from pathlib import Path
import sys

sys.path.insert(0, str(Path(__file__).resolve().parent))

import mockserver  # noqa: E402


def start():
    ready = threading.Event()
    port = []

    def announce(p):
        port.append(p)
        ready.set()

    threading.Thread(target=mockserver.serve, args=(0, False, announce), daemon=True).start()
    ready.wait(10)
    return f"http://127.0.0.1:{port[0]}"


BASE = start()


def call(method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(BASE + path, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


class MockServerStub(unittest.TestCase):
    def setUp(self):
        self.assertEqual(call("PUT", "/reset")[0], 200)

    def verify(self, matcher, at_least, at_most=None):
        times = {"atLeast": at_least}
        if at_most is not None:
            times["atMost"] = at_most
        return call("PUT", "/verify", {"httpRequest": matcher, "times": times})[0]

    def test_unmatched_requests_are_recorded_and_answered_404(self):
        self.assertEqual(call("POST", "/endpoint", {"a": 1})[0], 404)
        self.assertEqual(self.verify({"method": "POST", "path": "/endpoint"}, 1, 1), 202)
        self.assertEqual(self.verify({"method": "POST", "path": "/endpoint"}, 2), 406)

    def test_json_bodies_match_leniently_or_strictly(self):
        lenient = {"method": "POST", "path": "/n", "body": {"type": "JSON", "json": json.dumps({"a": 1}), "matchType": "ONLY_MATCHING_FIELDS"}}
        strict = {"method": "POST", "path": "/n", "body": {"type": "JSON", "json": json.dumps({"a": 1}), "matchType": "STRICT"}}
        call("PUT", "/expectation", {"httpRequest": lenient, "httpResponse": {"statusCode": 204}, "times": {"unlimited": True}})
        self.assertEqual(call("POST", "/n", {"a": 1, "b": 2})[0], 204)
        self.assertEqual(call("POST", "/n", {"a": 2})[0], 404)
        self.assertEqual(self.verify(lenient, 1, 1), 202)
        self.assertEqual(self.verify(strict, 1), 406)

    def test_json_schema_bodies_and_forwarding(self):
        schema = {"type": "object", "required": ["notificationType"]}
        matcher = {"method": "POST", "path": "/endpoint", "body": {"type": "JSON_SCHEMA", "jsonSchema": json.dumps(schema)}}
        forward = {"httpRequest": {"path": "/endpoint/check"}, "delay": {"timeUnit": "MILLISECONDS", "value": 1}}
        self.assertEqual(call("PUT", "/expectation", {"httpRequest": matcher, "httpOverrideForwardedRequest": forward})[0], 201)
        check = {"method": "POST", "path": "/endpoint/check"}
        call("PUT", "/expectation", {"httpRequest": check, "httpResponse": {"statusCode": 204}})
        self.assertEqual(call("POST", "/endpoint", {"notificationType": "X"})[0], 204)
        self.assertEqual(call("POST", "/endpoint", {"other": 1})[0], 404)
        self.assertEqual(self.verify(check, 1, 1), 202)

    def test_times_limit_an_expectation(self):
        m = {"method": "GET", "path": "/once"}
        call("PUT", "/expectation", {"httpRequest": m, "httpResponse": {"statusCode": 200}, "times": {"remainingTimes": 1, "unlimited": False}})
        self.assertEqual(call("GET", "/once")[0], 200)
        self.assertEqual(call("GET", "/once")[0], 404)

    def test_clear_drops_requests_and_expectations_of_a_path(self):
        m = {"method": "POST", "path": "/endpoint"}
        call("PUT", "/expectation", {"httpRequest": m, "httpResponse": {"statusCode": 204}})
        call("POST", "/endpoint", {})
        call("POST", "/other", {})
        self.assertEqual(call("PUT", "/clear", {"path": "/endpoint"})[0], 200)
        self.assertEqual(self.verify(m, 0, 0), 202)
        self.assertEqual(self.verify({"path": "/other"}, 1, 1), 202)
        self.assertEqual(call("POST", "/endpoint", {})[0], 404)

    def test_malformed_expectations_are_refused(self):
        bad = {"httpRequest": {"path": "/x"}, "httpResponse": {"statusCode": "STARTING"}}
        self.assertEqual(call("PUT", "/expectation", bad)[0], 400)
        self.assertEqual(call("PUT", "/expectation", {"httpResponse": {"statusCode": 200}})[0], 400)


if __name__ == "__main__":
    unittest.main()
