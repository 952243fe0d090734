#!/usr/bin/env python3
"""A new client's authenticated GET while many hostile connections hold the server.

The release `vnfm serve` runs as its own process on its defaults (SQLite in a fresh data
directory, `--max-connections 1024`, `--max-connections-per-address 256`); this process is the
attacker and the new client. For each shape of hostile connection, CONNECTIONS attackers
(default 2,000) from ADDRESSES loopback addresses (default 250: 127.0.1.1 to 127.0.1.250,
8 connections each) each hold one connection in that shape and open a new one as soon as
the server closes theirs (after --reconnect-delay, 50 ms), for the whole phase:

  idle        connects and sends nothing
  slowloris   sends a request line and one header, then one more header every 5 s
  line        sends half a request line (`GET /healthz HT`) and nothing more
  keptalive   sends one whole `GET /healthz`, reads its answer, then stays idle
  slowbody    sends `POST /oauth2/token` announcing 1,000 bytes, then one byte every 5 s

Once every attacker has connected once (at most 20 s), and 3 s more, the new client sends PROBES
authenticated `GET /vnflcm/v2/vnf_instances?filter=(eq,vnfInstanceName,probe-N)`, N
varied so that no probe reads a list page another one made (a bearer token of the server's bootstrap
client), each on a new connection from 127.0.0.1, 100 ms apart, and times each from its
connect to the end of its answer. Printed per shape and run: the probes' p50, p90 and max
(a probe unanswered within 10 s counts as 10 s), how many were not 200, and how many
connections the attackers opened and the server closed. A run without attackers comes
first, as the baseline. The target (docs/performance.md): every probe within 100 ms.

Usage: benches/hostile-connections.py [--runs 3] [--connections 2000] [--addresses 250]
           [--probes 50] [--shapes idle,slowloris,line,keptalive,slowbody] [--vnfm BIN]
Without --vnfm (or VNFM_SERVE_BIN) the release `vnfm` of this tree is built first.
"""

import argparse
import asyncio
import base64
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHAPES = ["idle", "slowloris", "line", "keptalive", "slowbody"]
PROBE_TIMEOUT = 10.0


def release_binary() -> str:
    given = os.environ.get("VNFM_SERVE_BIN")
    if given:
        return given
    subprocess.run(
        ["cargo", "build", "--release", "--locked", "--quiet", "-p", "vnfm-cli", "--bin", "vnfm"],
        cwd=ROOT,
        check=True,
    )
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    return str(target / "release" / "vnfm")


