#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""An MCP client for `dsh-sandbox serve`, with Python's standard library alone.

It starts the server on a pipe, then:

1. lists the tools;
2. runs a command;
3. gets a denial (a write outside the workspace);
4. escalates that command with a justification, approving the question the server asks
   through MCP elicitation;
5. starts a background job and waits for its output.

Usage: client.py [--server PATH] WORKSPACE

The server is `dsh-sandbox` on PATH unless --server names it. Each step prints one line;
the exit status is 0 when every step did what it should.
"""

import argparse
import json
import os
import subprocess
import sys
import threading

PROTOCOL_VERSION = "2025-11-25"


class McpError(Exception):
    pass


class Client:
    """JSON-RPC 2.0 over the server's stdin and stdout, one message per line."""

    def __init__(self, argv, cwd, approve):
        self.proc = subprocess.Popen(
            argv,
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )
        self.approve = approve
        self.next_id = 1
        self.pending = {}
        self.lock = threading.Lock()
        self.notifications = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _send(self, message):
        line = json.dumps(message, separators=(",", ":"))
        with self.lock:
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()

    def _read(self):
        for line in self.proc.stdout:
            message = json.loads(line)
            if "method" in message and "id" in message:
                self._answer(message)
            elif "method" in message:
                self.notifications.append(message)
            else:
                slot = self.pending.get(message["id"])
                if slot:
                    slot["response"] = message
                    slot["done"].set()
        for slot in list(self.pending.values()):
            slot["done"].set()

    def _answer(self, request):
        """A request from the server: only elicitation/create is expected."""
        if request["method"] != "elicitation/create":
            self._send({"jsonrpc": "2.0", "id": request["id"],
                        "error": {"code": -32601, "message": "Method not found"}})
            return
        result = self.approve(request["params"])
        self._send({"jsonrpc": "2.0", "id": request["id"], "result": result})

    def request(self, method, params=None, timeout=120):
        with self.lock:
            rid = self.next_id
            self.next_id += 1
        slot = {"done": threading.Event(), "response": None}
        self.pending[rid] = slot
        message = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = params
        self._send(message)
        if not slot["done"].wait(timeout):
            raise McpError(f"{method}: no response within {timeout} s")
        del self.pending[rid]
        response = slot["response"]
        if response is None:
            raise McpError(f"{method}: the server closed the connection")
        if "error" in response:
            raise McpError(f"{method}: {response['error']}")
        return response["result"]

    def notify(self, method, params=None):
        message = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self._send(message)

    def call(self, name, arguments):
        result = self.request("tools/call", {"name": name, "arguments": arguments})
        return result, result["content"][0]["text"]

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def approve_once(params):
    """The human's part: this example allows the escalation once, after showing it."""
    print("  approval asked:", params["message"].splitlines()[0])
    schema = params["requestedSchema"]
    field = next(iter(schema["properties"]))
    return {"action": "accept", "content": {field: "allow"}}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", default="dsh-sandbox")
    parser.add_argument("workspace")
    args = parser.parse_args()
    workspace = os.path.realpath(args.workspace)
    # The server starts in the workspace: a relative path to it is the caller's.
    server = os.path.abspath(args.server) if os.sep in args.server else args.server

    client = Client([server, "serve", "--cwd", workspace], workspace, approve_once)
    failed = steps = 0

    def step(name, ok, detail=""):
        nonlocal failed, steps
        print(("ok" if ok else "FAILED"), "-", name, *([detail] if detail else []))
        failed += not ok
        steps += 1

    init = client.request("initialize", {
        "protocolVersion": PROTOCOL_VERSION,
        "capabilities": {"elicitation": {"form": {}}},
        "clientInfo": {"name": "dsh-sandbox-python-example", "version": "1"},
    })
    client.notify("notifications/initialized")
    step("initialize", init["protocolVersion"] == PROTOCOL_VERSION,
         init["serverInfo"]["name"])

    tools = [t["name"] for t in client.request("tools/list")["tools"]]
    step("tools/list", {"bash", "write", "edit", "read", "job_output"} <= set(tools),
         " ".join(tools))

    result, text = client.call("bash", {"command": "echo hello from the sandbox",
                                       "description": "Say hello"})
    step("a command runs", not result.get("isError") and "hello from the sandbox" in text)

    outside = "/var/tmp/dsh-sandbox-example-denied"
    command = f"echo escaped > {outside}"
    result, text = client.call("bash", {"command": command, "description": "Write outside"})
    step("a write outside the workspace is denied",
         not os.path.exists(outside) and "sandbox" in text.lower(), repr(text[:80]))

    result, text = client.call("bash", {
        "command": command,
        "description": "Write outside",
        "sandbox_permissions": "danger-full-access",
        "justification": "The example shows an approved escalation.",
    })
    step("an escalation, approved through elicitation, runs it",
         os.path.exists(outside), repr(text[:80]))
    if os.path.exists(outside):
        os.unlink(outside)

    result, text = client.call("bash", {
        "command": "sleep 1; echo done in the background",
        "description": "Work in the background",
        "run_in_background": True,
    })
    job = next((w for w in text.replace(".", " ").split() if w.startswith("bash-")), None)
    step("a background job starts", job is not None, repr(text[:80]))
    output = ""
    if job:
        _, output = client.call("job_output", {"job_id": job, "wait": True})
    step("its output is read once it finished",
         "done in the background" in output and "[status: completed, exit code: 0]" in output,
         repr(output[-80:]))

    client.close()
    print(f"{steps - failed} of {steps} steps ok")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
