#!/usr/bin/env python3
"""Runs the ETSI SOL003 v2.6.1 conformance suites (lifecycle, package, fault management and
VNF indicator APIs) against `vnfm serve` and compares the
per-test outcomes with `expected.tsv`.

Steps: start the MockServer stub (in this process) and `vnfm serve` (loopback, free port,
temporary data directory, `--enable-test-vim`), get a token, onboard the conformance package,
copy each API's suite folder to a work directory (patching only environment-specific values of
its request bodies, see PATCHES), then for every suite file: seed what it expects
(`seeding.suite_variables`), run `robot` from the suite's folder with the variable overrides
and the pre-condition listener, collect the outcomes, and clean up. Finally print a summary
and exit non-zero when an outcome differs from the expected list.

Normally started by `run.sh`, which provides the virtualenv and the binary.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent.parent / "scripts" / "test-env"))

import mockserver  # noqa: E402
from free_ports import free_ports  # noqa: E402
import seeding  # noqa: E402
from vnfm_client import SeedError, Vnfm, build_package  # noqa: E402

APIS = (
    seeding.LCM,
    seeding.PKGM,
    seeding.FM,
    seeding.IND,
    seeding.PM,
    # SOL002's VNFIndicator-API is left out: it tests the EM or VNF as the producer of
    # indicators (EM-VNF_HOST), which a VNFM consumes.
    seeding.SOL002_FM,
    seeding.SOL002_PM,
)
PM_APIS = (seeding.PM, seeding.SOL002_PM)
# Performance management measures through Prometheus: the server gets the test Prometheus
# (scripts/test-env/prometheus.sh, started by scripts/test.sh) with a constant PromQL for the
# metric the seeded PM jobs collect, so that reports exist. Without it the PM suites are
# skipped, saying so.
PROMETHEUS_URL = os.environ.get("VNFM_TEST_PROMETHEUS_URL")
# Files in the suite folders that hold keywords only.
NOT_SUITES = {
    "VnfLcmMntOperationKeywords",
    "SubscriptionKeywords",
    "VNFPackageManagementKeywords",
    "FaultManagement-APIKeyword",
    "VNFIndicatorsKeywords",
    "VNFPerformanceManagementKeywords",
}


def start_stub():
    ready = threading.Event()
    port = []

    def announce(p):
        port.append(p)
        ready.set()

    threading.Thread(target=mockserver.serve, args=(0, False, announce), daemon=True).start()
    if not ready.wait(10):
        raise SeedError("the MockServer stub did not start")
    return port[0]


def start_server(binary, data_dir, log_path):
    (port,) = free_ports(1)
    cmd = [
        str(binary),
        "serve",
        "--listen",
        f"127.0.0.1:{port}",
        "--data-dir",
        str(data_dir),
        "--enable-test-vim",
        # SOL003 lets a VNFM create duplicate subscriptions or answer 303 See Other; the
        # suite's configuration (VNFM_DUPLICATION, see seeding.base_variables) says which.
        "--allow-duplicate-lcm-subscriptions",
        "--log-level",
        "warn",
    ]
    if PROMETHEUS_URL:
        promql = Path(data_dir).parent / "promql.json"
        promql.write_text(json.dumps({seeding.PM_METRIC: {"Vnf": seeding.PM_PROMQL}}))
        cmd += ["--prometheus-url", PROMETHEUS_URL, "--promql-file", str(promql), "--pm-threshold-period", "1"]
    log = open(log_path, "w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    probe = Vnfm(base)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SeedError(f"vnfm serve exited with {proc.returncode}; see {log_path}")
        try:
            if probe.call("GET", "/readyz", timeout=2).status == 200:
                return proc, port
        except OSError:
            pass
        time.sleep(0.1)
    proc.kill()
    raise SeedError(f"vnfm serve did not become ready; see {log_path}")


# Request bodies of the suites that carry values only a real deployment can supply: where the
# notifications go (the NFVO's address) and which VIM to use. They are rewritten in the work
# copy; everything else of the corpus is used as it is.
def patch_lcm_jsons(jsons: Path, stub: str):
    def edit(name, change):
        path = jsons / name
        doc = json.loads(path.read_text())
        change(doc)
        path.write_text(json.dumps(doc, indent=2))

    vim = [{"id": "vim1", "vimType": "TEST.NOOP.V_1", "interfaceInfo": {}, "accessInfo": {}, "extra": {}}]

    def lccn(doc):
        doc["callbackUri"] = stub + "/notification"

    def instantiate(doc):
        # The VIM, and the VNFD's connection point and virtual link ids ("string" in the corpus).
        doc["vimConnectionInfo"] = vim
        for link in doc.get("extVirtualLinks", []):
            link["vimConnectionId"] = "vim1"
            for cp in link.get("extCps", []):
                cp["cpdId"] = seeding.EXT_CPD_ID
        for link in doc.get("extManagedVirtualLinks", []):
            link["vimConnectionId"] = "vim1"
            link["virtualLinkDescId"] = seeding.INTERNAL_VLD_ID

    edit("lccnSubscriptionRequest.json", lccn)
    edit("instantiateVnfRequest.json", instantiate)
    edit("changeExtVnfConnectivityRequest.json", instantiate)


def patch_pkgm_jsons(jsons: Path, stub: str):
    path = jsons / "subscriptions.json"
    doc = json.loads(path.read_text())
    doc["callbackUri"] = stub + "/vnfpkgm/subscriptions"
    path.write_text(json.dumps(doc, indent=2))


def patch_fm_jsons(jsons: Path, stub: str):
    path = jsons / "fmSubscriptionRequest.json"
    doc = json.loads(path.read_text())
    doc["callbackUri"] = stub + "/fm/subscriptions"
    path.write_text(json.dumps(doc, indent=2))


def patch_ind_jsons(jsons: Path, stub: str):
    path = jsons / "subscriptions.json"
    doc = json.loads(path.read_text())
    doc["callbackUri"] = stub + "/vnfind/subscriptions"
    path.write_text(json.dumps(doc, indent=2))


def patch_pm_jsons(jsons: Path, stub: str):
    path = jsons / "subscriptions.json"
    doc = json.loads(path.read_text())
    doc["callbackUri"] = stub + "/vnfpm/subscriptions"
    path.write_text(json.dumps(doc, indent=2))


PATCHES = {
    seeding.LCM: patch_lcm_jsons,
    seeding.PKGM: patch_pkgm_jsons,
    seeding.FM: patch_fm_jsons,
    seeding.IND: patch_ind_jsons,
    seeding.PM: patch_pm_jsons,
    # Callbacks of their own, so that the SOL002 suites' subscriptions are not duplicates of
    # those the SOL003 suites left.
    seeding.SOL002_FM: lambda jsons, stub: patch_fm_jsons(jsons, stub + "/sol002"),
    seeding.SOL002_PM: lambda jsons, stub: patch_pm_jsons(jsons, stub + "/sol002"),
}


def suite_dir(corpus: str, api: str) -> Path:
    """The folder of `api`'s suites: under the SOL003 corpus, or beside it for `SOL002/...`."""
    root = Path(corpus)
    return root.parent / api if api.startswith("SOL002/") else root / api


