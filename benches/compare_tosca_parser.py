"""Times tosca-parser and `vnfm package validate` on the same CSAR zips, whole process each.

Each package directory is zipped once into a temporary CSAR. Each tool then validates it RUNS
times as a fresh process (interpreter/binary start included, as a user or an onboarding job
would run it), the two tools taking turns so that a change in machine load hits both alike;
the median wall time is reported with the ratio. Processes are started with posix_spawn and
their output goes to /dev/null, so the harness adds as little as it can (its floor, the time
to run /bin/true, is printed, as is `vnfm --version`: the binary's start-up alone).
tosca-parser also gets an in-process figure (median of RUNS parses inside one interpreter,
start-up excluded), which is the fairest view of the parser itself.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile

TOSCA_PARSER_ONE = (
    "import sys\n"
    "from toscaparser.tosca_template import ToscaTemplate\n"
    "ToscaTemplate(sys.argv[1])\n"
)

TOSCA_PARSER_LOOP = (
    "import sys, time, statistics, logging\n"
    "logging.disable(logging.CRITICAL)\n"
    "from toscaparser.tosca_template import ToscaTemplate\n"
    "ts = []\n"
    "for _ in range(int(sys.argv[2])):\n"
    "    t = time.perf_counter(); ToscaTemplate(sys.argv[1]); ts.append(time.perf_counter() - t)\n"
    "print(statistics.median(ts))\n"
)


def zip_dir(src, dst):
    with zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as z:
        for base, _, files in os.walk(src):
            for f in sorted(files):
                full = os.path.join(base, f)
                z.write(full, os.path.relpath(full, src))


def run_once(argv):
    """Wall seconds of one run of `argv` (output discarded), and whether it exited 0."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        actions = [(os.POSIX_SPAWN_DUP2, devnull, 1), (os.POSIX_SPAWN_DUP2, devnull, 2)]
        t = time.perf_counter()
        pid = os.posix_spawn(argv[0], argv, os.environ, file_actions=actions)
        _, status = os.waitpid(pid, 0)
        elapsed = time.perf_counter() - t
    finally:
        os.close(devnull)
    return elapsed, os.waitstatus_to_exitcode(status) == 0


def time_processes(commands, runs):
    """Per command: median and minimum seconds of `runs` executions (taking turns), and
    whether the last one succeeded."""
    times = [[] for _ in commands]
    ok = [True for _ in commands]
    for _ in range(runs):
        for i, argv in enumerate(commands):
            elapsed, ok[i] = run_once(argv)
            times[i].append(elapsed)
    return [((statistics.median(t), min(t)), o) for t, o in zip(times, ok)]


def load():
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--vnfm", required=True)
    ap.add_argument("packages", nargs="+")
    a = ap.parse_args()
    py = sys.executable
    load_before = load()
    ((floor, _), _), ((vnfm_start, vnfm_start_min), _) = time_processes([["/bin/true"], [a.vnfm, "--version"]],
                                                  max(a.runs, 20))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for pkg in a.packages:
            name = os.path.basename(os.path.normpath(pkg))
            csar = os.path.join(tmp, name + ".zip")
            zip_dir(pkg, csar)
            (tp, tp_ok), (vn, vn_ok) = time_processes(
                [[py, "-c", TOSCA_PARSER_ONE, csar], [a.vnfm, "package", "validate", csar]],
                a.runs)
            tp_in = None
            if tp_ok:
                out = subprocess.run([py, "-c", TOSCA_PARSER_LOOP, csar, str(a.runs)],
                                     capture_output=True, text=True)
                if out.returncode == 0:
                    tp_in = float(out.stdout.strip().splitlines()[-1])
            rows.append((name, tp, tp_ok, tp_in, vn, vn_ok))

    print(f"runs per tool and package: {a.runs} (median wall time, whole process); "
          f"load average before {load_before}, after {load()} ({os.cpu_count()} CPUs)")
    print(f"harness floor (/bin/true): {floor * 1000:.2f}ms; "
          f"vnfm start-up alone (vnfm --version): {vnfm_start * 1000:.2f}ms "
          f"(min {vnfm_start_min * 1000:.2f}ms)")
    print(f"{'package':38} {'tosca-parser':>13} {'in-process':>11} {'vnfm':>9} {'ratio':>8}"
          f" {'vnfm min':>9} {'min ratio':>9}  notes")
    ratios, min_ratios = [], []
    for name, (tp, tp_min), tp_ok, tp_in, (vn, vn_min), vn_ok in rows:
        notes = []
        if not tp_ok:
            notes.append("tosca-parser rejected it")
        if not vn_ok:
            notes.append("vnfm rejected it")
        ratio = tp / vn if vn > 0 else float("nan")
        min_ratio = tp_min / vn_min if vn_min > 0 else float("nan")
        if tp_ok and vn_ok:
            ratios.append(ratio)
            min_ratios.append(min_ratio)
        tin = f"{tp_in * 1000:9.1f}ms" if tp_in is not None else f"{'-':>11}"
        print(f"{name:38} {tp * 1000:11.1f}ms {tin} {vn * 1000:7.1f}ms {ratio:7.0f}x"
              f" {vn_min * 1000:7.1f}ms {min_ratio:8.0f}x  {'; '.join(notes)}")
    if ratios:
        print(f"median ratio (packages both accept): {statistics.median(ratios):.0f}x; "
              f"min {min(ratios):.0f}x; max {max(ratios):.0f}x; "
              f"ratio of the fastest runs: {statistics.median(min_ratios):.0f}x")


if __name__ == "__main__":
    main()
