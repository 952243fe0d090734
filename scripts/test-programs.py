#!/usr/bin/env python3
"""Runs every test program of the workspace, as `cargo test --workspace --no-fail-fast` does,
with some programs beside the others instead of after them.

    scripts/test-programs.py [--beside PACKAGE:TARGET]... [-- CARGO_TEST_ARGS...]

Builds every test program once (`cargo test --workspace --no-run`), starts the programs named
by `--beside` (a package and a test target, e.g. `vnfm-infra-openstack:integration`) in the
background with their output kept in a file, runs every other program one after the other
with its output shown, then the documentation tests (`cargo test --workspace --doc`), waits
for the background programs and prints their output. The plugin libraries and binaries that
build made are gathered in `target/<profile>/built-for-tests` (VNFM_TEST_BUILT_DIR) for the
tests that load or run them. Each program runs as Cargo runs it: in
its package's directory, with Cargo's variables (CARGO, CARGO_MANIFEST_DIR, CARGO_PKG_NAME,
...). A program whose tests mostly wait on a service (the OpenStack test cloud) then overlaps
with programs that use the CPU.

Why not two `cargo test` commands: `cargo test -p PACKAGE` and `--exclude PACKAGE` resolve the
dependencies' features for another set of packages than `--workspace`, so each builds much of
the workspace again.

Exits non-zero when any program (or the build) failed, after every program has run; the last
lines list each program's result and duration.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time


def _rustc(*args):
    return subprocess.run(["rustc", *args], stdout=subprocess.PIPE, text=True, check=True).stdout.strip()


# Where the toolchain's standard library for this host is (a proc-macro crate's test program
# links it dynamically).
SYSROOT_LIB = os.path.join(
    _rustc("--print", "sysroot"),
    "lib",
    "rustlib",
    next(l.split(": ", 1)[1] for l in _rustc("-vV").splitlines() if l.startswith("host: ")),
    "lib",
)


def build(cargo_args):
    """Builds every test program; returns one dict per program (manifest, target, src, exe),
    and the plugin libraries and binaries the build made (file name -> path)."""
    cmd = ["cargo", "test", "--workspace", "--no-run", "--message-format=json-render-diagnostics"]
    proc = subprocess.run(cmd + cargo_args, stdout=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        sys.exit(f"test-programs.py: `{' '.join(cmd + cargo_args)}` failed ({proc.returncode})")
    programs = []
    built = {}
    for line in proc.stdout.splitlines():
        try:
            msg = json.loads(line)
        except json.JSONDecodeError:
            continue
        if msg.get("reason") != "compiler-artifact":
            continue
        if not msg.get("profile", {}).get("test"):
            kinds = msg["target"]["kind"]
            if "cdylib" in kinds:
                built.update((os.path.basename(f), f) for f in msg["filenames"] if f.endswith(".so"))
            elif "bin" in kinds and msg.get("executable"):
                built[os.path.basename(msg["executable"])] = msg["executable"]
            continue
        if not msg.get("executable"):
            continue
        manifest = msg["manifest_path"]
        target = msg["target"]
        programs.append(
            {
                "manifest": manifest,
                "target": target["name"],
                "src": os.path.relpath(target["src_path"], os.path.dirname(manifest)),
                "exe": msg["executable"],
            }
        )
    # Cargo's order: by package, then the library's tests, then the others by source.
    programs.sort(key=lambda p: (p["manifest"], p["src"] != "src/lib.rs", p["src"]))
    return programs, built


def gather(built, into):
    """Links (or copies) the built plugin libraries and binaries into directory `into` under
    their usual names, for the tests that load or run them (VNFM_TEST_BUILT_DIR): a test's
    own `cargo build -p ...` of them would resolve features for those packages only and
    build much of the workspace again."""
    shutil.rmtree(into, ignore_errors=True)
    os.makedirs(into)
    for name, path in built.items():
        try:
            os.link(path, os.path.join(into, name))
        except OSError:
            shutil.copy2(path, os.path.join(into, name))


def package_names(cargo_args):
    """Maps each workspace package's manifest path to (name, version) from `cargo metadata`."""
    meta = subprocess.run(
        ["cargo", "metadata", "--format-version=1", "--no-deps"] + [a for a in cargo_args if a == "--locked"],
        stdout=subprocess.PIPE,
        text=True,
        check=True,
    )
    return {p["manifest_path"]: (p["name"], p["version"]) for p in json.loads(meta.stdout)["packages"]}


