#!/usr/bin/env python3
"""Results of Tacker's functional suites run by scripts/tacker-functional.sh.

    tacker_functional.py shard LIST N PREFIX [SUITE EXPECTED [TOGETHER [OWN_CLOUDS]]]  # test ids -> PREFIX1 ..
    tacker_functional.py collect SUITE CSV            # subunit2csv output -> result rows on stdout
    tacker_functional.py compare RESULTS EXPECTED [--update] [--table MARKDOWN]
    tacker_functional.py prepare-cloud SERVER_URL [--vm]   # with Tacker's venv Python (openstacksdk)

A result row is tab-separated: suite, module, test, result (pass, fail, skip), seconds.
EXPECTED (tests/tacker-functional/expected.tsv) has one row per test: suite, module, test,
expected result, and why a test is expected to fail (empty for pass). `compare` prints every
test whose result differs and exits 1 when one does; `--update` rewrites EXPECTED from the
results, keeping the reasons already written; `--table` rewrites the results table between
the markers `<!-- tacker-functional:begin -->` and `<!-- tacker-functional:end -->` of a
Markdown file.
"""

import csv
import os
import re
import sys
from datetime import datetime

STATUS = {"success": "pass", "xfail": "pass", "skip": "skip", "fail": "fail", "uxsuccess": "fail"}
HEADER = (
    "# suite\tmodule\ttest\texpected\twhy a failure is expected: 'Tacker internal' (a drop-in "
    "does not copy it), 'refused on purpose' (a Tacker bug the test relies on) or 'open' (a "
    "difference still to fix)\tseconds in the last recorded run (the parts are balanced by them)"
)
BEGIN, END = "<!-- tacker-functional:begin -->", "<!-- tacker-functional:end -->"


def _seconds(start, stop):
    try:
        return (datetime.fromisoformat(stop) - datetime.fromisoformat(start)).total_seconds()
    except ValueError:
        return 0.0