def java_shim(bin_dir: Path):
    """The notification suites start MockServer with `java -jar <jar>`; the stub already runs,
    so `java` is a no-op for the suites (the real jar is not installable here)."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    shim = bin_dir / "java"
    shim.write_text("#!/bin/sh\n# MockServer is provided by tests/conformance/mockserver.py\nexit 0\n")
    shim.chmod(0o755)


def parse_output(xml_path: Path, api: str, suite: str):
    """Per-test outcomes from Robot's output.xml."""
    out = []
    if not xml_path.exists():
        return out
    root = ET.parse(xml_path).getroot()
    for test in root.iter("test"):
        doc = test.findtext("doc") or ""
        tid = ""
        for line in doc.splitlines():
            if "Test ID:" in line:
                tid = line.split("Test ID:", 1)[1].strip()
                break
        status = test.find("status")
        out.append(
            {
                "id": tid,
                "suite": f"{api}/{suite}",
                "name": test.get("name", "").strip(),
                "status": status.get("status") if status is not None else "FAIL",
                "message": (status.text or "").strip() if status is not None else "",
            }
        )
    return out


def run_suite(robot, work: Path, api: str, suite: str, variables: dict, state_file: Path, env, out_dir: Path):
    stem = api.replace("/", "-")
    xml_path = out_dir / f"{stem}-{suite}.xml"
    cmd = [str(robot), "--listener", f"{HERE / 'preconditions.py'}:{state_file}"]
    cmd += ["--output", str(xml_path), "--log", "NONE", "--report", "NONE", "--console", "none"]
    for k, v in variables.items():
        cmd += ["--variable", f"{k}:{v}"]
    cmd.append(f"{suite}.robot")
    log = out_dir / f"{stem}-{suite}.log"
    with open(log, "w") as f:
        subprocess.run(cmd, cwd=work / api, env=env, stdout=f, stderr=subprocess.STDOUT, timeout=1800)
    return parse_output(xml_path, api, suite)


