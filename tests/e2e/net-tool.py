#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The network services and the client of tests/e2e/t-network.sh, standard library only.

  net-tool.py serve DIR WS   starts, on this machine only, a TCP server on 127.0.0.1 (it answers
                             any request with an HTTP response whose body is "HELLO"), a UDP echo
                             server on 127.0.0.1, an abstract unix socket, a pathname unix socket
                             in DIR (outside every grant) and one in WS (the workspace), and a
                             unix datagram socket in DIR; writes their addresses to DIR/services
                             as shell assignments, then serves until killed; with a unix datagram
                             socket in WS too. Every connection it accepts, and every datagram, is
                             logged to DIR/accepted, one line each, by service name.
  net-tool.py connect KIND ADDRESS
                             connects once (KIND tcp: HOST:PORT; unix: a path; abstract: a name;
                             udp: HOST:PORT, sends "ping" and waits for the echo; dgram: a path,
                             sendto only; msg: a path, one datagram by sendmsg with msg_name;
                             mmsg: a path, three datagrams by one sendmmsg, each reported sent),
                             exchanges a line, and prints OK or the errno's name.
  net-tool.py loopback [msg] serves and connects on the loopback it sees (msg: the client sends by
                             sendmsg): prints OK or the error.
  net-tool.py rights         passes a pipe's write end over a socketpair with SCM_RIGHTS, writes
                             through the descriptor received: prints OK or the error.
  net-tool.py yield          sends 4 MB by blocking sendmsg to a child that first makes one small
                             sendmsg of its own, then reads it all: prints OK, or TIMEOUT when
                             the two did not finish within 20 s.
  net-tool.py race INSIDE OUTSIDE SECONDS
                             one thread sends datagrams by sendmsg in a loop while another flips
                             its msg_name between the paths INSIDE and OUTSIDE: prints the count.
