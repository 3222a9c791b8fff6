"""A tenant's flood of shmguard's webhook Service, run in a pod (fleet.Flood).

    python3 flood.py HOST PORT TLS SECONDS

Holds up to TLS idle TLS connections to HOST:PORT, opening a new one for each the server closes,
and every 5 s opens raw TCP connections for 2 s that never start TLS (at most 8,000 held). Sends
no request on any of them. Prints one JSON line a second: what it holds, what it opened, and what
the server closed; ends after SECONDS.
"""
import json
import resource
import selectors
import socket
import ssl
import sys
import time

host, port, want, seconds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
context.check_hostname = False
context.verify_mode = ssl.CERT_NONE
selector = selectors.DefaultSelector()
tls, raw = set(), set()
stats = {"tlsOpened": 0, "tlsClosedByServer": 0, "tlsFailed": 0, "rawOpened": 0, "rawClosedByServer": 0}


def drop(sock, kind):
    selector.unregister(sock)
    sock.close()
    (tls if kind == "tls" else raw).discard(sock)
    stats[kind + "ClosedByServer"] += 1


def reap():
    """Drops every connection the server has closed."""
    for key, _ in selector.select(0):
        sock, kind = key.fileobj, key.data
        try:
            if sock.recv(4096) == b"":
                drop(sock, kind)
        except (ssl.SSLWantReadError, BlockingIOError):
            pass  # a session ticket or nothing yet: still open
        except (OSError, ssl.SSLError):
            drop(sock, kind)


def open_tls():
    try:
        sock = socket.create_connection((host, port), timeout=5)
        sock = context.wrap_socket(sock)
    except (OSError, ssl.SSLError):
        stats["tlsFailed"] += 1
        return
    sock.setblocking(False)
    selector.register(sock, selectors.EVENT_READ, "tls")
    tls.add(sock)
    stats["tlsOpened"] += 1


def open_raw():
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setblocking(False)
    sock.connect_ex((host, port))
    selector.register(sock, selectors.EVENT_READ, "raw")
    raw.add(sock)
    stats["rawOpened"] += 1


start = time.monotonic()
next_print = burst_from = start
while time.monotonic() - start < seconds:
    now = time.monotonic()
    if now - burst_from >= 5:
        burst_from = now
    if now - burst_from < 2:
        while len(raw) < 8000 and time.monotonic() - now < 0.05:
            open_raw()
    tick = time.monotonic()
    while len(tls) < want and time.monotonic() - tick < 0.2:
        open_tls()
    reap()
    if now >= next_print:
        next_print = now + 1
        print(json.dumps(dict(stats, t=round(now - start, 1), tls=len(tls), raw=len(raw))), flush=True)
    if len(tls) >= want:
        time.sleep(0.01)