def load_expected(path: Path):
    expected = {}
    if not path.exists():
        return expected
    with open(path, newline="") as f:
        for row in csv.reader(f, delimiter="\t"):
            if not row or row[0].startswith("#") or row[0] == "id":
                continue
            tid, suite, name, status = row[:4]
            reason = row[4] if len(row) > 4 else ""
            expected[(suite, tid, name)] = (status, reason)
    return expected


def write_expected(path: Path, results, old):
    """Rewrites the list from `results`, keeping the reasons already written."""
    with open(path, "w", newline="") as f:
        f.write("# Expected outcome of every ETSI SOL003 and SOL002 v2.6.1 conformance test (see docs/conformance.md).\n")
        f.write("# Columns: test id, suite, test name, PASS/FAIL, reason (every FAIL has one).\n")
        w = csv.writer(f, delimiter="\t", lineterminator="\n")
        w.writerow(["id", "suite", "name", "expected", "reason"])
        for r in results:
            key = (r["suite"], r["id"], r["name"])
            reason = old.get(key, ("", ""))[1] if r["status"] == "FAIL" else ""
            if r["status"] == "FAIL" and not reason:
                reason = "UNEXPLAINED: " + r["message"].replace("\t", " ").replace("\n", " ")[:200]
            w.writerow([r["id"], r["suite"], r["name"], r["status"], reason])


def markdown_table(path: Path):
    """The expected failures grouped by reason, as the Markdown table of docs/conformance.md."""
    groups = {}
    for (suite, tid, name), (status, reason) in load_expected(path).items():
        if status == "FAIL":
            groups.setdefault(reason, []).append(tid)

    def order(tid):
        return [int(x) for x in tid.split(".") if x.isdigit()]

    lines = ["| tests | n | reason |", "|---|---|---|"]
    for reason, ids in sorted(groups.items(), key=lambda kv: (-len(kv[1]), order(min(kv[1], key=order)))):
        ids = sorted(ids, key=order)
        lines.append(f"| {', '.join(ids)} | {len(ids)} | {reason.replace('|', '/')} |")
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--vnfm", help="the vnfm binary")
    p.add_argument("--robot", help="the robot executable of the virtualenv")
    p.add_argument("--corpus", help="the api-tests/SOL003 folder of the corpus")
    p.add_argument("--expected", default=str(HERE / "expected.tsv"))
    p.add_argument("--work", help="work directory (default: a new temporary one, removed at the end)")
    p.add_argument("--suite", action="append", default=[], help="run only these suite files (repeatable)")
    p.add_argument("--update-expected", action="store_true", help="rewrite expected.tsv from this run")
    p.add_argument("--markdown-table", action="store_true", help="print the expected failures as Markdown and exit")
    args = p.parse_args()
    if args.markdown_table:
        print(markdown_table(Path(args.expected)))
        return 0
    if not (args.vnfm and args.robot and args.corpus):
        p.error("--vnfm, --robot and --corpus are needed to run the suites")

    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="vnfm-conformance."))
    keep = bool(args.work)
    work.mkdir(parents=True, exist_ok=True)
    out_dir = work / "results"
    out_dir.mkdir(exist_ok=True)
    data_dir = work / "data"
    if data_dir.exists():
        shutil.rmtree(data_dir)
    started = time.monotonic()

    stub_port = start_stub()
    stub = f"http://127.0.0.1:{stub_port}"
    server, port = start_server(args.vnfm, data_dir, work / "vnfm.log")
    results = []
    try:
        vnfm = Vnfm(f"http://127.0.0.1:{port}")
        vnfm.login(data_dir / "credentials.json")
        package_dir = HERE / "package"
        content = build_package(package_dir)
        pkg, info = vnfm.onboard(content)
        single, _ = vnfm.onboard(build_package(HERE / "package-single"))
        vnfm.onboard(build_package(HERE / "package-indicators"))
        artifact = next(a for a in info.get("additionalArtifacts", []) if a["artifactPath"].startswith("Files/"))
        state = {
            "base": f"http://127.0.0.1:{port}",
            "host": "127.0.0.1",
            "port": port,
            "token": vnfm.token,
            "stub": stub,
            "stub_port": stub_port,
            "package": pkg,
            "single_package": single,
            "created_package": vnfm.create_package(),
            "artifact_path": artifact["artifactPath"],
            "artifact_size": (package_dir / artifact["artifactPath"]).stat().st_size,
            "package_size": len(content),
        }
        state_file = work / "state.json"
        state_file.write_text(json.dumps(state))
        # Every GET of a notification endpoint is answered 204, as a real NFVO does: the
        # VNFM tests callback URIs that way before creating subscriptions.
        vnfm_stub = Vnfm(stub)
        env = dict(os.environ)
        env["PATH"] = f"{work / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        java_shim(work / "bin")

        for api in APIS:
            if api in PM_APIS and not PROMETHEUS_URL:
                print(f"{api}: SKIPPED: VNFM_TEST_PROMETHEUS_URL is not set (scripts/test-env/prometheus.sh start)", flush=True)
                continue
            src = suite_dir(args.corpus, api)
            dst = work / api
            if dst.exists():
                shutil.rmtree(dst)
            shutil.copytree(src, dst)
            for p_ in dst.rglob("*"):
                p_.chmod(0o755 if p_.is_dir() else 0o644)
            PATCHES[api](dst / "jsons", stub)
            suites = sorted(f.stem for f in src.glob("*.robot") if f.stem not in NOT_SUITES)
            for suite in suites:
                if args.suite and suite not in args.suite:
                    continue
                vnfm_stub.call("PUT", "/reset", raw=b"")
                vnfm_stub.call(
                    "PUT",
                    "/expectation",
                    {"httpRequest": {"method": "GET"}, "httpResponse": {"statusCode": 204}, "times": {"unlimited": True}},
                )
                ctx = seeding.Ctx(state)
                t0 = time.monotonic()
                try:
                    variables = seeding.suite_variables(ctx, api, suite)
                except SeedError as e:
                    print(f"{api}/{suite}: seeding failed: {e}", flush=True)
                    variables = seeding.base_variables(ctx, api)
                got = run_suite(args.robot, work, api, suite, variables, state_file, env, out_dir)
                ctx.teardown()
                passed = sum(1 for r in got if r["status"] == "PASS")
                print(f"{api}/{suite}: {passed}/{len(got)} passed ({time.monotonic() - t0:.0f} s)", flush=True)
                results.extend(got)
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()

    return report(results, Path(args.expected), args, time.monotonic() - started, work, keep)


