#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A small MCP client over stdio for tests/e2e/t-serve.sh (standard library only).

Each subcommand drives `dsh-sandbox serve` through one scenario and asserts what it sees; it
exits 0 on success and prints the reason (and the server's stderr) on failure. The server is
$DSH_SANDBOX; the session store, configuration and workspace come from the environment and the
arguments.

$MCP_ERA picks the client's era: 2025-11-25 (the default: initialize, then the session) or
2026-07-28 (no handshake: every request carries the version and capabilities in its _meta,
approvals come back as input_required results and are answered by a retry). Every scenario that
applies runs in both; the client checks what the era promises of each message it reads.
"""
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time

DSB = os.environ["DSH_SANDBOX"]
TIMEOUT = 30
MODERN_VERSION = "2026-07-28"
ERA = os.environ.get("MCP_ERA", "2025-11-25")
MODERN = ERA == MODERN_VERSION


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


class Server:
    """One `dsh-sandbox serve` child: lines in, lines out, stderr kept in a file."""

    def __init__(self, *args, config=None, env=None, new_session=True):
        argv = [DSB] + (["--config", config] if config else []) + ["serve"] + list(args)
        self.errpath = os.path.join(os.getcwd(), ".serve-stderr-%d" % time.monotonic_ns())
        self.errfile = open(self.errpath, "wb")
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.errfile, env=env,
                                     start_new_session=new_session)
        self.lines = queue.Queue()
        self.next_id = 1000
        self.pending = []  # messages received while waiting for something else
        self.capabilities = {}  # 2026-07-28: what every request's _meta declares
        self.modern_ids = set()  # the ids of requests sent with the 2026 envelope (as JSON)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for raw in self.proc.stdout:
            self.lines.put(raw)
        self.lines.put(None)

    def stderr(self):
        with open(self.errpath, "rb") as f:
            return f.read().decode(errors="replace")

    def send_raw(self, data):
        # The requests that claim the 2026 era: their results are checked for its fields.
        for line in data.split(b"\n"):
            try:
                msg = json.loads(line)
                claim = msg["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"]
                if msg["method"] != "initialize" and claim:
                    self.modern_ids.add(json.dumps(msg["id"]))
            except (ValueError, KeyError, TypeError):
                pass
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, msg):
        """Sends @msg; in the 2026 era a request gets its _meta envelope (ping becomes
        server/discover, the era's one request that is answered at any time)."""
        if MODERN and "method" in msg and "id" in msg and msg["method"] != "initialize":
            msg = dict(msg)
            if msg["method"] == "ping":
                msg["method"] = "server/discover"
            params = dict(msg.get("params") or {})
            meta = dict(params.get("_meta") or {})
            meta.setdefault("io.modelcontextprotocol/protocolVersion", MODERN_VERSION)
            meta.setdefault("io.modelcontextprotocol/clientCapabilities", self.capabilities)
            meta.setdefault("io.modelcontextprotocol/clientInfo",
                            {"name": "t-serve", "version": "1"})
            params["_meta"] = meta
            msg["params"] = params
        self.send_raw(json.dumps(msg).encode() + b"\n")

    def recv(self, timeout=TIMEOUT):
        """The next message (parsed), with its raw line in msg['_raw']; None at EOF."""
        if self.pending:
            return self.pending.pop(0)
        try:
            raw = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise Failure("no message within %ss" % timeout)
        if raw is None:
            return None
        check(raw.endswith(b"\n"), "a message without its newline: %r" % raw)
        msg = json.loads(raw)
        check(isinstance(msg, dict), "not an object: %r" % raw)
        result = msg.get("result")
        modern = json.dumps(msg.get("id")) in self.modern_ids
        if modern and isinstance(result, dict):
            # Every 2026 result says what it is and who answered (MCP 2026-07-28, _meta).
            check(result.get("resultType") in ("complete", "input_required"),
                  "a result without its resultType: %r" % raw)
            info = result.get("_meta", {}).get("io.modelcontextprotocol/serverInfo", {})
            check(info.get("name") == "dsh-sandbox", "a result without serverInfo: %r" % raw)
            # Checked: the scenarios then compare results as in the 2025 era (which have the
            # rest of _meta, a tool error's code, as 2025 results do).
            del result["_meta"]["io.modelcontextprotocol/serverInfo"]
            if not result["_meta"]:
                del result["_meta"]
            if result["resultType"] == "complete":
                del result["resultType"]
        elif isinstance(result, dict):
            check("resultType" not in result and "ttlMs" not in result,
                  "a 2026 field in a 2025 result: %r" % raw)
        msg["_raw"] = raw
        return msg

    def quiet(self, seconds):
        """Asserts nothing arrives for @seconds."""
        check(not self.pending, "unexpected: %r" % self.pending)
        try:
            raw = self.lines.get(timeout=seconds)
        except queue.Empty:
            return
        raise Failure("unexpected message: %r" % raw)

    def wait_for(self, pred, timeout=TIMEOUT):
        """The first message @pred accepts; the others are kept for later."""
        deadline = time.monotonic() + timeout
        kept = []
        try:
            while True:
                left = deadline - time.monotonic()
                check(left > 0, "timed out waiting")
                msg = self.recv(left)
                check(msg is not None, "the server closed its output")
                if pred(msg):
                    return msg
                kept.append(msg)
        finally:
            self.pending = kept + self.pending

    def request(self, method, params=None, rid=None):
        if rid is None:
            self.next_id += 1
            rid = self.next_id
        msg = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        return self.wait_for(lambda m: m.get("id") == rid and "method" not in m)

    def initialize(self, version="2025-11-25", capabilities=None):
        """The 2025 handshake; in the 2026 era, the capabilities kept for every request and
        server/discover instead (its result has the same instructions, logged the same)."""
        if MODERN:
            self.capabilities = capabilities or {}
            r = self.request("server/discover")
            check("result" in r and MODERN_VERSION in r["result"]["supportedVersions"],
                  "server/discover failed: %r" % r)
            return r["result"]
        r = self.request("initialize", {"protocolVersion": version,
                                        "capabilities": capabilities or {},
                                        "clientInfo": {"name": "t-serve", "version": "1"}})
        check("result" in r, "initialize failed: %r" % r)
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return r["result"]

    def ping(self):
        """Whether the server answers a request now (2026: server/discover, as send() does)."""
        r = self.request("ping")
        return r.get("result") == {} or (MODERN and "supportedVersions" in r.get("result", {}))

    def ask(self, params):
        """Sends a tools/call with @params that must ask for approval. Returns the question
        (elicitation/create's params) and what reply() needs to answer it: in 2025 the
        server's request; in 2026 the input_required result, answered by a retry."""
        self.next_id += 1
        rid = self.next_id
        self.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params})
        if not MODERN:
            ask = self.wait_for(lambda m: m.get("method") == "elicitation/create")
            return ask["params"], (rid, ask)
        r = self.wait_for(lambda m: m.get("id") == rid and "method" not in m)
        res = r.get("result", {})
        check(res.get("resultType") == "input_required", "no input_required: %r" % r)
        check(set(res) == {"resultType", "inputRequests", "requestState"},
              "input_required fields: %r" % r)
        check(list(res["inputRequests"]) == ["approval"], "one question: %r" % r)
        question = res["inputRequests"]["approval"]
        check(question["method"] == "elicitation/create", "method: %r" % question)
        check(question["params"].get("mode") == "form", "form mode: %r" % question)
        return question["params"], (rid, (params, res["requestState"]))

    def reply(self, token, result=None, error=None):
        """Answers the question ask() returned; the id whose response ends the call."""
        rid, asked = token
        if not MODERN:
            msg = {"jsonrpc": "2.0", "id": asked["id"]}
            msg.update({"result": result} if error is None else {"error": error})
            self.send(msg)
            return rid
        params, state = asked
        retry = dict(params)
        retry["inputResponses"] = {"approval": result}
        retry["requestState"] = state
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": "tools/call",
                   "params": retry})
        return self.next_id

    def call(self, name, args, rid=None, meta=None):
        params = {"name": name, "arguments": args}
        if meta:
            params["_meta"] = meta
        return self.request("tools/call", params, rid)

    def close(self, timeout=TIMEOUT):
        """Closes the input (the client's shutdown) and waits for a clean exit."""
        self.proc.stdin.close()
        rc = self.proc.wait(timeout)
        check(rc == 0, "server exited %s: %s" % (rc, self.stderr()))


