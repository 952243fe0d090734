#!/usr/bin/env python3
"""A small stand-in for MockServer 5.5 (mock-server.com) on loopback.

The ETSI notification suites drive a MockServer through robotframework-mockserver: they
create expectations (`PUT /expectation`), let the VNFM under test send notifications to the
mocked endpoint, then check what arrived (`PUT /verify`) and clean up (`PUT /clear`). The
real MockServer is a Java jar that is not available from the package registries here, so this
module implements the part of its REST API those suites use, with MockServer's semantics:

* every request that is not a control request is recorded, then answered by the first active
  expectation whose request matcher matches it (method, path, optional headers, query
  parameters and body), or with 404 when none matches;
* an expectation answers with `httpResponse` (status, headers, body, delay) or
  `httpOverrideForwardedRequest`, which re-sends the request with the overridden fields
  (here: to this same server, as MockServer does when the Host header names itself);
* `times` limits how often an expectation answers (`unlimited` or `remainingTimes`);
* body matchers: `JSON` (`matchType` `STRICT` or `ONLY_MATCHING_FIELDS`, compared like
  JSONAssert's STRICT and LENIENT modes), `JSON_SCHEMA` (validated with `jsonschema`),
  `STRING`, `SUB_STRING` (`subString: true`) and `REGEX`; a bare string body matches exactly;
* `/verify` answers 202 when the number of recorded matching requests is within
  `times.atLeast`/`times.atMost`, else 406 with the reason; `/verifySequence` likewise;
* `/clear` drops the recorded requests and the expectations that match the given request
  matcher (`?type=log` or `?type=expectations` restricts it); `/reset` drops everything;
* `/retrieve` returns recorded requests (default), `active_expectations` or `recorded_expectations`.

Control paths are served both bare (`/expectation`, as robotframework-mockserver 0.0.7 calls
them) and under `/mockserver/`. Run: `python3 mockserver.py --port N` (127.0.0.1 only).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

try:  # Only the JSON_SCHEMA body matcher needs it; the conformance venv installs it.
    import jsonschema
except ImportError:  # pragma: no cover - reported when such a matcher is used
    jsonschema = None

CONTROL = {
    "expectation",
    "verify",
    "verifySequence",
    "clear",
    "reset",
    "retrieve",
    "status",
    "stop",
    "bind",
}


class Recorded:
    """A request the stub received."""

    def __init__(self, method, path, query, headers, body):
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body

    def as_json(self):
        doc = {
            "method": self.method,
            "path": self.path,
            "headers": [{"name": k, "values": [v]} for k, v in self.headers],
            "keepAlive": True,
            "secure": False,
        }
        if self.query:
            doc["queryStringParameters"] = [
                {"name": k, "values": v} for k, v in self.query.items()
            ]
        if self.body:
            text = self.body.decode("utf-8", "replace")
            try:
                doc["body"] = {"type": "JSON", "json": json.loads(text)}
            except ValueError:
                doc["body"] = {"type": "STRING", "string": text}
        return doc


def json_equal(expected, actual, strict):
    """JSONAssert semantics: STRICT (exact, ordered arrays, no extra fields) or LENIENT
    (extra object fields allowed, arrays compared without order but with equal length)."""
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return False
        if strict and set(expected) != set(actual):
            return False
        return all(k in actual and json_equal(v, actual[k], strict) for k, v in expected.items())
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(expected) != len(actual):
            return False
        if strict:
            return all(json_equal(e, a, strict) for e, a in zip(expected, actual))
        unused = list(actual)
        for e in expected:
            for i, a in enumerate(unused):
                if json_equal(e, a, strict):
                    del unused[i]
                    break
            else:
                return False
        return True
    if isinstance(expected, bool) or isinstance(actual, bool):
        return expected is actual
    return expected == actual


def text_matches(pattern, value):
    """MockServer matches strings by equality, else as a regular expression."""
    if pattern is None:
        return True
    if value is None:
        return False
    if pattern == value:
        return True
    try:
        return re.fullmatch(pattern, value) is not None
    except re.error:
        return False


def body_matches(matcher, body: bytes):
    if matcher is None:
        return True
    text = body.decode("utf-8", "replace") if body else ""
    if isinstance(matcher, str):
        return matcher == text
    kind = matcher.get("type", "STRING")
    negate = matcher.get("not", False)
    if kind == "JSON":
        expected = matcher.get("json")
        if isinstance(expected, str):
            try:
                expected = json.loads(expected)
            except ValueError:
                return negate
        try:
            actual = json.loads(text)
        except ValueError:
            return negate
        strict = matcher.get("matchType", "ONLY_MATCHING_FIELDS") == "STRICT"
        result = json_equal(expected, actual, strict)
    elif kind == "JSON_SCHEMA":
        schema = matcher.get("jsonSchema")
        if isinstance(schema, str):
            schema = json.loads(schema)
        if jsonschema is None:
            raise RuntimeError("the jsonschema module is needed for JSON_SCHEMA matchers")
        try:
            actual = json.loads(text)
        except ValueError:
            return negate
        result = jsonschema.validators.validator_for(schema)(schema).is_valid(actual)
    elif kind == "STRING":
        expected = matcher.get("string", "")
        result = expected in text if matcher.get("subString") else expected == text
    elif kind == "REGEX":
        result = re.fullmatch(matcher.get("regex", ""), text) is not None
    else:
        raise ValueError(f"unsupported body matcher type {kind!r}")
    return result != negate


def multi_values(entries):
    """Headers / query parameters in MockServer's list or object notation -> {name: [values]}."""
    if entries is None:
        return {}
    if isinstance(entries, dict):
        return {k: v if isinstance(v, list) else [v] for k, v in entries.items()}
    return {e["name"]: e.get("values", []) for e in entries}


