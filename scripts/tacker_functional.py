#!/usr/bin/env python3
"""Results of Tacker's functional suites run by scripts/tacker-functional.sh.

    tacker_functional.py shard LIST N PREFIX [SUITE EXPECTED]  # test ids -> PREFIX1 .., by class
    tacker_functional.py collect SUITE CSV            # subunit2csv output -> result rows on stdout
    tacker_functional.py compare RESULTS EXPECTED [--update] [--table MARKDOWN]

A result row is tab-separated: suite, module, test, result (pass, fail, skip), seconds.
EXPECTED (tests/tacker-functional/expected.tsv) has one row per test: suite, module, test,
expected result, and why a test is expected to fail (empty for pass). `compare` prints every
test whose result differs and exits 1 when one does; `--update` rewrites EXPECTED from the
results, keeping the reasons already written; `--table` rewrites the results table between
the markers `<!-- tacker-functional:begin -->` and `<!-- tacker-functional:end -->` of a
Markdown file.
"""

import csv
import sys
from datetime import datetime

STATUS = {"success": "pass", "xfail": "pass", "skip": "skip", "fail": "fail", "uxsuccess": "fail"}
BEGIN, END = "<!-- tacker-functional:begin -->", "<!-- tacker-functional:end -->"


def _seconds(start, stop):
    try:
        return (datetime.fromisoformat(stop) - datetime.fromisoformat(start)).total_seconds()
    except ValueError:
        return 0.0


def shard(list_path, count, prefix, suite=None, expected_path=None):
    """Splits the test ids of LIST (one a line, as `stestr list` prints them) into COUNT load
    lists, keeping each test class whole (its tests share a class set-up): the largest class
    first, each into the list with the fewest tests so far. A class with a test of SUITE that
    EXPECTED lists as failing for a Tacker internal gets a load list of its own after those
    (PREFIX<COUNT+1> ..): a failed Tacker test leaves its resources behind (in Tacker's CI
    too), so it runs beside the others, on a server and control plane of its own."""
    classes = {}
    with open(list_path) as f:
        for line in f:
            test = line.strip()
            if test.startswith("tacker."):
                classes.setdefault(test.split("[")[0].rsplit(".", 1)[0], []).append(test)
    internal = set()
    if expected_path:
        for (row_suite, module, _), (result, reason) in _read(expected_path, 5).items():
            if row_suite == suite and result == "fail" and reason.startswith("Tacker internal"):
                internal.add(module)
    shards = [[] for _ in range(count)]
    for name in sorted(classes, key=lambda c: len(classes[c]), reverse=True):
        if name not in internal:
            min(shards, key=lambda s: sum(len(classes[c]) for c in s)).append(name)
    shards += [[name] for name in classes if name in internal]
    # Each part keeps the list's order: a failed Tacker test leaves its resources to the
    # tests after it, so the recorded outcomes hold for that order.
    order = list(classes)
    for i, names in enumerate((s for s in shards if s), 1):
        with open(f"{prefix}{i}", "w") as f:
            for name in sorted(names, key=order.index):
                f.write("".join(t + "\n" for t in classes[name]))


def collect(suite, path):
    """Turns subunit2csv rows (test, status, start_time, stop_time) into result rows.
    A class-level failure (setUpClass) is reported by stestr as one row naming the class:
    it stands for its tests."""
    # Captured output in the CSV may hold bytes that are not UTF-8.
    with open(path, newline="", errors="replace") as f:
        for row in csv.DictReader(f):
            # A run that matched no test leaves a stream of output, no rows.
            if not (row.get("test") or "").startswith(("tacker.", "setUpClass (tacker.")) or not row.get("stop_time"):
                continue
            test_id = row["test"].split("[")[0]
            if test_id.startswith("setUpClass ("):
                test_id = test_id[len("setUpClass (") : -1] + ".setUpClass"
            module, _, name = test_id.rpartition(".")
            result = STATUS.get(row["status"], "fail")
            secs = _seconds(row["start_time"], row["stop_time"])
            print(f"{suite}\t{module}\t{name}\t{result}\t{secs:.0f}")


def _read(path, width):
    rows = {}
    try:
        with open(path) as f:
            for line in f:
                if not line.strip() or line.startswith("#"):
                    continue
                cells = line.rstrip("\n").split("\t")
                cells += [""] * (width - len(cells))
                rows[(cells[0], cells[1], cells[2])] = cells[3:width]
    except FileNotFoundError:
        pass
    return rows


def compare(results_path, expected_path, update=False, table=None):
    results = _read(results_path, 5)
    expected = _read(expected_path, 5)
    differ = []
    for key, (result, _secs) in sorted(results.items()):
        want = expected.get(key, ["pass", ""])[0]
        if result != want and result != "skip":
            differ.append((key, want, result))
    counts = {}
    for result, _ in results.values():
        counts[result] = counts.get(result, 0) + 1
    for (suite, module, name), want, got in differ:
        reason = expected.get((suite, module, name), ["", ""])[1]
        print(f"  DIFFERS {suite} {module}.{name}: expected {want}, got {got}" + (f" ({reason})" if reason else ""))
    if update:
        lines = ["# suite\tmodule\ttest\texpected\twhy a failure is expected (Tacker internals a drop-in does not copy)"]
        for key, (result, _secs) in sorted(results.items()):
            reason = expected.get(key, ["", ""])[1] if result == "fail" else ""
            lines.append("\t".join([*key, result, reason]))
        with open(expected_path, "w") as f:
            f.write("\n".join(lines) + "\n")
        differ = []
    if table:
        _write_table(table, results, expected)
    print(
        f"tacker-functional: {len(results)} tests, {counts.get('pass', 0)} pass and "
        f"{counts.get('fail', 0)} fail, {len(differ)} differ from {expected_path}"
    )
    return 1 if differ else 0


def _write_table(path, results, expected):
    rows = ["| suite | module | test | result | seconds |", "|---|---|---|---|---|"]
    for (suite, module, name), (result, secs) in sorted(results.items()):
        note = expected.get((suite, module, name), ["", ""])[1]
        shown = result + (f" (expected: {note})" if result == "fail" and note else "")
        short = module.replace("tacker.tests.functional.", "")
        rows.append(f"| {suite} | {short} | {name} | {shown} | {secs} |")
    text = open(path).read()
    if BEGIN not in text or END not in text:
        sys.exit(f"tacker_functional.py: {path} has no {BEGIN} ... {END} markers")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    with open(path, "w") as f:
        f.write(head + BEGIN + "\n" + "\n".join(rows) + "\n" + END + tail)


def main(argv):
    if len(argv) in (4, 6) and argv[0] == "shard":
        shard(argv[1], int(argv[2]), argv[3], *argv[4:])
        return 0
    if len(argv) == 3 and argv[0] == "collect":
        collect(argv[1], argv[2])
        return 0
    if len(argv) >= 3 and argv[0] == "compare":
        table = argv[argv.index("--table") + 1] if "--table" in argv else None
        return compare(argv[1], argv[2], update="--update" in argv, table=table)
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