def text_of(result):
    return result["result"]["content"][0]["text"]


def expect_error(msg, code, rid="any"):
    check("error" in msg and msg["error"]["code"] == code, "expected error %d: %r" % (code, msg))
    if rid != "any":
        check(msg["id"] == rid, "expected id %r: %r" % (rid, msg))


def server_for(argv):
    """A server in a new session in the workspace argv[0] (config argv[1] if given)."""
    cfg = argv[1] if len(argv) > 1 and argv[1] else None
    return Server("--cwd", argv[0], config=cfg)


# --- framing and lifecycle ------------------------------------------------------------------

def cmd_framing(argv):
    s = server_for(argv)
    # Before initialize: only ping; the rest is refused, deterministically.
    check(s.request("ping", rid=1)["result"] == {}, "ping")
    expect_error(s.request("tools/list", rid=2), -32600, 2)
    expect_error(s.request("tools/call", {"name": "bash", "arguments": {}}, rid=3), -32600, 3)
    # server/discover is 2026-07-28's, whose _meta envelope it needs (framing-modern has more).
    expect_error(s.request("server/discover", {}, rid="d1"), -32602, "d1")
    s.initialize("2025-06-18")
    expect_error(s.request("initialize", {"protocolVersion": "2025-06-18"}), -32600)
    expect_error(s.request("server/discover", {}, rid="d2"), -32602, "d2")

    def raw(line):
        s.send_raw(line)
        return s.recv()

    expect_error(raw(b"{not json\n"), -32700, None)
    expect_error(raw(b"[{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\"}]\n"), -32600, None)
    expect_error(raw(b"42\n"), -32600, None)
    expect_error(raw(b"\"ping\"\n"), -32600, None)
    expect_error(raw(b"{\"id\":10,\"method\":\"ping\"}\n"), -32600, 10)
    expect_error(raw(b"{\"jsonrpc\":\"1.0\",\"id\":11,\"method\":\"ping\"}\n"), -32600, 11)
    expect_error(raw(b"{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}\n"), -32600, None)
    expect_error(raw(b"{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}\n"), -32600, None)
    expect_error(raw(b"{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"ping\"}\n"), -32600, None)
    expect_error(raw(b"{\"jsonrpc\":\"2.0\",\"id\":12,\"method\":7}\n"), -32600, 12)
    expect_error(raw(b"{\"jsonrpc\":\"2.0\",\"id\":13}\n"), -32600, 13)
    expect_error(s.request("no/such/method", rid=14), -32601, 14)
    expect_error(s.request("tools/list", [1], rid=15), -32602, 15)
    expect_error(s.request("tools/call", {"arguments": {}}, rid=16), -32602, 16)
    expect_error(s.request("tools/call", {"name": "nope", "arguments": {}}, rid=17), -32602, 17)
    expect_error(s.request("logging/setLevel", {"level": "loud"}, rid=18), -32602, 18)
    check(s.request("logging/setLevel", {"level": "warning"}, rid=19)["result"] == {}, "level")

    # Notifications, known or not, and responses to nothing: never answered.
    s.send({"jsonrpc": "2.0", "method": "notifications/whatever", "params": {}})
    s.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": 424242}})
    s.send_raw(b"\n   \n")
    s.send({"jsonrpc": "2.0", "id": 77, "result": {}})
    s.quiet(0.5)

    # A line past the limit (4 MiB): one error, id null, read past without being held.
    hwm_before = vm_hwm(s.proc.pid)
    chunk = b"x" * (1 << 20)
    s.send_raw(b"{\"jsonrpc\":\"2.0\",\"id\":20,\"method\":\"ping\",\"params\":{\"p\":\"")
    for _ in range(48):
        s.send_raw(chunk)
    s.send_raw(b"\"}}\n")
    msg = s.recv()
    expect_error(msg, -32600, None)
    check("4194304" in msg["error"]["message"], "the limit is named: %r" % msg)
    grown = vm_hwm(s.proc.pid) - hwm_before
    check(grown < 24 << 20, "the server grew by %d KiB reading a 48 MiB line" % (grown >> 10))
    # ...and the connection goes on.
    check(s.request("ping", rid=21)["result"] == {}, "ping after the long line")
    s.quiet(0.3)
    s.close()


