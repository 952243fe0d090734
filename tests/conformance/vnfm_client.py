"""A small HTTP client for `vnfm serve`, used to seed the state the ETSI suites expect.

Only the standard library is used, so the same module serves the orchestrator
(`conformance.py`) and the Robot listener (`preconditions.py`) that runs inside `robot`.
Seeding goes through the public REST API (`/vnflcm/v1`, `/vnfpkgm/v1`), exactly as a client
would: nothing is written to the server's store behind its back.
"""

from __future__ import annotations

import io
import json
import time
import urllib.error
import urllib.request
import uuid
import zipfile
from hashlib import sha256
from pathlib import Path

# The VIM type that `vnfm serve --enable-test-vim` serves with its in-memory driver.
TEST_VIM_TYPE = "TEST.NOOP.V_1"
# Operation states in which an occurrence is still moving.
MOVING = {"STARTING", "PROCESSING", "ROLLING_BACK"}


class SeedError(RuntimeError):
    """Seeding failed: the server answered something the conformance set-up cannot use."""


class Reply:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body

    def json(self):
        try:
            return json.loads(self.body or b"null")
        except ValueError as e:
            raise SeedError(f"not JSON ({e}): {self.body[:300]!r}") from e

    def header(self, name):
        for k, v in self.headers:
            if k.lower() == name.lower():
                return v
        return None