def shard(list_path, count, prefix, suite=None, expected_path=None, together="", own_clouds=""):
    """Splits the test ids of LIST (one a line, as `stestr list` prints them) into COUNT load
    lists, keeping each test class whole (its tests share a class set-up): the longest unit
    first, each into the list with the least time so far (a test's time in the last run
    EXPECTED records, else a minute).

    A failed Tacker test leaves its instance and resources behind (in Tacker's CI too), which
    would change what the tests after it find, so the tests of SUITE that EXPECTED lists as
    failing run apart from the others. When the parts share one cloud, the classes whose names
    match the regular expression TOGETHER form one unit (they share resources of fixed names,
    so they run one after another), a failing test of theirs goes to PREFIX<i>.last, which
    their part i runs after its own list, and any other failing test (a whole class when its
    set-up is listed) gets a part of its own after the COUNT (PREFIX<COUNT+1> ..). When
    OWN_CLOUDS is set, each part has a cloud of its own: TOGETHER does not apply and every
    failing test goes to the .last list of its class's part. In a .last list, the tests of a
    class whose set-up is listed as failing come after all the others."""
    classes = {}
    with open(list_path) as f:
        for line in f:
            test = line.strip()
            if test.startswith("tacker."):
                classes.setdefault(test.split("[")[0].rsplit(".", 1)[0], []).append(test)
    failing, seconds = set(), {}
    if expected_path:
        for (row_suite, module, name), (result, _, secs) in _read(expected_path, 6).items():
            if row_suite == suite and result == "fail":
                failing.add(module if name == "setUpClass" else f"{module}.{name}")
            if row_suite == suite and secs:
                seconds[f"{module}.{name}"] = float(secs)
    # A test's weight: its time in the last recorded run, else a minute.
    weight = lambda test: seconds.get(test.split("[")[0], 60.0)
    is_failing = lambda test: test.split("[")[0] in failing
    grouped = lambda name: bool(not own_clouds and together and re.search(together, name))
    alone, last = [], {}
    for name in list(classes):
        if own_clouds or grouped(name):
            # A class whose set-up is expected to fail goes to the end as a whole.
            fails = (lambda t: True) if name in failing else is_failing
            last[name] = [t for t in classes[name] if fails(t)]
            classes[name] = [t for t in classes[name] if not fails(t)]
        elif name in failing:
            alone.append(classes.pop(name))
        else:
            alone += [[t] for t in classes[name] if is_failing(t)]
            classes[name] = [t for t in classes[name] if not is_failing(t)]
    group = [c for c in classes if grouped(c)]
    units = ([group] if group else []) + [[c] for c in classes if c not in group]
    size = lambda names: sum(weight(t) for c in names for t in classes[c] + last.get(c, []))
    shards = [[] for _ in range(count)]
    for unit in sorted(units, key=size, reverse=True):
        min(shards, key=size).extend(unit)
    # Each part keeps the list's order: a failed Tacker test leaves its resources to the
    # tests after it, so the recorded outcomes hold for that order.
    order = list(classes)
    parts = [sorted(names, key=order.index) for names in shards if names]
    parts += [[None, tests] for tests in alone]
    for i, names in enumerate(parts, 1):
        tests = names[1] if names[0] is None else [t for c in names for t in classes[c]]
        # A class whose set-up fails runs after every other test of its part: its fake
        # notification server (Tacker's, on the fixed port 9990) is started by the set-up and
        # stopped only by the tear-down, which a failed set-up never reaches, so the next
        # class's set-up would wait for the port forever.
        tail = [] if names[0] is None else [
            t for c in sorted(names, key=lambda c: c in failing) for t in last.get(c, [])
        ]
        with open(f"{prefix}{i}", "w") as f:
            f.write("".join(t + "\n" for t in tests))
        if tail:
            with open(f"{prefix}{i}.last", "w") as f:
                f.write("".join(t + "\n" for t in tail))


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
    expected = _read(expected_path, 6)
    differ = []
    for key, (result, _secs) in sorted(results.items()):
        want = expected.get(key, ["pass", "", ""])[0]
        if result != want and result != "skip":
            differ.append((key, want, result))
    counts = {}
    for result, _ in results.values():
        counts[result] = counts.get(result, 0) + 1
    for (suite, module, name), want, got in differ:
        reason = expected.get((suite, module, name), ["", "", ""])[1]
        print(f"  DIFFERS {suite} {module}.{name}: expected {want}, got {got}" + (f" ({reason})" if reason else ""))
    if update:
        # The rows of tests this run did not run are kept as they are.
        rows = {key: list(cells) for key, cells in expected.items()}
        for key, (result, secs) in results.items():
            reason = expected.get(key, ["", "", ""])[1] if result == "fail" else ""
            rows[key] = [result, reason, secs]
        lines = [HEADER] + ["\t".join([*key, *cells]) for key, cells in sorted(rows.items())]
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