def vm_hwm(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def cmd_versions(argv):
    for asked, answered in [("2025-06-18", "2025-06-18"), ("2025-11-25", "2025-11-25"),
                            ("2024-11-05", "2025-11-25"), ("1.0.0", "2025-11-25")]:
        s = server_for(argv)
        r = s.initialize(asked)
        check(r["protocolVersion"] == answered, "%s -> %r" % (asked, r["protocolVersion"]))
        check(r["capabilities"] == {"tools": {}, "logging": {}}, "capabilities %r" % r)
        check(r["serverInfo"]["name"] == "dsh-sandbox", "serverInfo %r" % r)
        check("Check the [exit code: N] marker" in r["instructions"], "sections")
        check("Current runtime context." in r["instructions"], "snapshot")
        s.close()
    s = server_for(argv)
    expect_error(s.request("initialize", {"capabilities": {}}), -32602)
    s.close()


def cmd_tools_list(argv):
    golden = open(argv[2], "rb").read().rstrip(b"\n")
    s = server_for(argv)
    s.initialize()
    r = s.request("tools/list", rid=5)
    want = b'{"jsonrpc":"2.0","id":5,"result":{"tools":' + golden + b'}}\n'
    if MODERN:  # the same tools, then how long they may be cached, and the 2026 fields
        want = (b'{"jsonrpc":"2.0","id":5,"result":{"tools":' + golden +
                b',"ttlMs":3600000,"cacheScope":"public","resultType":"complete","_meta":'
                b'{"io.modelcontextprotocol/serverInfo":{"name":"dsh-sandbox","version":"' +
                server_version().encode() + b'"}}}}\n')
    check(r["_raw"] == want, "tools/list differs from %s:\n%s" % (argv[2], r["_raw"].decode()))
    s.close()


def server_version():
    return subprocess.run([DSB, "--version"], capture_output=True, text=True,
                          check=True).stdout.split()[-1]


def meta(version=MODERN_VERSION, capabilities=None, **more):
    m = {"io.modelcontextprotocol/protocolVersion": version,
         "io.modelcontextprotocol/clientCapabilities": {} if capabilities is None else capabilities}
    m.update(more)
    return m


def cmd_framing_modern(argv):
    """2026-07-28 on its own and beside 2025: discovery at any time, the envelope's errors,
    the methods the era dropped, no state kept between requests."""
    s = server_for(argv)
    send = Server.send_raw

    def raw(rid, method, params):
        send(s, json.dumps({"jsonrpc": "2.0", "id": rid, "method": method,
                            "params": params}).encode() + b"\n")
        return s.wait_for(lambda m: m.get("id") == rid)

    # Discovery before anything, and without initialize ever coming.
    d = raw(1, "server/discover", {"_meta": meta(clientInfo={"name": "x", "version": "1"})})
    res = d["result"]
    check(res["supportedVersions"] == ["2026-07-28", "2025-11-25", "2025-06-18"], "%r" % d)
    check(res["capabilities"] == {"tools": {}, "logging": {}}, "capabilities %r" % d)
    check("Current runtime context." in res["instructions"], "instructions %r" % d)
    check(res["ttlMs"] == 0 and res["cacheScope"] == "private", "cache hints %r" % d)
    check("serverInfo" not in res and "protocolVersion" not in res, "2025 fields %r" % d)
    check(b'"resultType":"complete"' in d["_raw"], "resultType %r" % d["_raw"])
    check(b'"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"dsh-sandbox","version":"'
          in d["_raw"], "serverInfo %r" % d["_raw"])
    t = raw(2, "tools/list", {"_meta": meta()})
    check([x["name"] for x in t["result"]["tools"]] ==
          ["bash", "edit", "job_kill", "job_list", "job_output", "read", "write"], "%r" % t)
    check(t["result"]["ttlMs"] == 3600000 and t["result"]["cacheScope"] == "public", "%r" % t)
    c = raw(3, "tools/call", {"name": "bash", "arguments": {"command": "echo modern",
                                                            "description": "Echo"},
                              "_meta": meta()})
    check(c["result"]["content"][0]["text"] == "modern\n", "%r" % c)

    # The envelope: malformed is -32602, a version not served -32022 naming ours.
    expect_error(raw(10, "server/discover", {}), -32602, 10)
    expect_error(raw(11, "server/discover", None), -32602, 11)
    expect_error(raw(12, "tools/list", {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28"}}), -32602, 12)
    expect_error(raw(13, "tools/list", {"_meta": {
        "io.modelcontextprotocol/clientCapabilities": {}}}), -32602, 13)
    expect_error(raw(14, "tools/list", {"_meta": meta(capabilities=[])}), -32602, 14)
    expect_error(raw(15, "tools/list", {"_meta": meta(version=20260728)}), -32602, 15)
    expect_error(raw(16, "tools/list", {"_meta": meta(**{
        "io.modelcontextprotocol/logLevel": "loud"})}), -32602, 16)
    expect_error(raw(17, "server/discover", {"_meta": "x"}), -32602, 17)
    for rid, version in ((20, "2027-01-01"), (21, "2025-11-25"), (22, "")):
        e = raw(rid, "tools/list", {"_meta": meta(version=version)})
        expect_error(e, -32022, rid)
        check(e["error"]["message"] == "Unsupported protocol version", "%r" % e)
        check(e["error"]["data"] == {"supported": ["2026-07-28", "2025-11-25", "2025-06-18"],
                                     "requested": version}, "data %r" % e)
    # What the era dropped, and what it never had.
    expect_error(raw(30, "ping", {"_meta": meta()}), -32601, 30)
    expect_error(raw(31, "logging/setLevel", {"level": "info", "_meta": meta()}), -32601, 31)
    expect_error(raw(32, "resources/list", {"_meta": meta()}), -32601, 32)
    expect_error(raw(33, "tools/call", {"name": "nope", "arguments": {}, "_meta": meta()}),
                 -32602, 33)
    expect_error(raw(34, "tools/call", {"arguments": {}, "_meta": meta()}), -32602, 34)
    # Nothing is kept between requests: a 2025 request is still before its initialize.
    expect_error(raw(40, "tools/list", {}), -32600, 40)
    # Both eras in one process: the handshake, then either kind of request.
    r = raw(41, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                               "clientInfo": {"name": "x", "version": "1"}})
    check(r["result"]["protocolVersion"] == "2025-11-25", "%r" % r)
    check(b'"resultType"' not in r["_raw"], "a 2026 field in initialize %r" % r["_raw"])
    l = raw(42, "tools/list", {})
    check(b'"ttlMs"' not in l["_raw"] and b'"resultType"' not in l["_raw"], "%r" % l["_raw"])
    check(raw(43, "ping", {})["result"] == {}, "ping")
    d = raw(44, "server/discover", {"_meta": meta()})
    check(d["result"]["supportedVersions"][0] == "2026-07-28", "%r" % d)
    s.quiet(0.3)
    s.close()


def cmd_mrtr(argv):
    """mrtr WS OUT: approvals in 2026-07-28, attacked: nothing logged or run on the question;
    a forged, replayed, expired or other-call requestState refused (-32602) and nothing run; a
    retry without the answer asked again; no elicitation declared: nobody to ask."""
    ws, out = argv[0], argv[1]
    target = os.path.join(out, "ran")
    sid = subprocess.run([DSB, "session", "new", "--cwd", ws], check=True,
                         capture_output=True, text=True).stdout.strip()
    quick = os.path.join(os.getcwd(), "quick.yaml")
    with open(quick, "w") as f:
        f.write("approval: { timeoutMs: 400 }\n")

    def log_lines():
        return subprocess.run([DSB, "session", "log", sid], check=True, capture_output=True,
                              text=True).stdout.count("\n")

    def args(tag):
        return {"command": "echo %s >> %s; echo %s" % (tag, target, tag),
                "description": "Append", "sandbox_permissions": "danger-full-access",
                "justification": "the test asks for " + tag}

    def call_params(tag):
        return {"name": "bash", "arguments": args(tag)}

    def retry(s, params, state, answer="allow", responses=True):
        p = dict(params)
        if responses:
            p["inputResponses"] = {"approval": {"action": "accept",
                                                "content": {"decision": answer}}}
        if state is not None:
            p["requestState"] = state
        return s.request("tools/call", p)

    def ran():
        return open(target).read().split() if os.path.exists(target) else []

    s = Server("--session", sid)
    s.initialize(capabilities={"elicitation": {}})
    before = log_lines()
    question, (_, (params_a, state_a)) = s.ask(call_params("a"))
    check(log_lines() == before, "the question logged something")
    check(ran() == [], "ran before the answer")
    check(len(state_a) == 32 and all(c in "0123456789abcdef" for c in state_a), state_a)

    # Forged: any other handle names nothing; the true one is still good after.
    forged = "%032x" % (int(state_a, 16) ^ 1)
    for bad, why in ((forged, "was not issued by this server"),
                     ("", "was not issued by this server"),
                     ("x" * 5000, "was not issued by this server")):
        r = retry(s, params_a, bad)
        expect_error(r, -32602)
        check(why in r["error"]["message"], "forged %r: %r" % (bad[:40], r))
    expect_error(retry(s, params_a, 7), -32602)
    r = retry(s, params_a, None)
    expect_error(r, -32602)
    check("requestState" in r["error"]["message"], "responses without a state: %r" % r)
    check(ran() == [] and log_lines() == before, "a refused retry ran or logged")

    # The true retry runs once, with its audit pair; the replay is refused.
    r = retry(s, params_a, state_a)
    check(text_of(r) == "a\n", "the approved retry: %r" % r)
    check(ran() == ["a"], "ran %r" % ran())
    log = subprocess.run([DSB, "session", "log", sid], check=True, capture_output=True,
                         text=True).stdout
    check('"outcome":"allowed-once"' in log and log.count('"approval/asked"') == 1, log)
    r = retry(s, params_a, state_a)
    expect_error(r, -32602)
    check("already used" in r["error"]["message"], "replay: %r" % r)
    check(ran() == ["a"], "the replay ran: %r" % ran())

    # Another call's state: refused, and spent (it is not tried twice).
    _, (_, (params_b, state_b)) = s.ask(call_params("b"))
    r = retry(s, call_params("c"), state_b)
    expect_error(r, -32602)
    check("issued for another tool call" in r["error"]["message"], "other call: %r" % r)
    other = dict(params_b)
    other["name"] = "write"
    other["arguments"] = {"file_path": "x", "content": "y"}
    r = retry(s, other, state_b)
    expect_error(r, -32602)
    r = retry(s, params_b, state_b)
    expect_error(r, -32602)
    check("already used" in r["error"]["message"], "spent: %r" % r)
    check(ran() == ["a"], "another call's state ran something: %r" % ran())

    # A retry without the answer is asked again, with a new state; then a deny.
    _, (_, (params_d, state_d)) = s.ask(call_params("d"))
    r = retry(s, params_d, state_d, responses=False)
    res = r["result"]
    check(res.get("resultType") == "input_required" and res["requestState"] != state_d,
          "asked again: %r" % r)
    r = retry(s, params_d, res["requestState"], answer="deny")
    check(text_of(r) == 'Error: the user rejected escalating this command to '
          '"danger-full-access"', "deny: %r" % r)
    check(ran() == ["a"], "ran although denied: %r" % ran())
    s.close()

    # Expired: approval.timeoutMs is how long the question stands.
    s = Server("--session", sid, config=quick)
    s.initialize(capabilities={"elicitation": {"form": {}}})
    _, (_, (params_e, state_e)) = s.ask(call_params("e"))
    time.sleep(1.0)
    r = retry(s, params_e, state_e)
    expect_error(r, -32602)
    check("has expired" in r["error"]["message"], "expired: %r" % r)
    check(ran() == ["a"], "an expired state ran: %r" % ran())
    s.close()

    # A state from another server process names nothing here.
    s = Server("--session", sid)
    s.initialize(capabilities={"elicitation": {}})
    _, (_, (params_f, state_f)) = s.ask(call_params("f"))
    s.close()
    s = Server("--session", sid)
    s.initialize(capabilities={"elicitation": {}})
    r = retry(s, params_f, state_f)
    expect_error(r, -32602)
    check("not issued by this server" in r["error"]["message"], "other process: %r" % r)

    # No elicitation in this request's _meta: nobody to ask, whatever came before.
    r = s.call("bash", args("g"), meta=meta())
    check(r["result"].get("isError") is True and text_of(r) ==
          'Error: sandbox escalation to "danger-full-access" requires approval, but no '
          'approval channel is available', "no elicitation: %r" % r)
    check(ran() == ["a"], "ran without approval: %r" % ran())
    s.close()


def cmd_instructions(argv):
    """Prints the instructions (the caller compares them with DSH's texts)."""
    s = server_for(argv)
    sys.stdout.write(s.initialize()["instructions"])
    s.close()


# --- tools ----------------------------------------------------------------------------------

def cmd_call(argv):
    """call WS CONFIG TOOL ARGS_JSON [SESSION]: prints isError, then the text, raw. ARGS_JSON
    may be @FILE, for arguments longer than a command line holds. With MCP_CALL_CODE set, the
    first line is the result's _meta code instead ("code=NAME", "code=" for none); with
    MCP_CALL_STRUCTURED, the structuredContent follows, after "[structured]"."""
    ws, cfg, tool, args = argv[0], argv[1] or None, argv[2], argv[3]
    if args.startswith("@"):
        with open(args[1:]) as f:
            args = f.read()
    args = json.loads(args)
    s = Server(*(["--session", argv[4]] if len(argv) > 4 else ["--cwd", ws]), config=cfg)
    s.initialize()
    r = s.call(tool, args)
    res = r["result"]
    if os.environ.get("MCP_CALL_CODE"):
        sys.stdout.write("code=%s\n" % res.get("_meta", {}).get("dsh-sandbox/code", ""))
    sys.stdout.write("isError=%s\n%s" % (str(res.get("isError")).lower(),
                                         res["content"][0]["text"]))
    if os.environ.get("MCP_CALL_STRUCTURED"):
        sys.stdout.write("\n[structured]\n" + json.dumps(res.get("structuredContent")))
    s.close()
    if os.environ.get("MCP_CALL_STDERR"):
        sys.stdout.write("\n[server stderr]\n" + s.stderr())


def cmd_elicit(argv):
    """elicit WS CONFIG SESSION ANSWER ARGS_JSON [AGAIN_JSON]: a bash escalation asked through
    elicitation and answered ANSWER (allow, deny, allow-session, decline, cancel, error,
    silent: never; none: no question may come); prints isError and the text; with AGAIN_JSON
    (after allow-session), a second call that must be allowed without a question, then its
    isError and text too. In the 2026 era the question is an input_required result and the
    answer a retry; an error answer has no such form (the 2025 era alone has it), and a silent
    client simply never retries."""
    ws, cfg, sid, answer, args = argv[0], argv[1] or None, argv[2], argv[3], json.loads(argv[4])
    s = Server("--session", sid, config=cfg)
    s.initialize(capabilities={"elicitation": {"form": {}}})

    def result_of(r):
        res = r["result"]
        check("resultType" not in res, "not complete: %r" % r)
        return "isError=%s\n%s" % (str(res.get("isError")).lower(), res["content"][0]["text"])

    def asked_or_answered(rid):
        return lambda m: (m.get("id") == rid and "method" not in m or
                          m.get("method") == "elicitation/create")

    if answer == "none":
        # Someone else answers (the configured answerer program): no question comes.
        s.next_id += 1
        rid = s.next_id
        s.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                "params": {"name": "bash", "arguments": args}})
        r = s.wait_for(asked_or_answered(rid))
        check("method" not in r, "asked although an answerer program is configured: %r" % r)
        sys.stdout.write(result_of(r))
        s.close()
        return
    params, token = s.ask({"name": "bash", "arguments": args})
    # DSB_ELICIT_MESSAGE=FILE: the question's text saved, UTF-8, for the caller to inspect.
    if os.environ.get("DSB_ELICIT_MESSAGE"):
        with open(os.environ["DSB_ELICIT_MESSAGE"], "wb") as f:
            f.write(params["message"].encode("utf-8", "surrogatepass"))
    # Printable values are shown as they are (the others escaped: the caller checks those).
    for part in ("tool: bash", "command: " + args["command"],
                 "mode: " + args["sandbox_permissions"], "justification: " + args["justification"]):
        if part.isprintable():
            check(part in params["message"],
                  "the question lacks %r: %r" % (part, params["message"]))
    decision = params["requestedSchema"]["properties"]["decision"]
    check(params["requestedSchema"]["required"] == ["decision"], "required: %r" % params)
    choices = ["allow", "allow-session", "deny"] if answer == "allow-session" else None
    check(choices is None or decision["enum"] == choices, "choices: %r" % decision)
    if answer in ("allow", "deny", "allow-session"):
        rid = s.reply(token, {"action": "accept", "content": {"decision": answer}})
    elif answer in ("decline", "cancel"):
        rid = s.reply(token, {"action": answer})
    elif answer == "error":
        check(not MODERN, "an error answer is the 2025 era's alone")
        rid = s.reply(token, error={"code": -32601, "message": "Method not found"})
    else:
        check(answer == "silent", "unknown answer %r" % answer)
        if MODERN:
            # Nothing was logged or run, and nothing waits: the retry never comes.
            s.quiet(0.5)
            s.close()
            return
        # No answer: the server withdraws its question once approval.timeoutMs has passed.
        rid = token[0]
        gone = s.wait_for(lambda m: m.get("method") == "notifications/cancelled")
        check(gone["params"]["requestId"] == token[1]["id"], "withdrawn: %r" % gone)
    r = s.wait_for(lambda m: m.get("id") == rid and "method" not in m)
    sys.stdout.write(result_of(r))
    if len(argv) > 5:
        s.next_id += 1
        rid = s.next_id
        s.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                "params": {"name": "bash", "arguments": json.loads(argv[5])}})
        r = s.wait_for(asked_or_answered(rid))
        check("method" not in r and "resultType" not in r["result"],
              "asked again after allow-session: %r" % r)
        sys.stdout.write("\n" + result_of(r))
    s.close()