class Vnfm:
    """A client of one running server: `base` is `http://127.0.0.1:PORT`."""

    def __init__(self, base, token=None):
        self.base = base.rstrip("/")
        self.token = token

    # ----- transport -----

    def call(self, method, path, body=None, headers=None, raw=None, timeout=30):
        data = None
        h = {"Accept": "application/json"}
        if self.token:
            h["Authorization"] = f"Bearer {self.token}"
        if body is not None:
            data = json.dumps(body).encode()
            h["Content-Type"] = "application/merge-patch+json" if method == "PATCH" else "application/json"
        if raw is not None:
            data = raw
        h.update(headers or {})
        req = urllib.request.Request(self.base + path, data=data, method=method, headers=h)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return Reply(r.status, list(r.headers.items()), r.read())
        except urllib.error.HTTPError as e:
            return Reply(e.code, list(e.headers.items()), e.read())

    def expect(self, status, method, path, body=None, **kw):
        r = self.call(method, path, body, **kw)
        if r.status != status:
            raise SeedError(
                f"{method} {path}: expected {status}, got {r.status}: {r.body[:500].decode('utf-8', 'replace')}"
            )
        return r

    def login(self, credentials_file):
        creds = json.loads(Path(credentials_file).read_text())
        form = (
            f"grant_type=client_credentials&client_id={creds['client_id']}"
            f"&client_secret={creds['client_secret']}"
        ).encode()
        r = self.call(
            "POST",
            "/oauth2/token",
            raw=form,
            headers={"Content-Type": "application/x-www-form-urlencoded"},
        )
        if r.status != 200:
            raise SeedError(f"token request failed: {r.status}")
        self.token = r.json()["access_token"]
        return self.token

    # ----- packages -----

    def create_package(self):
        return self.expect(201, "POST", "/vnfpkgm/v1/vnf_packages", {}).json()["id"]

    def onboard(self, content: bytes):
        pkg = self.create_package()
        self.expect(
            202,
            "PUT",
            f"/vnfpkgm/v1/vnf_packages/{pkg}/package_content",
            raw=content,
            headers={"Content-Type": "application/zip"},
            timeout=120,
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            info = self.expect(200, "GET", f"/vnfpkgm/v1/vnf_packages/{pkg}").json()
            if info.get("onboardingState") == "ONBOARDED":
                return pkg, info
            if info.get("onboardingState") not in ("PROCESSING", "UPLOADING", "CREATED"):
                raise SeedError(f"package {pkg} did not onboard: {json.dumps(info)[:800]}")
            time.sleep(0.05)
        raise SeedError(f"package {pkg} still processing after 120 s")

    # ----- instances and operations -----

    def create_instance(self, vnfd_id, name="conformance"):
        r = self.expect(
            201,
            "POST",
            "/vnflcm/v1/vnf_instances",
            {"vnfdId": vnfd_id, "vnfInstanceName": name, "vnfInstanceDescription": "seeded"},
        )
        return r.json()["id"]

    def task(self, instance, task, body, status=202):
        r = self.expect(status, "POST", f"/vnflcm/v1/vnf_instances/{instance}/{task}", body)
        location = r.header("Location") or ""
        return location.rsplit("/", 1)[-1]

    def op(self, op_id):
        return self.expect(200, "GET", f"/vnflcm/v1/vnf_lcm_op_occs/{op_id}").json()

    def wait(self, op_id, until=None, timeout=60):
        """Waits until the occurrence is in one of `until` (default: any state at rest)."""
        deadline = time.monotonic() + timeout
        while True:
            occ = self.op(op_id)
            state = occ.get("operationState")
            if (until and state in until) or (not until and state not in MOVING):
                return occ
            if time.monotonic() > deadline:
                raise SeedError(f"operation {op_id} is {state} after {timeout} s, waiting for {until or 'rest'}")
            time.sleep(0.02)

    def instantiate(self, instance, flavour="myFlavour", extra=None):
        body = {
            "flavourId": flavour,
            "vimConnectionInfo": [{"id": "vim1", "vimType": TEST_VIM_TYPE}],
        }
        body.update(extra or {})
        op_id = self.task(instance, "instantiate", body)
        return op_id

    def instance(self, instance):
        return self.expect(200, "GET", f"/vnflcm/v1/vnf_instances/{instance}").json()

    def subscribe(self, callback, filter_=None):
        body = {"callbackUri": callback}
        if filter_:
            body["filter"] = filter_
        r = self.call("POST", "/vnflcm/v1/subscriptions", body)
        if r.status not in (201, 303):
            raise SeedError(f"subscription to {callback}: {r.status}: {r.body[:300]!r}")
        if r.status == 303:
            return r.header("Location").rsplit("/", 1)[-1]
        return r.json()["id"]

    def unsubscribe(self, sub_id):
        self.call("DELETE", f"/vnflcm/v1/subscriptions/{sub_id}")


def not_existing():
    """An identifier no resource has."""
    return str(uuid.uuid4())


def build_package(directory: Path) -> bytes:
    """Zips a CSAR directory, writing its SOL004 manifest (`*.mf`, SHA-256 of every file)
    first, so the checked-in fixture needs no hand-maintained hashes."""
    directory = Path(directory)
    meta = (directory / "TOSCA-Metadata" / "TOSCA.meta").read_text()
    manifest_name = next(
        line.split(":", 1)[1].strip()
        for line in meta.splitlines()
        if line.startswith("ETSI-Entry-Manifest:")
    )
    files = sorted(
        p for p in directory.rglob("*") if p.is_file() and p.name != manifest_name and "TOSCA-Metadata" not in p.parts
    )
    top = next(p for p in files if p.name.endswith(".vnfd.yaml"))
    lines = [
        "metadata:",
        "  vnf_product_name: Conformance VNF",
        "  vnf_provider_id: ETSI",
        "  vnf_package_version: 1.0",
        "  vnf_release_date_time: 2026-01-01T00:00:00+00:00",
        "  vnfd_id: " + _vnfd_id(top.read_text()),
        "  compatible_specification_versions: 2.6.1",
        "",
    ]
    for p in files:
        rel = p.relative_to(directory).as_posix()
        lines += [f"Source: {rel}", "Algorithm: SHA-256", f"Hash: {sha256(p.read_bytes()).hexdigest()}", ""]
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.write(directory / "TOSCA-Metadata" / "TOSCA.meta", "TOSCA-Metadata/TOSCA.meta")
        z.writestr(manifest_name, "\n".join(lines))
        for p in files:
            z.write(p, p.relative_to(directory).as_posix())
    return buf.getvalue()


def _vnfd_id(text):
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("descriptor_id:") and line.split(":", 1)[1].strip():
            return line.split(":", 1)[1].strip()
    raise SeedError("the VNFD has no descriptor_id")