def request_matches(matcher, req: Recorded):
    if not matcher:
        return True
    if "method" in matcher and not text_matches(matcher["method"], req.method):
        return False
    if "path" in matcher and not text_matches(matcher["path"], req.path):
        return False
    for name, values in multi_values(matcher.get("headers")).items():
        got = [v for k, v in req.headers if k.lower() == name.lower()]
        if not all(any(text_matches(p, g) for g in got) for p in values):
            return False
    for name, values in multi_values(matcher.get("queryStringParameters")).items():
        got = req.query.get(name, [])
        if not all(any(text_matches(p, g) for g in got) for p in values):
            return False
    return body_matches(matcher.get("body"), req.body)


def delay_seconds(delay):
    if not delay:
        return 0.0
    unit = delay.get("timeUnit", "MILLISECONDS").upper()
    scale = {"MILLISECONDS": 0.001, "SECONDS": 1.0, "MINUTES": 60.0, "MICROSECONDS": 1e-6}
    return float(delay.get("value", 0)) * scale.get(unit, 0.001)


class Mock:
    """The stub's state: expectations and recorded requests."""

    def __init__(self):
        self.lock = threading.Lock()
        self.expectations = []
        self.requests = []

    def add_expectation(self, doc):
        docs = doc if isinstance(doc, list) else [doc]
        for d in docs:
            if not isinstance(d, dict) or "httpRequest" not in d:
                raise ValueError("an expectation needs httpRequest")
            actions = [k for k in ("httpResponse", "httpOverrideForwardedRequest", "httpForward", "httpError") if k in d]
            if len(actions) != 1:
                raise ValueError("an expectation needs exactly one action")
            response = d.get("httpResponse")
            if response is not None and not isinstance(response.get("statusCode", 200), int):
                raise ValueError("httpResponse.statusCode must be an integer")
            # Validate matchers now, as MockServer rejects malformed expectations.
            body = d["httpRequest"].get("body")
            if isinstance(body, dict) and body.get("type") == "JSON_SCHEMA":
                schema = body.get("jsonSchema")
                json.loads(schema) if isinstance(schema, str) else schema
            times = d.get("times") or {"unlimited": True}
            entry = {"doc": d, "remaining": None if times.get("unlimited", False) else int(times.get("remainingTimes", 1))}
            with self.lock:
                self.expectations.append(entry)

    def match(self, req):
        with self.lock:
            for entry in self.expectations:
                if request_matches(entry["doc"]["httpRequest"], req):
                    if entry["remaining"] is not None:
                        entry["remaining"] -= 1
                        if entry["remaining"] <= 0:
                            self.expectations.remove(entry)
                    return entry["doc"]
        return None

    def record(self, req):
        with self.lock:
            self.requests.append(req)

    def count(self, matcher):
        with self.lock:
            return sum(1 for r in self.requests if request_matches(matcher, r))

    def clear(self, matcher, what):
        with self.lock:
            if what in ("all", "log"):
                self.requests = [r for r in self.requests if not request_matches(matcher, r)]
            if what in ("all", "expectations"):
                self.expectations = [
                    e for e in self.expectations if not same_target(matcher, e["doc"]["httpRequest"])
                ]

    def reset(self):
        with self.lock:
            self.expectations = []
            self.requests = []


def same_target(clear_matcher, expectation_matcher):
    """Whether `/clear` with `clear_matcher` removes an expectation for `expectation_matcher`."""
    if not clear_matcher:
        return True
    for key in ("method", "path"):
        if key in clear_matcher and clear_matcher[key] != expectation_matcher.get(key):
            return False
    return True


