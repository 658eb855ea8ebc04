# SPDX-License-Identifier: MIT
"""What the Python tests share: the environment run.sh set up, scratch directories, the CLI."""
import os
import shutil
import tempfile
import unittest

# run.sh preloads a sanitized library's ASan runtime; the commands the tests start must not
# inherit it (an ASan runtime preloaded into procps tools hangs them).
if os.environ.get("DSB_PY_PRELOADED") and os.environ.get("LD_PRELOAD") == os.environ[
        "DSB_PY_PRELOADED"]:
    del os.environ["LD_PRELOAD"]

import dsh_sandbox  # noqa: E402 (after the environment is settled)

SOURCE_ROOT = os.environ["DSB_SOURCE_ROOT"]
CLI = os.environ.get("DSH_SANDBOX", "")
LIBRARY = os.environ["DSH_SANDBOX_LIBRARY"]


class Scratch(unittest.TestCase):
    """A test with its own workspace, a directory outside it, and a session store."""

    def setUp(self) -> None:
        # /var/tmp: outside every writable root (/tmp is one), and writable by any test user.
        self.top = tempfile.mkdtemp(prefix="dsb-py.", dir="/var/tmp")
        self.addCleanup(shutil.rmtree, self.top, ignore_errors=True)
        self.ws = os.path.join(self.top, "ws")
        self.outside = os.path.join(self.top, "outside")
        self.store = os.path.join(self.top, "store")
        os.mkdir(self.ws)
        os.mkdir(self.outside)
        self.sb = dsh_sandbox.Sandbox(mode="workspace-write", workspace=self.ws,
                                      store=self.store)
        # A machine where nothing can confine: every test would be SANDBOX_UNAVAILABLE.
        try:
            self.sb.run(["true"])
        except dsh_sandbox.SandboxUnavailable as e:
            self.skipTest(f"no sandbox here: {e}")


def processes_with(needle: bytes) -> list[int]:
    """The processes whose command line holds needle (read from /proc, as any user may)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if needle in f.read():
                    found.append(int(pid))
        except OSError:
            pass
    return found


def descendants() -> str:
    """This process's descendants, one "PID STATE COMMAND" line each: what a stuck call left."""
    parent: dict[int, int] = {}
    lines: dict[int, str] = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        parent[int(pid)] = int(fields[1])
        lines[int(pid)] = f"{pid} {fields[0]} {cmd}"
    found, todo = [], [os.getpid()]
    while todo:
        p = todo.pop()
        for child, ppid in parent.items():
            if ppid == p:
                found.append(lines[child])
                todo.append(child)
    return "\n".join(found)
