#!/usr/bin/env python3
"""Free TCP ports for the test services, outside the kernel's ephemeral range.

    scripts/test-env/free_ports.py COUNT [ADDRESS...]

prints COUNT distinct ports, one per line, each of which could be bound on every ADDRESS
(default 127.0.0.1) when it was chosen.

Why not bind port 0: the kernel then hands out a port of the ephemeral range, the same range
it draws the local ports of outgoing connections from. Between choosing a port and the service
binding it, a client connection of another service (Keystone to PostgreSQL, Heat to RabbitMQ)
can take that very port, and the service fails with "Address already in use". Ports below the
ephemeral range are only ever taken by listeners.
"""

import random
import socket
import sys


def ephemeral_range():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low, high = (int(x) for x in f.read().split())
            return low, high
    except (OSError, ValueError):
        return 32768, 60999


def candidate_range():
    """The wider of the unprivileged ports below and above the ephemeral range (all of them
    when the ephemeral range leaves none)."""
    low, high = ephemeral_range()
    below, above = (max(1024, min(10000, low - 1000)), low - 1), (high + 1, 65535)
    first, last = max(below, above, key=lambda r: r[1] - r[0])
    return (first, last) if first <= last else (1024, 65535)


def bindable(port, addresses):
    socks = []
    try:
        for address in addresses:
            s = socket.socket()
            socks.append(s)
            s.bind((address, port))
        return True
    except OSError:
        return False
    finally:
        for s in socks:
            s.close()


def free_ports(count, addresses=("127.0.0.1",)):
    """COUNT distinct ports that every address in ADDRESSES can bind now."""
    first, last = candidate_range()
    chosen = []
    for _ in range(count * 200):
        if len(chosen) == count:
            break
        port = random.randint(first, last)
        if port not in chosen and bindable(port, addresses):
            chosen.append(port)
    if len(chosen) < count:
        raise SystemExit(f"free_ports.py: fewer than {count} free ports in {first}-{last}")
    return chosen


if __name__ == "__main__":
    if len(sys.argv) < 2 or not sys.argv[1].isdigit():
        sys.exit("usage: free_ports.py COUNT [ADDRESS...]")
    for p in free_ports(int(sys.argv[1]), tuple(sys.argv[2:]) or ("127.0.0.1",)):
        print(p)