def make_handler(mock: Mock):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "vnfm-conformance-mockserver"

        def log_message(self, fmt, *args):  # quiet: the run script keeps its own log
            if getattr(self.server, "verbose", False):
                sys.stderr.write("mockserver: " + fmt % args + "\n")

        def reply(self, status, body=b"", headers=None):
            if isinstance(body, (dict, list)):
                body = json.dumps(body).encode()
                headers = dict(headers or {})
                headers.setdefault("Content-Type", "application/json")
            elif isinstance(body, str):
                body = body.encode()
            self.send_response(status)
            for k, v in (headers or {}).items():
                for value in v if isinstance(v, list) else [v]:
                    self.send_header(k, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def handle_any(self):
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            url = urlsplit(self.path)
            path = url.path
            name = path[len("/mockserver"):] if path.startswith("/mockserver/") else path
            name = name.lstrip("/")
            if self.command == "PUT" and name in CONTROL:
                return self.control(name, parse_qs(url.query), body)
            req = Recorded(self.command, path, parse_qs(url.query), list(self.headers.items()), body)
            status, headers, payload = self.serve(req, depth=0)
            self.reply(status, payload, headers)

        def serve(self, req, depth):
            mock.record(req)
            expectation = mock.match(req)
            if expectation is None:
                return 404, {}, b""
            if "httpOverrideForwardedRequest" in expectation:
                action = expectation["httpOverrideForwardedRequest"]
                time.sleep(delay_seconds(action.get("delay")))
                override = action.get("httpRequest") or {}
                forwarded = Recorded(
                    override.get("method", req.method),
                    override.get("path", req.path),
                    req.query,
                    req.headers,
                    req.body,
                )
                if depth > 5:
                    return 508, {}, b"forwarding loop"
                return self.serve(forwarded, depth + 1)
            if "httpError" in expectation:
                return 500, {}, b""
            if "httpForward" in expectation:
                return 501, {}, b"httpForward to other hosts is not supported by this stub"
            response = expectation["httpResponse"]
            time.sleep(delay_seconds(response.get("delay")))
            headers = {k: v for k, v in multi_values(response.get("headers")).items()}
            payload = response.get("body", b"")
            if isinstance(payload, dict):
                if payload.get("type") == "JSON":
                    payload = payload.get("json", "")
                    if not isinstance(payload, str):
                        payload = json.dumps(payload)
                else:
                    payload = payload.get("string", "")
            return int(response.get("statusCode", 200)), headers, payload

        def control(self, name, query, body):
            try:
                doc = json.loads(body) if body else {}
            except ValueError as e:
                return self.reply(400, f"incorrect request format: {e}")
            kind = (query.get("type") or ["all"])[0].lower()
            try:
                if name == "expectation":
                    mock.add_expectation(doc)
                    return self.reply(201)
                if name == "verify":
                    matcher = doc.get("httpRequest") or {}
                    times = doc.get("times") or {"atLeast": 1}
                    n = mock.count(matcher)
                    low = times.get("atLeast")
                    high = times.get("atMost")
                    if (low is not None and n < low) or (high is not None and n > high):
                        return self.reply(
                            406,
                            f"Request not found {json.dumps(times)} times, expected:<{json.dumps(matcher)}> but was received {n} times",
                        )
                    return self.reply(202)
                if name == "verifySequence":
                    matchers = doc.get("httpRequests") or []
                    with mock.lock:
                        recorded = list(mock.requests)
                    position = 0
                    for m in matchers:
                        while position < len(recorded) and not request_matches(m, recorded[position]):
                            position += 1
                        if position == len(recorded):
                            return self.reply(406, f"Request sequence not found, expected:<{json.dumps(matchers)}>")
                        position += 1
                    return self.reply(202)
                if name == "clear":
                    mock.clear(doc, kind if kind in ("log", "expectations") else "all")
                    return self.reply(200)
                if name == "reset":
                    mock.reset()
                    return self.reply(200)
                if name == "retrieve":
                    if kind in ("active_expectations", "recorded_expectations"):
                        with mock.lock:
                            items = [e["doc"] for e in mock.expectations]
                        return self.reply(200, items)
                    with mock.lock:
                        items = [r.as_json() for r in mock.requests if request_matches(doc, r)]
                    return self.reply(200, items)
                if name == "status":
                    return self.reply(200, {"ports": [self.server.server_address[1]]})
                return self.reply(501, f"{name} is not supported by this stub")
            except (ValueError, KeyError, TypeError, RuntimeError) as e:
                return self.reply(400, f"incorrect {name} format: {e}")

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = handle_any

    return Handler


def serve(port, verbose=False, ready=None):
    """Runs the stub on 127.0.0.1:`port` until the process ends (`port` 0: any free port)."""
    mock = Mock()
    server = ThreadingHTTPServer(("127.0.0.1", port), make_handler(mock))
    server.daemon_threads = True
    server.verbose = verbose
    if ready is not None:
        ready(server.server_address[1])
    server.serve_forever()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, default=1080)
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()

    def announce(port):
        print(f"mockserver listening on 127.0.0.1:{port}", flush=True)

    serve(args.port, args.verbose, announce)


if __name__ == "__main__":
    main()