def environment(program, names):
    """Cargo's variables for a test program of this package, as `cargo test` sets them."""
    env = dict(os.environ)
    name, version = names[program["manifest"]]
    major, minor, patch = (version.split("-")[0].split(".") + ["0", "0"])[:3]
    deps = os.path.dirname(program["exe"])
    # As Cargo does: the build's own libraries and the toolchain's (a proc-macro crate's test
    # program links the standard library dynamically).
    libs = [deps, os.path.dirname(deps), SYSROOT_LIB, env.get("LD_LIBRARY_PATH", "")]
    env.update(
        {
            "CARGO": env.get("CARGO") or shutil.which("cargo") or "cargo",
            "CARGO_MANIFEST_DIR": os.path.dirname(program["manifest"]),
            "CARGO_MANIFEST_PATH": program["manifest"],
            "CARGO_PKG_NAME": name,
            "CARGO_PKG_VERSION": version,
            "CARGO_PKG_VERSION_MAJOR": major,
            "CARGO_PKG_VERSION_MINOR": minor,
            "CARGO_PKG_VERSION_PATCH": patch,
            "CARGO_CRATE_NAME": program["target"].replace("-", "_"),
            "LD_LIBRARY_PATH": os.pathsep.join(p for p in libs if p),
        }
    )
    program["name"] = name
    return env


def start(program, names, test_args, out):
    rel = os.path.relpath(program["exe"])
    print(f"     Running {program['src']} ({rel})", file=out, flush=True)
    return subprocess.Popen(
        [program["exe"]] + test_args,
        cwd=os.path.dirname(program["manifest"]),
        env=environment(program, names),
        stdout=out,
        stderr=subprocess.STDOUT,
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--beside", action="append", default=[], metavar="PACKAGE:TARGET")
    parser.add_argument("--locked", action="store_true")
    parser.add_argument("test_args", nargs="*", help="arguments for every test program (after --)")
    args = parser.parse_args()
    cargo_args = ["--locked"] if args.locked else []

    programs, built = build(cargo_args)
    if programs:
        # Beside the test programs' directory (target/<profile>/deps), in the target directory.
        built_dir = os.path.join(os.path.dirname(os.path.dirname(programs[0]["exe"])), "built-for-tests")
        gather(built, built_dir)
        os.environ["VNFM_TEST_BUILT_DIR"] = built_dir
    names = package_names(cargo_args)
    beside_keys = {tuple(b.split(":", 1)) for b in args.beside}
    found = {(names[p["manifest"]][0], p["target"]) for p in programs}
    for key in beside_keys - found:
        sys.exit(f"test-programs.py: no test program {key[0]}:{key[1]} in the workspace")

    results = []
    background = []
    for p in programs:
        if (names[p["manifest"]][0], p["target"]) in beside_keys:
            log = tempfile.TemporaryFile(mode="w+")
            proc = start(p, names, args.test_args, log)
            ended = {}
            # Its duration ends when it does, not when it is waited for.
            waiter = threading.Thread(target=lambda proc=proc, ended=ended: ended.update(at=(proc.wait(), time.monotonic())[1]))
            waiter.start()
            background.append((p, proc, log, time.monotonic(), waiter, ended))

    for p in programs:
        if (names[p["manifest"]][0], p["target"]) in beside_keys:
            continue
        began = time.monotonic()
        code = start(p, names, args.test_args, sys.stdout).wait()
        results.append((p, code, time.monotonic() - began, False))

    began = time.monotonic()
    doc = subprocess.run(["cargo", "test", "--workspace", "--doc", "--no-fail-fast"] + cargo_args + ["--"] + args.test_args)
    doc_result = (doc.returncode, time.monotonic() - began)

    for p, proc, log, began, waiter, ended in background:
        waiter.join()
        results.append((p, proc.returncode, ended["at"] - began, True))
        log.seek(0)
        print(f"\n== output of {p['name']} {p['src']} (ran beside the others)", flush=True)
        sys.stdout.write(log.read())

    print("\n== test programs: result and duration")
    failed = 0
    for p, code, secs, beside in results:
        state = "ok" if code == 0 else f"FAILED ({code})"
        failed += code != 0
        note = ", beside the others" if beside else ""
        print(f"{p['name']} {p['src']}: {state}, {secs:.0f} s{note}")
    print(f"doc tests: {'ok' if doc_result[0] == 0 else 'FAILED'}, {doc_result[1]:.0f} s")
    failed += doc_result[0] != 0
    if failed:
        print(f"test-programs.py: {failed} program(s) failed", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
