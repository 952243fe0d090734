"""Robot Framework listener: establishes a test's documented pre-condition before it starts.

Used as `robot --listener preconditions.py:STATE_FILE`, where STATE_FILE is the JSON the
orchestrator wrote (server address, token, stub address, seeded ids). For each test it reads
the test id from the documentation (`Test ID: 7.3.1.2.6`) and calls `seeding.before_test`,
then sets the returned variables for that test only.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from robot.libraries.BuiltIn import BuiltIn  # noqa: E402

import seeding  # noqa: E402
from vnfm_client import SeedError  # noqa: E402

TEST_ID = re.compile(r"Test ID:\s*([0-9][0-9.]*[0-9])")


class preconditions:  # noqa: N801 - Robot loads the listener class named like its module
    ROBOT_LISTENER_API_VERSION = 3

    def __init__(self, state_file):
        self.ctx = seeding.Ctx.load(state_file)

    def start_test(self, data, result):
        m = TEST_ID.search(data.doc or "")
        if not m:
            return
        builtin = BuiltIn()
        variables = {
            name: builtin.get_variable_value("${%s}" % name)
            for name in ("vnfInstanceId", "vnfLcmOpOccId", "subscriptionId", "managedObjectId", "pmVnfInstanceId")
        }
        try:
            extra = seeding.before_test(self.ctx, m.group(1), variables)
        except SeedError as e:
            # The test then runs without its pre-condition and its failure says why.
            builtin.log(f"pre-condition of {m.group(1)} not established: {e}", "WARN")
            return
        for name, value in extra.items():
            builtin.set_test_variable("${%s}" % name, value)