def report(results, expected_path, args, elapsed, work, keep):
    expected = load_expected(expected_path)
    if args.update_expected:
        write_expected(expected_path, results, expected)
        expected = load_expected(expected_path)
    seen = set()
    differences = []
    for r in results:
        key = (r["suite"], r["id"], r["name"])
        seen.add(key)
        want = expected.get(key)
        if want is None:
            differences.append(f"NEW      {r['id']:<12} {r['suite']}: {r['name']} -> {r['status']}: {r['message'][:160]}")
        elif want[0] != r["status"]:
            differences.append(
                f"CHANGED  {r['id']:<12} {r['suite']}: {r['name']}: expected {want[0]}, got {r['status']}: {r['message'][:160]}"
            )
    selected = [
        k
        for k in expected
        if (not args.suite or k[0].rsplit("/", 1)[1] in args.suite)
        and (PROMETHEUS_URL or not k[0].startswith(tuple(a + "/" for a in PM_APIS)))
    ]
    for key in selected:
        if key not in seen:
            differences.append(f"MISSING  {key[1]:<12} {key[0]}: {key[2]} (expected {expected[key][0]}, did not run)")
    for key in selected:
        status, reason = expected[key]
        if status == "FAIL" and (not reason.strip() or reason.startswith("UNEXPLAINED")):
            differences.append(f"NO REASON {key[1]:<11} {key[0]}: {key[2]}: every expected FAIL needs its reason")
    passed = sum(1 for r in results if r["status"] == "PASS")
    failed = len(results) - passed
    exp_pass = sum(1 for k in selected if expected[k][0] == "PASS")
    exp_fail = len(selected) - exp_pass
    print()
    for d in differences:
        print(d)
    print()
    print(f"ETSI SOL003 and SOL002 v2.6.1 conformance: {len(results)} tests in {elapsed:.0f} s")
    print(f"  expected: {exp_pass} PASS, {exp_fail} FAIL (documented in {expected_path.name})")
    print(f"  observed: {passed} PASS, {failed} FAIL; {len(differences)} differ from the expected list")
    if keep or differences:
        print(f"  Robot outputs: {work / 'results'}; server log: {work / 'vnfm.log'}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    # Matching outcomes count as passed, differences as failed.
    print(f"conformance: {max(len(results) - len(differences), 0)} passed, {len(differences)} failed")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