def cmd_fs(argv):
    """DSH's write, edit and read through one server session, with the observation rule."""
    ws = argv[0]
    s = server_for(argv)
    s.initialize()
    path = os.path.join(os.path.realpath(ws), "notes.txt")
    hint = ("[sandbox: escalation available — retry this exact operation once with "
            "sandbox_permissions (the narrowest wider mode that suffices) + justification; the "
            "approval prompt asks the user]")

    def call(tool, args, is_error=False):
        r = s.call(tool, args)
        check(r["result"]["isError"] is is_error, "%s %r: %r" % (tool, args, r))
        return r["result"]

    # read-only (the default): the fence refuses, with DSH's marker and hint.
    res = call("write", {"file_path": "notes.txt", "content": "x"}, True)
    check(res["content"][0]["text"] == "Error: [sandbox: file access denied under read-only "
          "mode]\n" + hint, "denial %r" % res)
    sid = session_of(s)
    subprocess.run([DSB, "session", "mode", sid, "workspace-write"], check=True,
                   stdout=subprocess.DEVNULL)

    res = call("write", {"file_path": "notes.txt", "content": "one\ntwo\nthree\n"})
    check(res["content"][0]["text"] == "<path>%s</path>\n<type>file</type>\n<content>\nCreated "
          "file\n</content>" % path, "created %r" % res)
    check(res["structuredContent"] == {"path": path, "operation": "create"}, "structured")
    # The mode switch is news to the model: the snapshot rides on the next result.
    check(len(res["content"]) == 2 and "workspace-write" in res["content"][1]["text"],
          "the snapshot block after the switch: %r" % res["content"])
    res = call("edit", {"file_path": "notes.txt", "old_string": "two", "new_string": "2"})
    check(res["content"][0]["text"] == "The file %s has been updated successfully." % path,
          "edit %r" % res)
    check(len(res["content"]) == 1, "no snapshot when nothing changed")
    res = call("read", {"file_path": "notes.txt", "offset": 2, "limit": 1})
    check(res["content"][0]["text"] == "<path>%s</path>\n<type>file</type>\n<content>\n2: 2\n\n"
          "(Showing lines 2-2 of 3. Use offset=3 to continue.)\n</content>" % path,
          "read %r" % res)
    check(res["structuredContent"] == {"path": path, "offset": 2, "lines":
                                       [{"number": 2, "text": "2"}], "totalLines": 3},
          "read structured %r" % res["structuredContent"])
    # Changed outside the session: stale, with DSH's remedy.
    with open(path, "a") as f:
        f.write("four\n")
    res = call("edit", {"file_path": "notes.txt", "old_string": "one", "new_string": "1"}, True)
    check(res["content"][0]["text"] == "Error: cannot edit \"%s\": file changed since it was "
          "read — re-read the file, then retry" % path, "stale %r" % res)
    # Never read: DSH's fs-policy-reject fixture.
    with open(os.path.join(ws, "settings.txt"), "w") as f:
        f.write("a=1\n")
    res = call("edit", {"file_path": "settings.txt", "old_string": "1", "new_string": "2"}, True)
    check(res["content"][0]["text"] == "Error: edit requires reading \"%s\" first — read the "
          "file, then retry" % os.path.join(os.path.realpath(ws), "settings.txt"),
          "not observed %r" % res)
    res = call("write", {"file_path": "settings.txt", "content": "b\n"}, True)
    check("without reading it first — read the file, then retry" in res["content"][0]["text"],
          "write over unread %r" % res)
    res = call("read", {"file_path": "nope.txt"}, True)
    check(res["content"][0]["text"] == "Error: cannot read \"%s\": not found"
          % os.path.join(os.path.realpath(ws), "nope.txt"), "not found %r" % res)
    res = call("read", {"file_path": "notes.txt", "offset": 9}, True)
    check(res["content"][0]["text"] == "Error: offset 9 is out of range for \"%s\" (4 lines)"
          % path, "range %r" % res)
    s.close()


