#!/usr/bin/env python3
"""Checks the workspace's dependency graph against the layer rules of docs/architecture.md.

Reads `cargo metadata` (no network, no build) and fails when a crate depends on what its
layer must not see. Only normal dependencies count: tests and benches may use anything.

A violation that exists today and is being removed is listed in KNOWN with the reason; the
list may only shrink: a listed violation that is gone fails the check too, so that its entry
is deleted with the change that removed it.
"""

import json
import subprocess
import sys

HTTP = {"reqwest", "hyper", "hyper-util", "axum", "ureq", "http-body-util", "tower-http"}
SQL = {"sqlx", "sqlx-core", "rusqlite", "libsqlite3-sys", "tokio-postgres", "postgres"}
YAML = {"serde-saphyr", "granit-parser", "serde_yaml", "saphyr", "yaml-rust2"}
DRIVERS = {"vnfm-infra-openstack", "vnfm-infra-kubernetes", "vnfm-plugin-host"}
# Stands for every crate of the workspace (`vnfm` and `vnfm-*`) other than the one checked.
ANY_OF_OURS = "any crate of this workspace"

# (crate, forbidden dependencies, why)
RULES = [
    ("vnfm-lcm", HTTP, "the lifecycle core calls ports; HTTP clients live behind them"),
    ("vnfm-lcm", SQL, "the lifecycle core reaches storage through the Store trait"),
    ("vnfm-lcm", YAML, "descriptors reach the core parsed (vnfm-descriptor)"),
    ("vnfm-lcm", DRIVERS, "drivers are plugged in by the composition root"),
    ("vnfm-descriptor", HTTP | SQL | YAML, "the descriptor model is pure data"),
    ("vnfm-driver-api", HTTP | SQL | YAML | {"vnfm-lcm"}, "the driver contract is pure"),
    ("vnfm-infra-openstack", {"vnfm-lcm", "vnfm-api", "vnfm-store"}, "drivers never see the core"),
    ("vnfm-infra-kubernetes", {"vnfm-lcm", "vnfm-api", "vnfm-store"}, "drivers never see the core"),
    ("vnfm-plugin-host", {"vnfm-lcm", "vnfm-api", "vnfm-store"}, "drivers never see the core"),
    ("vnfm-plugin-sdk", {"vnfm-types", "vnfm-lcm", "vnfm-driver-api"}, "plugins build against the frozen wire format only"),
    ("vnfm-plugin-abi", ANY_OF_OURS, "the plugin ABI is frozen: nothing of ours may change it"),
    ("vnfm-plugin-host", {"vnfm-plugin-sdk"}, "the host speaks the ABI crate, not the author SDK"),
    ("vnfm-api", DRIVERS, "the REST facade receives an assembled Lcm"),
]

# (crate, dependency): why it is still there.
KNOWN = {
    ("vnfm-lcm", "reqwest"): "the notification deliverer, its OAuth2 client and the NFVO client "
    "still live in the core, until they move behind ports",
}


def main() -> int:
    out = subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--no-deps", "--offline"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    deps = {
        p["name"]: {d["name"] for d in p["dependencies"] if d["kind"] is None}
        for p in json.loads(out)["packages"]
    }
    found = set()
    failures = []
    ours = {name for name in deps if name.startswith("vnfm")}
    for crate, forbidden, why in RULES:
        if forbidden == ANY_OF_OURS:
            forbidden = ours - {crate}
        if crate not in deps:
            failures.append(f"{crate}: named by a layer rule but not in the workspace")
            continue
        for dep in sorted(deps[crate] & forbidden):
            found.add((crate, dep))
            if (crate, dep) not in KNOWN:
                failures.append(f"{crate} depends on {dep}: {why}")
    for crate, dep in sorted(set(KNOWN) - found):
        failures.append(
            f"{crate} no longer depends on {dep}: delete its entry from KNOWN in {sys.argv[0]}"
        )
    for line in failures:
        print(f"layer rule broken: {line}", file=sys.stderr)
    if not failures:
        print(f"layer rules hold ({len(KNOWN)} known violations left: "
              + ", ".join(f"{c} -> {d}" for c, d in sorted(KNOWN)) + ")")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
