#!/usr/bin/env python3
"""Tests of scripts/tacker_functional.py's splitting of Tacker's suites into parts
(`python3 scripts/tacker_functional_test.py`, run by scripts/test.sh)."""

import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tacker_functional  # noqa: E402

M = "tacker.tests.functional.sol_v2.vnflcm."


def _expected(rows):
    lines = [tacker_functional.HEADER]
    lines += ["\t".join(["vm", module, name, result, why, secs]) for module, name, result, why, secs in rows]
    return "\n".join(lines) + "\n"


class ShardTest(unittest.TestCase):
    def run_shard(self, tests, expected_rows, count, own_clouds):
        with tempfile.TemporaryDirectory() as d:
            listing, expected = os.path.join(d, "list"), os.path.join(d, "expected.tsv")
            with open(listing, "w") as f:
                f.write("".join(t + "\n" for t in tests))
            with open(expected, "w") as f:
                f.write(_expected(expected_rows))
            prefix = os.path.join(d, "part")
            tacker_functional.shard(listing, count, prefix, "vm", expected, ".", own_clouds)
            parts = {}
            for name in sorted(os.listdir(d)):
                if name.startswith("part"):
                    with open(os.path.join(d, name)) as f:
                        parts[name[len("part"):]] = [line.strip() for line in f if line.strip()]
            return parts

    def test_a_class_whose_set_up_fails_runs_last_and_whole(self):
        # Its set-up starts Tacker's fake notification server on a fixed port and fails before
        # the tear-down that stops it: any class after it would wait for the port forever.
        basic = M + "st.basic.Basic"
        err = M + "st.err.Err"
        df = M + "df.err.DfErr"
        tests = [f"{basic}.test_a", f"{basic}.test_b", f"{df}.test_x", f"{df}.test_y", f"{err}.test_z", f"{err}.test_w"]
        expected = [
            (basic, "setUpClass", "fail", "Tacker internal", "0"),
            (df, "test_y", "fail", "refused on purpose", "30"),
            (df, "test_x", "pass", "", "30"),
            (err, "test_z", "pass", "", "30"),
            (err, "test_w", "fail", "open", "30"),
        ]
        parts = self.run_shard(tests, expected, 1, "own")
        self.assertEqual(parts["1"], [f"{df}.test_x", f"{err}.test_z"])
        self.assertEqual(parts["1.last"], [f"{df}.test_y", f"{err}.test_w", f"{basic}.test_a", f"{basic}.test_b"])

    def test_classes_are_balanced_by_their_recorded_times(self):
        a, b, c = M + "a.A", M + "b.B", M + "c.C"
        tests = [f"{a}.test_1", f"{b}.test_1", f"{c}.test_1"]
        expected = [(a, "test_1", "pass", "", "100"), (b, "test_1", "pass", "", "60"), (c, "test_1", "pass", "", "50")]
        parts = self.run_shard(tests, expected, 2, "own")
        self.assertEqual(parts["1"], [f"{a}.test_1"])
        self.assertEqual(parts["2"], [f"{b}.test_1", f"{c}.test_1"])


if __name__ == "__main__":
    unittest.main()