def session_of(s):
    for line in s.stderr().splitlines():
        if line.startswith("dsh-sandbox serve: session "):
            return line.split()[3]
    raise Failure("no session id on stderr: %s" % s.stderr())


def job(s, name, args):
    """A job tool's call: (is_error, blocks' texts)."""
    r = s.call(name, args)
    return r["result"]["isError"], [b["text"] for b in r["result"]["content"]]


def start_job(s, command, **more):
    args = {"command": command, "description": "Job", "run_in_background": True}
    args.update(more)
    r = s.call("bash", args)
    return r["result"]["isError"], text_of(r)


def cmd_background(argv):
    """background WS MARK: run_in_background, job_output, job_kill, job_list and the
    completion notice, DSH's texts; a cancelled wait; nothing left at the end."""
    ws, mark = argv[0], unique(argv[1])
    s = Server("--cwd", ws)
    s.initialize()
    if not MODERN:  # 2026-07-28 has no level for a connection: the notice rides in-band only
        s.request("logging/setLevel", {"level": "notice"})

    # The escalation pairing comes first; a start that fails takes no id.
    err, text = start_job(s, "ls", justification="because")
    check(err and text == "Error: invalid escalation: justification is only valid together "
          "with sandbox_permissions", "pairing first: %r" % text)
    check(job(s, "job_list", {}) == (False, ["(no background jobs)"]), "no jobs yet")

    gate = os.path.join(ws, "go-" + mark)
    cmd1 = "printf 'line one\\n'; while [ ! -e %s ]; do sleep 0.05; done; echo two >&2; " \
           "exit 3" % os.path.basename(gate)
    r = s.call("bash", {"command": cmd1, "description": "Job", "run_in_background": True})
    check(r["result"] == {"content": [{"type": "text", "text": "started background job bash-1"}],
                          "structuredContent": {"kind": "background", "jobId": "bash-1"},
                          "isError": False}, "start bash-1: %r" % r)
    check(job(s, "job_list", {}) == (False, ["bash-1 [bash] running — " + cmd1]), "list")
    # Reads consume: the first line once, then nothing new while it runs.
    seen = ""
    deadline = time.monotonic() + TIMEOUT
    while "line one" not in seen:
        check(time.monotonic() < deadline, "no output: %r" % seen)
        err, texts = job(s, "job_output", {"job_id": "bash-1"})
        check(not err and texts[0].endswith("[status: running]"), "running: %r" % texts)
        seen += texts[0]
    check(job(s, "job_output", {"job_id": "bash-1"}) ==
          (False, ["(no new output)\n[status: running]"]), "nothing new")
    open(gate, "w").close()
    want = "[stderr]\ntwo\n[status: completed, exit code: 3]"
    check(job(s, "job_output", {"job_id": "bash-1", "wait": True}) == (False, [want]),
          "waited")
    check(job(s, "job_output", {"job_id": "bash-1"}) ==
          (False, ["(no new output)\n[status: completed, exit code: 3]"]), "after")
    check(job(s, "job_kill", {"job_id": "bash-1"}) ==
          (False, ["job bash-1 had already finished [status: completed, exit code: 3]"]),
          "kill settled")

    # DSH's errors.
    check(job(s, "job_output", {"job_id": "bash-99"}) == (True, ["Error: unknown job bash-99"]),
          "unknown")
    check(job(s, "job_kill", {"job_id": ""}) ==
          (True, ['Error: invalid job_id: expected a non-empty string, got ""']), "empty id")
    check(job(s, "job_output", {"job_id": "bash-1", "wait": True, "timeout_ms": 0}) ==
          (True, ["Error: invalid wait timeout: expected a positive number of "
                  "milliseconds, got 0"]), "zero wait")

    # A kill: requested at once, killed by SIGTERM, its process gone.
    cmd2 = "exec -a %s-kill sleep 100" % mark
    check(start_job(s, cmd2) == (False, "started background job bash-2"), "start bash-2")
    wait_running(mark + "-kill")
    check(job(s, "job_kill", {"job_id": "bash-2", "reason": "done"}) ==
          (False, ["requested cancellation of job bash-2"]), "kill")
    err, texts = job(s, "job_output", {"job_id": "bash-2", "wait": True})
    check(texts == ["(no new output)\n[status: killed, signal: SIGTERM]"], "killed: %r" % texts)
    wait_gone(mark + "-kill", 10)

    # A job nobody reads: its notice rides on the next results, once, and is logged.
    cmd3 = "sleep 0.2; echo done"
    check(start_job(s, cmd3) == (False, "started background job bash-3"), "start bash-3")
    notice = ("background job bash-3 (bash: sleep 0.2; echo done) finished [status: "
              "completed, exit code: 0]. Read its output with job_output.")
    if not MODERN:
        logged = s.wait_for(lambda m: m.get("method") == "notifications/message")
        check(logged["params"] == {"level": "notice", "logger": "dsh-sandbox", "data": notice},
              "logged: %r" % logged)
        err, texts = job(s, "job_list", {})
    else:
        # No log message tells when bash-3 ended: the first list that carries the notice.
        deadline = time.monotonic() + TIMEOUT
        while True:
            err, texts = job(s, "job_list", {})
            if len(texts) > 1 or time.monotonic() > deadline:
                break
            time.sleep(0.1)
    check(texts == ["bash-1 [bash] completed — %s\nbash-2 [bash] killed — %s\n"
                    "bash-3 [bash] completed — %s" % (cmd1, cmd2, cmd3), notice],
          "notice block: %r" % texts)
    check(len(job(s, "job_list", {})[1]) == 1, "the notice came once")
    check(job(s, "job_output", {"job_id": "bash-3"}) ==
          (False, ["done\n[status: completed, exit code: 0]"]), "read bash-3")

    # Starts cancelled as they are made: a job whose id no response announced is not left
    # running (the model could never stop it).
    for i in range(10):
        s.send({"jsonrpc": "2.0", "id": 200 + i, "method": "tools/call", "params": {
            "name": "bash", "arguments": {"command": "exec -a %s-unseen sleep 100" % mark,
                                          "description": "Job", "run_in_background": True}}})
        time.sleep(0.005 * i)  # the cancel lands before, during and after the start
        s.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": 200 + i}})
    announced = set()
    while True:  # every start has answered or been dropped once the output is quiet
        try:
            m = s.recv(2)
        except Failure:
            break
        if m.get("id") in range(200, 210) and "result" in m:
            announced.add(text_of(m).split()[-1])
    err, texts = job(s, "job_list", {})
    for line in texts[0].split("\n"):
        jid, status = line.split()[0], line.split()[2]
        check(status != "running" or jid in announced,
              "an unannounced job runs: %s (announced %s)" % (line, announced))
    for jid in announced:
        job(s, "job_kill", {"job_id": jid})

    # A wait cancelled: no response, the server still answers, and ends at once.
    err, text = start_job(s, "exec -a %s-wait sleep 100" % mark)
    check(not err and text.startswith("started background job bash-"), "start: %r" % text)
    waited = text.split()[-1]
    wait_running(mark + "-wait")
    s.send({"jsonrpc": "2.0", "id": 77, "method": "tools/call", "params": {
        "name": "job_output", "arguments": {"job_id": waited, "wait": True,
                                            "timeout_ms": 600000}}})
    time.sleep(0.3)
    s.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 77}})
    check(s.ping(), "the server answers")
    s.quiet(0.5)
    t0 = time.monotonic()
    s.close(timeout=15)
    check(time.monotonic() - t0 < 10, "the end waited for the wait")
    wait_gone(mark, 10)