def prepare_cloud(server_url, vm):
    """Prepares the cloud of the VNFM_TEST_* variables as devstack prepares it for Tacker, in one
    session rather than one `openstack` command each: project `nfv`, user `nfv_user` /
    `devstack` with role `admin` there, the server's own user `vnfm-tacker-ft`, and the
    `nfv-orchestration` service at SERVER_URL (the only endpoint of that service in RegionOne,
    kept when already right so that a run beside another one keeps its endpoint). With VM
    (the VM suite): the public image cirros-0.5.2-x86_64-disk (a few bytes: the cloud's Nova
    runs the fake virt driver, which boots anything) and the networks net_mgmt, net0 and net1
    with their subnets in `nfv` (devstack/lib/tacker), then what a stopped earlier run left in
    `nfv` (Tacker's tests remove their stacks, ft-net networks and named ports in clean-ups a
    stopped run skips; the tests after them create them anew and find them by name) and the
    images that run's servers uploaded. Prints the ports of the catalog's endpoints."""
    import openstack

    env = os.environ
    auth = lambda user, password, project: dict(
        auth_url=env["VNFM_TEST_KEYSTONE_URL"], username=user, password=password,
        project_name=project, user_domain_name="Default", project_domain_name="Default",
        region_name="RegionOne", identity_api_version="3")
    admin = openstack.connect(**auth(env.get("VNFM_TEST_OS_ADMIN_USERNAME", "admin"),
                                     env["VNFM_TEST_OS_ADMIN_PASSWORD"],
                                     env.get("VNFM_TEST_OS_ADMIN_PROJECT", "admin")))
    idn = admin.identity
    project = idn.find_project("nfv", domain_id="default") or idn.create_project(name="nfv", domain_id="default")
    role = idn.find_role("admin")
    for name, password in (("nfv_user", "devstack"), ("vnfm-tacker-ft", "vnfm-tacker-ft")):
        user = idn.find_user(name, domain_id="default") or idn.create_user(
            name=name, password=password, default_project_id=project.id, domain_id="default")
        idn.assign_project_role_to_user(project, user, role)
    service = next((x for x in idn.services() if x.type == "nfv-orchestration"), None) or \
        idn.create_service(name="tacker", type="nfv-orchestration")
    have = set()
    for e in idn.endpoints(service_id=service.id):
        if e.region_id == "RegionOne" and e.url != server_url:
            idn.delete_endpoint(e)
        elif e.region_id == "RegionOne":
            have.add(e.interface)
    for interface in {"public", "internal", "admin"} - have:
        idn.create_endpoint(service_id=service.id, interface=interface, url=server_url,
                            region_id="RegionOne")
    if vm:
        if not admin.image.find_image("cirros-0.5.2-x86_64-disk"):
            admin.image.create_image(name="cirros-0.5.2-x86_64-disk", visibility="public",
                                     disk_format="raw", container_format="bare", data=b"cirros")
        net = admin.network
        for name, subnet, cidr in (("net_mgmt", "subnet_mgmt", "192.168.120.0/24"),
                                   ("net0", "subnet0", "10.10.0.0/24"),
                                   ("net1", "subnet1", "10.10.1.0/24")):
            n = net.find_network(name, project_id=project.id) or net.create_network(
                name=name, project_id=project.id)
            if not net.find_subnet(subnet, network_id=n.id):
                net.create_subnet(name=subnet, network_id=n.id, project_id=project.id,
                                  cidr=cidr, ip_version=4)
        nfv = openstack.connect(**auth("nfv_user", "devstack", "nfv"))
        stacks = list(nfv.orchestration.stacks())
        for st in stacks:
            nfv.orchestration.delete_stack(st)
        for st in stacks:
            try:
                nfv.orchestration.wait_for_delete(st, wait=600)
            except Exception as e:  # A stack Heat cannot delete is reported; the run goes on.
                print(f"tacker_functional.py: stack {st.name} left: {e}", file=sys.stderr)
        for port in net.ports(project_id=project.id):
            if re.fullmatch(r"VDU[0-9]+_CP[0-9-]+", port.name or ""):
                net.delete_port(port)
        for n in net.networks(project_id=project.id):
            if (n.name or "").startswith("ft-net"):
                net.delete_network(n)
        for image in admin.image.images(tag="vnfm-managed"):
            admin.image.delete_image(image)
    ports = {e.url.split(":")[2].split("/")[0] for e in idn.endpoints()
             if e.url.startswith("http") and e.url.count(":") >= 2}
    print("\n".join(sorted(ports)))


def main(argv):
    if len(argv) in (4, 6, 7, 8) and argv[0] == "shard":
        shard(argv[1], int(argv[2]), argv[3], *argv[4:])
        return 0
    if len(argv) == 3 and argv[0] == "collect":
        collect(argv[1], argv[2])
        return 0
    if len(argv) in (2, 3) and argv[0] == "prepare-cloud":
        prepare_cloud(argv[1], "--vm" in argv)
        return 0
    if len(argv) >= 3 and argv[0] == "compare":
        table = argv[argv.index("--table") + 1] if "--table" in argv else None
        return compare(argv[1], argv[2], update="--update" in argv, table=table)
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