class Server:
    """`vnfm serve` on its defaults in a fresh data directory, and a token of its client."""

    def __init__(self, binary: str):
        self.dir = tempfile.TemporaryDirectory(prefix="vnfm-hostile-")
        self.proc = subprocess.Popen(
            [binary, "serve", "--data-dir", self.dir.name, "--listen", "127.0.0.1:0"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        base = credentials = None
        for line in self.proc.stdout:
            if line.startswith("vnfm listening on "):
                base = line.split()[-1].strip()
            elif line.startswith("credentials: "):
                credentials = line.split()[1]
            if base and credentials:
                break
        if not (base and credentials):
            self.stop()
            raise SystemExit("vnfm serve ended before it listened")
        # The rest of its output is read (and dropped) so that the server never blocks on it.
        asyncio.get_event_loop().run_in_executor(None, lambda: [None for _ in self.proc.stdout])
        host, port = base.removeprefix("http://").split(":")
        self.host, self.port = host, int(port)
        creds = json.loads(Path(credentials).read_text())
        request = urllib.request.Request(
            f"{base}/oauth2/token",
            data=b"grant_type=client_credentials",
            headers={"Content-Type": "application/x-www-form-urlencoded"},
        )
        auth = f"{creds['client_id']}:{creds['client_secret']}".encode()
        request.add_header("Authorization", "Basic " + base64.b64encode(auth).decode())
        with urllib.request.urlopen(request, timeout=10) as answer:
            self.token = json.loads(answer.read())["access_token"]

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.dir.cleanup()


class Counts:
    def __init__(self):
        self.opened = 0
        self.closed = 0
        self.refused = 0


async def hold(
    server: Server,
    source: str,
    shape: str,
    counts: Counts,
    connected: asyncio.Event,
    stop: asyncio.Event,
    delay: float,
):
    """One attacker: a connection of `shape` from `source`, opened again whenever it ends,
    until `stop`."""
    first = True
    while not stop.is_set():
        try:
            reader, writer = await asyncio.open_connection(
                server.host, server.port, local_addr=(source, 0)
            )
        except OSError:
            counts.refused += 1
            if first:
                first = False
                connected.set()
            await asyncio.sleep(delay)
            continue
        counts.opened += 1
        if first:
            first = False
            connected.set()
        try:
            await act(reader, writer, shape, stop)
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()
        # Not reached when the phase ends (the task is cancelled): the server closed it.
        counts.closed += 1
        await asyncio.sleep(delay)


async def act(reader, writer, shape: str, stop: asyncio.Event):
    """Holds the connection in `shape` until the server closes it."""
    host = b"Host: 127.0.0.1\r\n"
    if shape == "idle":
        await reader.read()
    elif shape == "line":
        writer.write(b"GET /healthz HT")
        await writer.drain()
        await reader.read()
    elif shape == "slowloris":
        await trickle(reader, writer, stop, b"GET /healthz HTTP/1.1\r\n" + host, b"X-Slow: 1\r\n")
    elif shape == "keptalive":
        writer.write(b"GET /healthz HTTP/1.1\r\n" + host + b"\r\n")
        await writer.drain()
        head = await reader.readuntil(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        await reader.readexactly(length)
        await reader.read()
    elif shape == "slowbody":
        head = (
            b"POST /oauth2/token HTTP/1.1\r\n"
            + host
            + b"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 1000\r\n\r\n"
        )
        await trickle(reader, writer, stop, head, b"a")
    else:
        raise ValueError(shape)


async def trickle(reader, writer, stop: asyncio.Event, start: bytes, drop: bytes):
    """Sends `start`, then `drop` every 5 s, until the server closes the connection."""
    writer.write(start)
    await writer.drain()
    while not stop.is_set():
        try:
            if await asyncio.wait_for(reader.read(4096), 5.0) == b"":
                return
        except asyncio.TimeoutError:
            writer.write(drop)
            await writer.drain()


async def probe(server: Server, n: int) -> tuple[float, int]:
    """A new client's authenticated GET on a new connection: seconds, HTTP status (0: none)."""
    started = time.perf_counter()
    request = (
        f"GET /vnflcm/v2/vnf_instances?filter=(eq,vnfInstanceName,probe-{n}) HTTP/1.1\r\n"
        "Host: 127.0.0.1\r\n"
        f"Authorization: Bearer {server.token}\r\nVersion: 2.0.0\r\nConnection: close\r\n\r\n"
    ).encode()

    async def exchange() -> int:
        reader, writer = await asyncio.open_connection(
            server.host, server.port, local_addr=("127.0.0.1", 0)
        )
        try:
            writer.write(request)
            await writer.drain()
            answer = await reader.read()
            status = answer.split(b" ", 2)[1] if answer.startswith(b"HTTP/") else b"0"
            return int(status)
        finally:
            writer.close()

    try:
        status = await asyncio.wait_for(exchange(), PROBE_TIMEOUT)
    except (OSError, asyncio.TimeoutError, ValueError):
        return PROBE_TIMEOUT, 0
    return time.perf_counter() - started, status


async def phase(server: Server, shape: str | None, args) -> dict:
    counts = Counts()
    attackers = []
    stop = asyncio.Event()
    if shape:
        sources = [f"127.0.1.{1 + i % args.addresses}" for i in range(args.connections)]
        events = []
        for i, source in enumerate(sources):
            connected = asyncio.Event()
            events.append(connected)
            attackers.append(
                asyncio.create_task(hold(server, source, shape, counts, connected, stop, args.reconnect_delay))
            )
            if i % 100 == 99:
                await asyncio.sleep(0.01)
        # Until every attacker has connected once, or 20 s (connections beyond the server's
        # slots may wait in the kernel's queues longer), then 3 s more.
        try:
            await asyncio.wait_for(asyncio.gather(*(e.wait() for e in events)), 20)
        except asyncio.TimeoutError:
            pass
        await asyncio.sleep(3.0)
        ready = sum(e.is_set() for e in events)
        print(f"  {shape}: {ready} attackers connected once; probing", file=sys.stderr, flush=True)
    times, bad, statuses = [], 0, {}
    for n in range(args.probes):
        seconds, status = await probe(server, n)
        times.append(seconds)
        bad += status != 200
        if status != 200:
            statuses[status] = statuses.get(status, 0) + 1
        await asyncio.sleep(0.1)
    # Cancelled, and told to stop: a task whose cancellation `wait_for` swallowed (it can,
    # when its read completes at the same moment) ends at its next turn.
    stop.set()
    for task in attackers:
        task.cancel()
    if attackers:
        await asyncio.wait(attackers, timeout=30)
    times.sort()
    return {
        "shape": shape or "none",
        "p50_ms": 1000 * statistics.median(times),
        "p90_ms": 1000 * times[int(0.9 * (len(times) - 1))],
        "max_ms": 1000 * times[-1],
        "not_200": bad,
        "statuses": statuses,
        "opened": counts.opened,
        "closed": counts.closed,
        "refused": counts.refused,
    }


def show(row: dict, prefix: str = ""):
    print(
        f"{prefix}{row['shape']:<10} p50 {row['p50_ms']:8.2f} ms  p90 {row['p90_ms']:8.2f} ms  "
        f"max {row['max_ms']:8.2f} ms  not 200: {row['not_200']} {row['statuses'] or ''} attackers opened "
        f"{row['opened']}, closed by the server {row['closed']}, refused at connect {row['refused']}",
        flush=True,
    )


async def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--connections", type=int, default=2000)
    parser.add_argument("--addresses", type=int, default=250)
    parser.add_argument("--probes", type=int, default=50)
    parser.add_argument("--shapes", default=",".join(SHAPES))
    parser.add_argument("--reconnect-delay", type=float, default=0.05)
    parser.add_argument("--vnfm", default=None)
    args = parser.parse_args()
    shapes = [s for s in args.shapes.split(",") if s]
    for s in shapes:
        if s not in SHAPES:
            raise SystemExit(f"unknown shape {s}: one of {', '.join(SHAPES)}")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = args.connections + 512
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))
    binary = args.vnfm or release_binary()
    print(f"vnfm: {binary}; {args.connections} connections from {args.addresses} addresses "
          f"per shape; {args.probes} probes; uptime: {os.getloadavg()}", flush=True)
    rows: dict[str, list[dict]] = {}
    for run in range(1, args.runs + 1):
        for shape in [None, *shapes]:
            # A fresh server per phase: nothing of one shape's attack carries into the next.
            server = Server(binary)
            try:
                row = await phase(server, shape, args)
            finally:
                server.stop()
            rows.setdefault(row["shape"], []).append(row)
            show(row, f"run {run}: ")
    print(f"medians of {args.runs} runs [min-max of the runs' max] (load average after: "
          f"{os.getloadavg()}):")
    for shape, runs in rows.items():
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0] if k not in ("shape", "statuses")}
        worst = [r["max_ms"] for r in runs]
        print(f"  {shape:<10} p50 {med['p50_ms']:.2f} ms, p90 {med['p90_ms']:.2f} ms, max "
              f"{med['max_ms']:.2f} ms [{min(worst):.2f}-{max(worst):.2f}], not 200: "
              f"{sum(r['not_200'] for r in runs)}")


if __name__ == "__main__":
    asyncio.run(main())