def cmd_unavailable(argv):
    """unavailable WS CONFIG: with no usable backend (a runner that does not exist), a confined
    call fails closed and a background job settles killed: neither command runs."""
    ws, cfg = argv[0], argv[1]
    s = Server("--cwd", ws, config=cfg)
    s.initialize()
    marker = os.path.join(ws, "ran")
    r = s.call("bash", {"command": "touch ran", "description": "Touch"})
    check(r["result"]["isError"] is True and text_of(r).startswith(
        'Error: sandbox mode "read-only" is requested but no sandbox backend is usable on this '
        'host; refusing to run the command unconfined.'), "foreground: %r" % r)
    check(start_job(s, "touch ran") == (False, "started background job bash-1"), "start")
    err, texts = job(s, "job_output", {"job_id": "bash-1", "wait": True})
    check(texts[0].endswith("[sandbox: the sandbox runner itself failed under read-only mode — "
                            "the command did not run; this is a sandbox problem, not a command "
                            "failure]\n[status: killed, killed before exit]"), "job: %r" % texts)
    check(not os.path.exists(marker), "a command ran")
    s.close()


def cmd_background_confined(argv):
    """background-confined WS CONFIG: a job is confined as a foreground call is: its denial
    and hint on job_output; an escalation nobody can approve starts nothing."""
    ws, cfg = argv[0], argv[1] or None
    s = Server("--cwd", ws, config=cfg)
    s.initialize()
    check(start_job(s, "touch denied-file") == (False, "started background job bash-1"),
          "start")
    err, texts = job(s, "job_output", {"job_id": "bash-1", "wait": True})
    fg = s.call("bash", {"command": "touch denied-file", "description": "Touch"})
    body = text_of(fg).replace("[exit code: 1]", "[status: completed, exit code: 1]")
    check(texts == [body], "the job's denial %r is the call's %r" % (texts, text_of(fg)))
    check("[sandbox: file access denied under read-only mode]" in body, "denied: %r" % body)
    check(not os.path.exists(os.path.join(ws, "denied-file")), "the file was made")
    err, text = start_job(s, "touch wider", sandbox_permissions="workspace-write",
                          justification="the test asks for it")
    check(err and text.startswith("Error: ") and "bash-" not in text, "escalation: %r" % text)
    check(start_job(s, "true")[1] == "started background job bash-2", "no id taken")
    check(not os.path.exists(os.path.join(ws, "wider")), "the escalated file was made")

    # The command inherits nothing of the server, its spawner or the monitor but stdio (ls's
    # own directory descriptor is 3), and cannot kill its monitor: Landlock's signal scope
    # refuses it; under bwrap the monitor is outside its PID namespace ($PPID is the
    # namespace's init, which ignores the signal); under Landlock where no cgroup holds the
    # call, the command runs in a PID namespace too, its parent outside: $PPID is 0, and
    # `kill 0` ends its own group. Either way the monitor lives and the server goes on.
    fds = s.call("bash", {"command": "ls /proc/self/fd | tr '\\n' ' '", "description": "Fds"})
    check(text_of(fds) == "0 1 2 3 ", "inherited descriptors: %r" % text_of(fds))
    ppid = text_of(s.call("bash", {"command": "echo $PPID", "description": "Parent"}))
    r = s.call("bash", {"command": "kill -KILL $PPID && echo sent; sleep 0.2; echo alive",
                        "description": "Kill"})
    if "bwrap" in (cfg or ""):
        killed = text_of(r).startswith("sent\nalive\n")
    elif ppid.strip() == "0":
        killed = text_of(r) == "(no output)\n[killed by signal: SIGKILL]"
    else:
        killed = text_of(r).startswith("alive\n[stderr]\n")
    check(killed, "kill the monitor: %r (parent %r)" % (text_of(r), ppid))
    nxt = text_of(s.call("bash", {"command": "echo next", "description": "Next"}))
    check(nxt.startswith("next\n"), "a call after the kill: %r" % nxt)
    s.close()


# --- concurrency, cancellation, progress ----------------------------------------------------