"""
import ctypes
import errno
import os
import signal
import socket
import struct
import sys
import threading
import time

TIMEOUT = 3.0


def log_accept(directory, name):
    with open(os.path.join(directory, "accepted"), "a", encoding="utf-8") as f:
        f.write(name + "\n")


def serve_stream(sock, directory, name):
    while True:
        conn, _ = sock.accept()
        log_accept(directory, name)
        threading.Thread(target=answer, args=(conn,), daemon=True).start()


def answer(conn):
    try:
        conn.settimeout(TIMEOUT)
        conn.recv(65536)
        conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 6\r\nConnection: close\r\n\r\nHELLO\n")
    except OSError:
        pass
    finally:
        conn.close()


def serve_udp(sock, directory, name):
    while True:
        data, peer = sock.recvfrom(65536)
        log_accept(directory, name)
        if peer:
            sock.sendto(data, peer)


def serve(directory, ws):
    services = {}
    tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    tcp.bind(("127.0.0.1", 0))
    tcp.listen(64)
    services["TCP_PORT"] = tcp.getsockname()[1]
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    services["UDP_PORT"] = udp.getsockname()[1]
    abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    name = "dsb-net-%d" % os.getpid()
    abstract.bind("\0" + name)
    abstract.listen(16)
    services["ABSTRACT"] = name
    outside = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    outside.bind(os.path.join(directory, "out.sock"))
    outside.listen(16)
    services["OUT_SOCK"] = os.path.join(directory, "out.sock")
    inside = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    inside.bind(os.path.join(ws, "in.sock"))
    inside.listen(16)
    services["IN_SOCK"] = os.path.join(ws, "in.sock")
    dgram = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    dgram.bind(os.path.join(directory, "out.dgram"))
    services["OUT_DGRAM"] = os.path.join(directory, "out.dgram")
    in_dgram = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    in_dgram.bind(os.path.join(ws, "in.dgram"))
    services["IN_DGRAM"] = os.path.join(ws, "in.dgram")
    for key in ("OUT_SOCK", "IN_SOCK", "OUT_DGRAM", "IN_DGRAM"):
        os.chmod(services[key], 0o777)
    threads = [
        threading.Thread(target=serve_stream, args=(tcp, directory, "tcp"), daemon=True),
        threading.Thread(target=serve_udp, args=(udp, directory, "udp"), daemon=True),
        threading.Thread(target=serve_stream, args=(abstract, directory, "abstract"), daemon=True),
        threading.Thread(target=serve_stream, args=(outside, directory, "out.sock"), daemon=True),
        threading.Thread(target=serve_stream, args=(inside, directory, "in.sock"), daemon=True),
        threading.Thread(target=serve_udp, args=(dgram, directory, "out.dgram"), daemon=True),
        threading.Thread(target=serve_udp, args=(in_dgram, directory, "in.dgram"), daemon=True),
    ]
    for th in threads:
        th.start()
    tmp = os.path.join(directory, "services.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        for key, value in services.items():
            f.write("%s=%s\n" % (key, value))
    os.rename(tmp, os.path.join(directory, "services"))
    threading.Event().wait()


def host_port(address):
    host, _, port = address.rpartition(":")
    return host, int(port)


def exchange(sock):
    sock.sendall(b"GET / HTTP/1.0\r\n\r\n")
    data = sock.recv(65536)
    return "OK" if b"HELLO" in data else "EMPTY"


def connect(kind, address):
    try:
        if kind == "tcp":
            with socket.create_connection(host_port(address), timeout=TIMEOUT) as s:
                return exchange(s)
        if kind == "udp":
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                s.settimeout(TIMEOUT)
                s.sendto(b"ping", host_port(address))
                data, _ = s.recvfrom(100)
                return "OK" if data == b"ping" else "EMPTY"
        if kind in ("unix", "abstract"):
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.settimeout(TIMEOUT)
                s.connect(("\0" + address) if kind == "abstract" else address)
                return exchange(s)
        if kind == "dgram":
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
                s.sendto(b"ping", address)
                return "OK"
        if kind == "msg":
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
                n = s.sendmsg([b"pi", b"ng"], [], 0, address)
                return "OK" if n == 4 else "SENT %d" % n
        if kind == "mmsg":
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
                return sendmmsg(s, address, [b"one", b"two!", b"three"])
    except socket.timeout:
        return "TIMEOUT"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno)) if e.errno else str(e)
    return "EINVAL"


# struct msghdr and struct mmsghdr of the native ABI, for sendmmsg (not in the socket module).
class Iovec(ctypes.Structure):
    _fields_ = [("iov_base", ctypes.c_void_p), ("iov_len", ctypes.c_size_t)]


class Msghdr(ctypes.Structure):
    _fields_ = [("msg_name", ctypes.c_void_p), ("msg_namelen", ctypes.c_uint32),
                ("msg_iov", ctypes.POINTER(Iovec)), ("msg_iovlen", ctypes.c_size_t),
                ("msg_control", ctypes.c_void_p), ("msg_controllen", ctypes.c_size_t),
                ("msg_flags", ctypes.c_int)]


class Mmsghdr(ctypes.Structure):
    _fields_ = [("msg_hdr", Msghdr), ("msg_len", ctypes.c_uint)]


LIBC = ctypes.CDLL(None, use_errno=True)
SOCKADDR_UN_LEN = 110


def sockaddr_un(path):
    """A struct sockaddr_un for PATH, NUL-padded to its full size."""
    raw = struct.pack("H", socket.AF_UNIX) + path.encode()
    return ctypes.create_string_buffer(raw.ljust(SOCKADDR_UN_LEN, b"\0"), SOCKADDR_UN_LEN)


def errno_name(e):
    return errno.errorcode.get(e, str(e))


def sendmmsg(sock, address, payloads):
    """One sendmmsg of PAYLOADS to ADDRESS: OK when each is reported sent whole."""
    name = sockaddr_un(address)
    bufs = [ctypes.create_string_buffer(p, len(p)) for p in payloads]
    iovs = [Iovec(ctypes.cast(b, ctypes.c_void_p), len(p)) for b, p in zip(bufs, payloads)]
    vec = (Mmsghdr * len(payloads))()
    for i, iov in enumerate(iovs):
        vec[i].msg_hdr.msg_name = ctypes.cast(name, ctypes.c_void_p)
        vec[i].msg_hdr.msg_namelen = SOCKADDR_UN_LEN
        vec[i].msg_hdr.msg_iov = ctypes.pointer(iov)
        vec[i].msg_hdr.msg_iovlen = 1
        vec[i].msg_len = 12345
    n = LIBC.sendmmsg(sock.fileno(), vec, len(payloads), 0)
    if n < 0:
        return errno_name(ctypes.get_errno())
    lens = [vec[i].msg_len for i in range(len(payloads))]
    if n != len(payloads) or lens != [len(p) for p in payloads]:
        return "SENT %d %s" % (n, lens)
    return "OK"


def loopback(use_sendmsg=False):
    """A command's own service on the loopback of its namespace."""
    try:
        server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        threading.Thread(target=lambda: answer(server.accept()[0]), daemon=True).start()
        with socket.create_connection(server.getsockname(), timeout=TIMEOUT) as s:
            if not use_sendmsg:
                return exchange(s)
            request = [b"GET / ", b"HTTP/1.0\r\n\r\n"]
            if s.sendmsg(request) != sum(map(len, request)):
                return "SHORT"
            return "OK" if b"HELLO" in s.recv(65536) else "EMPTY"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno)) if e.errno else str(e)


