#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What tests/e2e/t-harm-limits.sh runs inside (and outside) the sandbox: standard library only.

  forks MAX              forks up to MAX children that sleep, prints how many it got
  hog BYTES              touches BYTES of memory, prints "survived" if it could
  inotify SECONDS        takes every inotify instance it can, prints the count, holds them for
                         SECONDS
  inotify-one            whether one inotify instance can be had now: "ok" or "failed"
  serve-memory WS HOW    a served call over --memory: "killed" (the line said, the server alive)
                         or "fails-closed" (nothing here holds it: the call is refused)
  serve-spinner WS       pings a server while calls spin on every core: prints the latencies
  serve-bomb WS          a served fork bomb (--max-processes 256): a second call meanwhile
                         completes, the server lives
  job-bomb WS            the same as a background job
"""
import ctypes
import importlib.util
import os
import signal
import statistics
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def forks(limit):
    got = 0
    pids = []
    while got < limit:
        try:
            pid = os.fork()
        except OSError:
            break
        if pid == 0:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            time.sleep(60)
            os._exit(0)
        pids.append(pid)
        got += 1
    print(got, flush=True)
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    for pid in pids:
        os.waitpid(pid, 0)


def hog(size):
    chunk = 1 << 24
    held = []
    for _ in range(size // chunk):
        held.append(b"x" * chunk)  # a new object each time: every page touched
    print("survived", len(held) * chunk, flush=True)


def inotify_hold(seconds):
    libc = ctypes.CDLL(None, use_errno=True)
    fds = []
    while len(fds) < 100000:
        fd = libc.inotify_init()
        if fd < 0:
            break
        fds.append(fd)
    print(len(fds), flush=True)
    time.sleep(seconds)


def inotify_one():
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.inotify_init()
    print("ok" if fd >= 0 else "failed: errno %d" % ctypes.get_errno())


def mcp():
    spec = importlib.util.spec_from_file_location("mcp_client", os.path.join(HERE,
                                                                            "mcp-client.py"))
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def served(ws, *args):
    m = mcp()
    s = m.Server("--cwd", ws, *args)
    s.initialize()
    return m, s


def ping_ms(s):
    t0 = time.monotonic()
    r = s.request("ping")
    assert r.get("result") == {}, r
    return (time.monotonic() - t0) * 1000


def serve_memory(ws, how):
    m, s = served(ws, "--memory", "256M")
    hogger = "%s %s hog %d" % (sys.executable, os.path.join(HERE, "harm.py"), 1 << 30)
    r = s.call("bash", {"command": hogger, "description": "Hog"})
    text = m.text_of(r)
    if how == "fails-closed":
        m.check(r["result"].get("isError") and "cannot be enforced here" in text,
                "not refused: %r" % text)
        s.close()
        print("ok")
        return
    m.check("[sandbox: memory limit (256M) reached; the command was killed]" in text,
            "the result does not say why: %r" % text)
    m.check("survived" not in text, "the hog survived: %r" % text)
    ping_ms(s)  # the server lives
    r = s.call("bash", {"command": "echo after", "description": "After"})
    m.check("after" in m.text_of(r), "the next call failed: %r" % r)
    s.close()
    print("ok")


def serve_spinner(ws):
    m, s = served(ws)
    cores = os.cpu_count() or 2
    spin = "timeout 8 sh -c 'while :; do :; done'; echo spun"
    ids = []
    for _ in range(cores * 2):
        s.next_id += 1
        ids.append(s.next_id)
        s.send({"jsonrpc": "2.0", "id": s.next_id, "method": "tools/call",
                "params": {"name": "bash", "arguments": {"command": spin,
                                                         "description": "Spin"}}})
    time.sleep(1.5)  # the spinners run
    lat = [ping_ms(s) for _ in range(40)]
    for rid in ids:
        s.wait_for(lambda msg, rid=rid: msg.get("id") == rid, timeout=60)
    s.close()
    print("median %.2f max %.2f" % (statistics.median(lat), max(lat)))


def serve_bomb(ws, job=False):
    m, s = served(ws, "--max-processes", "256")
    bomb = ":(){ :|:& };:; sleep 30"
    s.next_id += 1
    rid = s.next_id
    args = {"command": bomb, "timeoutMs": 6000, "description": "Bomb"}
    if job:
        args = {"command": bomb, "description": "bomb", "run_in_background": True}
    s.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
            "params": {"name": "bash", "arguments": args}})
    if job:
        s.wait_for(lambda msg: msg.get("id") == rid, timeout=30)
    time.sleep(2)  # the bomb has reached its limit
    t0 = time.monotonic()
    r = s.call("bash", {"command": "echo second", "description": "Second"})
    took = time.monotonic() - t0
    m.check("second" in m.text_of(r), "the second call failed: %r" % r)
    m.check(took < 20, "the second call took %.1f s" % took)
    ping_ms(s)
    if not job:
        s.wait_for(lambda msg: msg.get("id") == rid, timeout=60)
    s.close(timeout=60)
    print("ok %.2f" % took)


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "forks":
        forks(int(args[0]))
    elif cmd == "hog":
        hog(int(args[0]))
    elif cmd == "inotify":
        inotify_hold(float(args[0]))
    elif cmd == "inotify-one":
        inotify_one()
    elif cmd == "serve-memory":
        serve_memory(args[0], args[1])
    elif cmd == "serve-spinner":
        serve_spinner(args[0])
    elif cmd == "serve-bomb":
        serve_bomb(args[0])
    elif cmd == "job-bomb":
        serve_bomb(args[0], job=True)
    else:
        sys.exit("unknown command " + cmd)


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # the failure's reason for the TAP log
        print("FAIL: %s" % e, file=sys.stderr)
        sys.exit(1)