def children_of(pid):
    """The children of @pid, from /proc (every thread's list)."""
    kids = []
    for task in os.listdir("/proc/%d/task" % pid):
        with open("/proc/%d/task/%s/children" % (pid, task)) as f:
            kids += [int(k) for k in f.read().split()]
    return kids


def alive(pid):
    """Whether @pid runs (a zombie does not: it only waits for its reaper)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def cmd_warm(argv):
    """warm WS: the spawner keeps monitors waiting for calls (its children that are not a
    call's); each serves one call, and whether the server ends by closing its input or by
    SIGKILL, the spawner and every waiting monitor are gone with it."""
    for how in ("close", "KILL"):
        s = server_for(argv)
        s.initialize()
        spawner = children_of(s.proc.pid)
        check(len(spawner) == 1, "the server's children: %r" % spawner)
        deadline = time.monotonic() + TIMEOUT
        while len(children_of(spawner[0])) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        waiting = children_of(spawner[0])
        check(len(waiting) == 2, "monitors waiting: %r" % waiting)
        # A call is served by one of them, which is then gone; another takes its place.
        check(text_of(s.call("bash", {"command": "echo served", "description": "Echo"})) ==
              "served\n", "served")
        deadline = time.monotonic() + TIMEOUT
        while sum(alive(p) for p in waiting) > 1 and time.monotonic() < deadline:
            time.sleep(0.02)
        check(sum(alive(p) for p in waiting) == 1, "the monitor that served is not gone")
        while len([p for p in children_of(spawner[0]) if alive(p)]) < 2 and \
                time.monotonic() < deadline:
            time.sleep(0.02)
        now = [p for p in children_of(spawner[0]) if alive(p)]
        check(len(now) == 2 and set(now) != set(waiting), "not replaced: %r %r" % (waiting, now))
        if how == "close":
            s.close()
        else:
            os.kill(s.proc.pid, signal.SIGKILL)
            s.proc.wait()
        deadline = time.monotonic() + TIMEOUT
        left = spawner + now
        while any(alive(p) for p in left) and time.monotonic() < deadline:
            time.sleep(0.05)
        check(not any(alive(p) for p in left),
              "after %s: %r still run" % (how, [p for p in left if alive(p)]))


def cmd_concurrent(argv):
    """32 calls at once, 3 s each: all answered in far less than 96 s; a ping sent after them
    is answered before any of them (timing-free: the machine may be loaded)."""
    s = server_for(argv)
    s.initialize()
    t0 = time.monotonic()
    for i in range(32):
        s.send({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {
            "name": "bash", "arguments": {"command": "sleep 3; echo call-%d" % i,
                                          "description": "Sleep"}}})
    s.send({"jsonrpc": "2.0", "id": "ping", "method": "ping"})
    first = s.recv(60)
    check(first is not None and first.get("id") == "ping", "ping waited: %r" % first)
    # The monitors come from the spawner, the server's one child, not from the server.
    children = children_of(s.proc.pid)
    check(len(children) == 1, "the server's children: %r" % children)
    deadline = time.monotonic() + 20
    while not children_of(children[0]) and time.monotonic() < deadline:
        time.sleep(0.02)
    check(children_of(children[0]), "no monitor below the spawner")
    check(children_of(s.proc.pid) == children, "the server forked: %r" % children_of(s.proc.pid))
    seen = set()
    while len(seen) < 32:
        m = s.wait_for(lambda m: isinstance(m.get("id"), int), timeout=90)
        check(m["id"] not in seen, "two answers for %r" % m["id"])
        check(text_of(m) == "call-%d\n" % m["id"], "answer %r" % m)
        seen.add(m["id"])
    took = time.monotonic() - t0
    check(took < 48, "32 three-second calls took %.1f s: not run at once" % took)
    s.quiet(0.5)
    s.close()


def cmd_cancel(argv):
    """Cancelling a running call: no response, the command is gone; racing completion: one or none."""
    mark = unique(argv[2])
    s = server_for(argv)
    s.initialize()
    s.send({"jsonrpc": "2.0", "id": "long", "method": "tools/call", "params": {
        "name": "bash", "arguments": {"command": "exec -a %s-long sleep 300" % mark,
                                      "description": "Sleep"}}})
    wait_running(mark + "-long")
    s.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": "long", "reason": "test"}})
    wait_gone(mark, 10)
    check(s.ping(), "ping after the cancel")
    s.quiet(1.0)

    # Racing: quick calls cancelled at once. Each gets exactly one answer or none.
    n = 40
    for i in range(n):
        s.send({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {
            "name": "bash", "arguments": {"command": "echo %d" % i, "description": "Echo"}}})
        if i % 2 == 0:
            s.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                    "params": {"requestId": i}})
    s.send({"jsonrpc": "2.0", "id": "end", "method": "tools/call", "params": {
        "name": "bash", "arguments": {"command": "sleep 2", "description": "Sleep"}}})
    answers = {}
    while True:
        m = s.recv(60)
        check(m is not None, "output closed")
        if m.get("id") == "end":
            break
        check(isinstance(m.get("id"), int) and "result" in m, "unexpected %r" % m)
        answers[m["id"]] = answers.get(m["id"], 0) + 1
        check(text_of(m) in ("%d\n" % m["id"], "Error: tool call aborted"), "text %r" % m)
    for i in range(n):
        check(answers.get(i, 0) <= 1, "call %d answered %d times" % (i, answers.get(i, 0)))
        if i % 2 == 1:
            check(answers.get(i) == 1, "uncancelled call %d unanswered" % i)
    s.quiet(0.5)
    s.close()


def cmd_progress(argv):
    s = server_for(argv)
    s.initialize()
    rid = 7
    s.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {
        "name": "bash", "_meta": {"progressToken": "tok"},
        "arguments": {"command": "for i in 1 2 3 4; do echo line-$i; sleep 0.7; done",
                      "description": "Count"}}})
    notes = []
    while True:
        m = s.recv()
        if m.get("method") == "notifications/progress":
            notes.append((time.monotonic(), m["params"]))
            continue
        check(m.get("id") == rid, "unexpected %r" % m)
        break
    check(text_of(m) == "line-1\nline-2\nline-3\nline-4\n", "result %r" % m)
    check(len(notes) >= 1, "no progress")
    values = [p["progress"] for _, p in notes]
    check(values == sorted(set(values)), "progress must increase: %r" % values)
    for _, p in notes:
        check(p["progressToken"] == "tok" and p["message"].startswith("line-"), "note %r" % p)
    for (t1, _), (t2, _) in zip(notes, notes[1:]):
        check(t2 - t1 > 0.8, "two notifications within a second")
    s.quiet(1.5)  # none after the response
    s.close()


# --- processes: nothing survives ------------------------------------------------------------

def unique(prefix):
    """A marker no command line holds but the daemons' (ours holds only @prefix)."""
    return "%s-%d" % (prefix, os.getpid())


def pids_of(mark):
    """Live processes whose command line holds @mark (a zombie runs nothing: not counted)."""
    out = subprocess.run(["pgrep", "-f", "--", mark], capture_output=True, text=True).stdout
    return [int(p) for p in out.split() if not zombie(int(p))]


def zombie(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


def wait_running(mark, timeout=20, started=True):
    """Waits for @mark: with @started, a process named so (exec -a), not merely a command line
    that holds the name (a runner's, or a parent's, before the command itself has started)."""
    deadline = time.monotonic() + timeout
    while not pids_of("^" + mark if started else mark):
        check(time.monotonic() < deadline, "%s never started" % mark)
        time.sleep(0.05)


def wait_gone(mark, timeout):
    deadline = time.monotonic() + timeout
    while pids_of(mark):
        if time.monotonic() > deadline:
            left = pids_of(mark)
            seen = describe(left) + "\n" + subprocess.run(
                ["ps", "-eo", "pid,ppid,pgid,stat,wchan:20,args", "--forest"],
                capture_output=True, text=True).stdout
            for p in left:
                try:
                    os.kill(p, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            raise Failure("still running after %ss: %s" % (timeout, seen))
        time.sleep(0.05)


def describe(pids):
    return subprocess.run(["ps", "-o", "pid=,args=", "-p", ",".join(map(str, pids))],
                          capture_output=True, text=True).stdout.strip()


def daemons(mark):
    """A command that leaves daemons behind and then waits (t-escape-survivors.sh's set)."""
    return ("setsid bash -c 'exec -a %(m)s-setsid sleep 300' >/dev/null 2>&1 &\n"
            "(bash -c 'exec -a %(m)s-double-fork sleep 300' >/dev/null 2>&1 &)\n"
            "nohup bash -c 'exec -a %(m)s-nohup sleep 300' >/dev/null 2>&1 &\n"
            "setsid bash -c 'trap \"\" TERM HUP INT; exec -a %(m)s-ignores-term sleep 300' "
            ">/dev/null 2>&1 &\n"
            "exec -a %(m)s-leader sleep 300\n") % {"m": mark}


def cmd_control(argv):
    """The detector works: the same daemons under a plain parent killed with SIGKILL survive."""
    mark = unique(argv[0])
    parent = subprocess.Popen([sys.executable, "-c", "import subprocess,sys; "
                               "subprocess.run(['bash','-c',sys.argv[1]])", daemons(mark)])
    for d in ("setsid", "double-fork", "nohup", "ignores-term", "leader"):
        wait_running("%s-%s" % (mark, d))
    parent.kill()
    parent.wait()
    time.sleep(1)
    left = pids_of(mark)
    for p in left:
        os.kill(p, signal.SIGKILL)
    check(len(left) >= 4, "the control should leave daemons behind: %r" % left)


def cmd_ends(argv):
    """ends WS CONFIG MODE HOW MARK [job]: the server ends mid-call (HOW: eof, client-gone,
    INT, TERM, HUP, KILL, claude), or with a background job running; nothing the call or the
    job started is left running."""
    ws, cfg, mode, how, mark = argv[0], argv[1] or None, argv[2], argv[3], unique(argv[4])
    background = len(argv) > 5 and argv[5] == "job"
    sid = subprocess.run([DSB] + (["--config", cfg] if cfg else []) +
                         ["session", "new", "--cwd", ws], check=True, capture_output=True,
                         text=True).stdout.strip()
    subprocess.run([DSB, "session", "mode", sid, mode], check=True, stdout=subprocess.DEVNULL)
    s = Server("--session", sid, config=cfg)
    s.initialize()
    args = {"command": daemons(mark), "description": "Daemons"}
    if background:
        args["run_in_background"] = True
        check(text_of(s.call("bash", args)) == "started background job bash-1", "no job")
    else:
        s.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "bash", "arguments": args}})
    for d in ("setsid", "double-fork", "nohup", "ignores-term", "leader"):
        wait_running("%s-%s" % (mark, d))
    if how == "eof":
        s.proc.stdin.close()
    elif how == "client-gone":
        # The client dies: both pipes close at once, mid-call.
        s.proc.stdin.close()
        s.proc.stdout.close()
    elif how == "claude":
        # Claude Code's sequence: SIGINT, SIGTERM 100 ms later, then SIGKILL.
        s.proc.send_signal(signal.SIGINT)
        time.sleep(0.1)
        s.proc.send_signal(signal.SIGTERM)
        time.sleep(0.1)
        s.proc.kill()
    else:
        s.proc.send_signal(getattr(signal, "SIG" + how))
    rc = s.proc.wait(20)
    if how in ("eof", "client-gone", "INT", "TERM", "HUP"):
        check(rc == 0, "server exit status %s: %s" % (rc, s.stderr()))
    wait_gone(mark, 10)
    time.sleep(1)
    left = pids_of(mark)
    check(not left, "running a second later: %s" % describe(left))


