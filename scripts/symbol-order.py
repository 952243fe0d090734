#!/usr/bin/env python3
"""Writes the link order of the functions `vnfm package validate` runs (crates/vnfm-cli/vnfm.order).

A one-shot `vnfm package validate` pays a page fault for every 64 KiB of program text it
touches for the first time. Left to itself the linker scatters the few hundred functions a
validation runs over the whole 4 MB text segment; listed in this file, lld places them side by
side (`--symbol-ordering-file`, see crates/vnfm-cli/build.rs). A stale list is harmless: names
that no longer exist are skipped, and functions not listed are laid out as usual.

Usage: scripts/symbol-order.py [VNFM_BINARY] [PACKAGE...]
  VNFM_BINARY  default target/dist/vnfm (build it first: cargo build --profile dist -p vnfm-cli)
  PACKAGE      default: a set of Tacker samples from ../shared/corpus and the repository's samples
Runs each package under valgrind's callgrind (instruction counts, no timing) and lists every
function of the binary that ran, hottest first.
"""
import collections
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "crates", "vnfm-cli", "vnfm.order")
CORPUS = os.path.join(ROOT, "..", "shared", "corpus", "tacker")
DEFAULT_PACKAGES = [
    os.path.join(CORPUS, p)
    for p in ("v2-vm-userdata-standard", "v1-vm-functional", "v2-cnf-instantiate-resources",
              "mgmt-k8s-cluster-v1", "etsi-getting-started", "v1-vm-single-file-vnfd-vnflcm3")
] + [os.path.join(ROOT, "vnfd-samples", p) for p in ("asd-sample", "vnf-a-k8s-cluster")]

NAME = re.compile(r"^(fn|ob|cfn|cob|fl|fi|fe|cfi|cfl)=\((\d+)\)(?: (.*))?$")


def self_costs(path, binary):
    """Self instruction counts by (mangled) function name, for functions of `binary`."""
    names = {"ob": {}, "fn": {}}
    costs = collections.Counter()
    ob = fn = None
    skip_next = False
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            m = NAME.match(line)
            if m:
                kind, ix, name = m.groups()
                table = "ob" if kind in ("ob", "cob") else "fn" if kind in ("fn", "cfn") else None
                if table is None:
                    continue
                if name is not None:
                    names[table][ix] = name
                if kind == "ob":
                    ob = names["ob"].get(ix)
                elif kind == "fn":
                    fn = names["fn"].get(ix)
                continue
            if line.startswith("calls="):
                skip_next = True  # the next cost line is the call's inclusive cost
                continue
            if line and (line[0].isdigit() or line[0] in "+-*"):
                if skip_next:
                    skip_next = False
                    continue
                if ob and os.path.realpath(ob) == binary and fn:
                    # callgrind marks recursion levels as `name'2`.
                    parts = line.split()
                    if len(parts) >= 2:
                        costs[re.sub(r"'\d+$", "", fn)] += int(parts[-1])
    return costs


def main():
    args = sys.argv[1:]
    binary = os.path.realpath(args[0] if args else os.path.join(ROOT, "target", "dist", "vnfm"))
    packages = args[1:] or [p for p in DEFAULT_PACKAGES if os.path.exists(p)]
    total = collections.Counter()
    with tempfile.TemporaryDirectory() as tmp:
        for i, pkg in enumerate(packages):
            out = os.path.join(tmp, f"{i}.callgrind")
            subprocess.run(["valgrind", "--tool=callgrind", "--demangle=no",
                            f"--callgrind-out-file={out}", binary, "package", "validate", pkg],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
            total.update(self_costs(out, binary))
    symbols = [name for name, _ in total.most_common() if not name.startswith("0x")]
    with open(OUT, "w") as f:
        f.write("".join(s + "\n" for s in symbols))
    print(f"{len(symbols)} functions from {len(packages)} packages written to {OUT}")


if __name__ == "__main__":
    main()