def rights():
    """SCM_RIGHTS between the command's own sockets: the descriptor received works."""
    try:
        a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        r, w = os.pipe()
        socket.send_fds(a, [b"fd"], [w])
        os.close(w)
        data, fds, _, _ = socket.recv_fds(b, 16, 4)
        if data != b"fd" or len(fds) != 1:
            return "NOFD"
        os.write(fds[0], b"through")
        os.close(fds[0])
        return "OK" if os.read(r, 100) == b"through" else "EMPTY"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno)) if e.errno else str(e)


def yield_to_peer():
    """A blocked send must not hold its peer's other sends: the peer reads after one."""
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    c, d = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    total = 4 << 20
    pid = os.fork()
    if pid == 0:
        try:
            a.close()
            time.sleep(0.5)  # the parent's send is blocked by now
            c.sendmsg([b"x"])
            got = 0
            while got < total:
                n = len(b.recv(1 << 16))
                if n == 0:
                    break
                got += n
            os._exit(0 if got == total else 1)
        except OSError:
            os._exit(2)
    b.close()
    signal.alarm(20)
    try:
        data = memoryview(bytes(total))
        sent = 0
        while sent < total:
            sent += a.sendmsg([data[sent:]])
        _, status = os.waitpid(pid, 0)
        return "OK" if status == 0 and d.recv(1) == b"x" else "CHILD %d" % status
    except TimeoutError:
        return "TIMEOUT"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno)) if e.errno else str(e)
    finally:
        signal.alarm(0)


def race(inside, outside, seconds):
    """sendmsg in a loop while another thread flips msg_name between INSIDE and OUTSIDE."""
    names = [sockaddr_un(inside), sockaddr_un(outside)]
    payload = ctypes.create_string_buffer(b"race", 4)
    iov = Iovec(ctypes.cast(payload, ctypes.c_void_p), 4)
    msg = Msghdr(ctypes.cast(names[0], ctypes.c_void_p), SOCKADDR_UN_LEN, ctypes.pointer(iov), 1,
                 None, 0, 0)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.setblocking(False)
    end = time.monotonic() + seconds
    stop = threading.Event()

    def flip():
        i = 0
        while not stop.is_set():
            i ^= 1
            msg.msg_name = ctypes.cast(names[i], ctypes.c_void_p)

    sys.setswitchinterval(1e-5)  # the flipper runs while each call waits, many calls a second
    flipper = threading.Thread(target=flip, daemon=True)
    flipper.start()
    sent = calls = 0
    while time.monotonic() < end:
        calls += 1
        if LIBC.sendmsg(sock.fileno(), ctypes.byref(msg), 0) >= 0:
            sent += 1
    stop.set()
    flipper.join()
    return "calls %d sent %d" % (calls, sent)


def on_alarm(signum, frame):
    raise TimeoutError


def main():
    if sys.argv[1] == "serve":
        serve(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "connect":
        result = connect(sys.argv[2], sys.argv[3])
        print(result)
        sys.exit(0 if result == "OK" else 1)
    elif sys.argv[1] == "loopback":
        result = loopback(sys.argv[2:] == ["msg"])
        print(result)
        sys.exit(0 if result == "OK" else 1)
    elif sys.argv[1] == "rights":
        result = rights()
        print(result)
        sys.exit(0 if result == "OK" else 1)
    elif sys.argv[1] == "yield":
        signal.signal(signal.SIGALRM, on_alarm)
        result = yield_to_peer()
        print(result)
        sys.exit(0 if result == "OK" else 1)
    elif sys.argv[1] == "race":
        print(race(sys.argv[2], sys.argv[3], float(sys.argv[4])))
    else:
        sys.exit("unknown command " + sys.argv[1])


if __name__ == "__main__":
    main()