def cmd_storm(argv):
    """storm WS CONFIG HOW N MARK: N servers, each ended (cancel or KILL) the moment its
    command's runner has started, in the middle of the sandbox's setup: nothing survives."""
    ws, cfg, how, n, mark = argv[0], argv[1] or None, argv[2], int(argv[3]), unique(argv[4])
    sid = subprocess.run([DSB] + (["--config", cfg] if cfg else []) +
                         ["session", "new", "--cwd", ws], check=True, capture_output=True,
                         text=True).stdout.strip()
    for i in range(n):
        s = Server("--session", sid, config=cfg)
        s.initialize()
        s.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "bash", "arguments": {"command": daemons("%s-%d" % (mark, i)),
                                          "description": "Daemons"}}})
        # The moment bwrap holds the command line: the sandbox is being set up.
        wait_running("%s-%d" % (mark, i), timeout=20, started=False)
        if how == "cancel":
            s.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                    "params": {"requestId": 1}})
            s.close()
        else:
            s.proc.kill()
            s.proc.wait(20)
    wait_gone(mark, 10)
    time.sleep(1)
    left = pids_of(mark)
    check(not left, "running a second later: %s" % describe(left))


def cmd_signals(argv):
    """signals WS CONFIG MODE COMMAND [job]: COMMAND as a call (or a background job, waited for)
    of a server in our own process group, as a front end runs it, for t-harm-signals.sh. Prints
    the result's text; fails unless the server is alive to answer and ends cleanly."""
    ws, cfg, mode, command = argv[0], argv[1] or None, argv[2], argv[3]
    background = len(argv) > 4 and argv[4] == "job"
    sid = subprocess.run([DSB] + (["--config", cfg] if cfg else []) +
                         ["session", "new", "--cwd", ws], check=True, capture_output=True,
                         text=True).stdout.strip()
    subprocess.run([DSB, "session", "mode", sid, mode], check=True, stdout=subprocess.DEVNULL)
    s = Server("--session", sid, config=cfg, new_session=False)
    s.initialize()
    if background:
        err, text = start_job(s, command)
        check(not err and text == "started background job bash-1", "start: %r" % text)
        err, texts = job(s, "job_output", {"job_id": "bash-1", "wait": True})
        text = "\n".join(texts)
    else:
        text = text_of(s.call("bash", {"command": command, "description": "Signals"}))
    check(s.ping(), "the server is gone")
    s.close()
    print(text)


def cmd_snapshot(argv):
    """The snapshot block: on the first result after an outside mode switch, once."""
    s = server_for(argv)
    s.initialize()
    sid = session_of(s)
    r = s.call("bash", {"command": "true", "description": "Nothing"})
    check(len(r["result"]["content"]) == 1, "no block while nothing changed %r" % r)
    subprocess.run([DSB, "session", "mode", sid, "danger-full-access"], check=True,
                   stdout=subprocess.DEVNULL)
    r = s.call("bash", {"command": "true", "description": "Nothing"})
    content = r["result"]["content"]
    check(len(content) == 2, "the block after the switch %r" % content)
    want = subprocess.run([DSB, "context", "--session", sid], capture_output=True,
                          text=True).stdout
    check(want == "", "the server logged the snapshot it sent: `context` says nothing new")
    check(content[1]["text"].startswith("Current runtime context. This snapshot supersedes "
                                        "earlier runtime-context snapshots.\n\nCurrent DSH file "
                                        "policy: danger-full-access."), "text %r" % content[1])
    r = s.call("bash", {"command": "true", "description": "Nothing"})
    check(len(r["result"]["content"]) == 1, "once only %r" % r)
    s.close()


def main():
    cmd = sys.argv[1].replace("-", "_")
    try:
        globals()["cmd_" + cmd](sys.argv[2:])
    except Failure as e:
        print("FAIL: %s" % e, file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
