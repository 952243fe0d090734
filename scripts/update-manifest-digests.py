#!/usr/bin/env python3
"""Rewrites the Hash: lines of a SOL004 manifest from the files it lists.

Usage: scripts/update-manifest-digests.py PACKAGE_DIR/MANIFEST.mf
Only `Source:` entries that are package files are updated; the algorithm of each entry is kept.
"""
import hashlib
import os
import sys

ALGORITHMS = {"SHA-256": "sha256", "SHA-384": "sha384", "SHA-512": "sha512"}


def main(manifest_path):
    root = os.path.dirname(os.path.abspath(manifest_path))
    lines = open(manifest_path, encoding="utf-8").read().split("\n")
    source = algorithm = None
    for i, line in enumerate(lines):
        key, _, value = line.partition(":")
        value = value.strip()
        if key == "Source":
            source, algorithm = value, None
        elif key == "Algorithm":
            algorithm = ALGORITHMS.get(value.upper().replace("SHA256", "SHA-256"))
        elif key == "Hash" and source and algorithm and "://" not in source:
            with open(os.path.join(root, source), "rb") as f:
                lines[i] = "Hash: " + hashlib.new(algorithm, f.read()).hexdigest()
    open(manifest_path, "w", encoding="utf-8").write("\n".join(lines))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
