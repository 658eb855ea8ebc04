#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The network services and the client of tests/e2e/t-network.sh, standard library only.

  net-tool.py serve DIR WS   starts, on this machine only, a TCP server on 127.0.0.1 (it answers
                             any request with an HTTP response whose body is "HELLO"), a UDP echo
                             server on 127.0.0.1, an abstract unix socket, a pathname unix socket
                             in DIR (outside every grant) and one in WS (the workspace), and a
                             unix datagram socket in DIR; writes their addresses to DIR/services
                             as shell assignments, then serves until killed. Every connection it
                             accepts is logged to DIR/accepted, one line each, by service name.
  net-tool.py connect KIND ADDRESS
                             connects once (KIND tcp: HOST:PORT; unix: a path; abstract: a name;
                             udp: HOST:PORT, sends "ping" and waits for the echo; dgram: a path,
                             sendto only), exchanges a line, and prints OK or the errno's name.
  net-tool.py loopback       serves and connects on the loopback it sees: prints OK or the error.
"""
import errno
import os
import socket
import sys
import threading

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
    for path in (services["OUT_SOCK"], services["IN_SOCK"], services["OUT_DGRAM"]):
        os.chmod(path, 0o777)
    threads = [
        threading.Thread(target=serve_stream, args=(tcp, directory, "tcp"), daemon=True),
        threading.Thread(target=serve_udp, args=(udp, directory, "udp"), daemon=True),
        threading.Thread(target=serve_stream, args=(abstract, directory, "abstract"), daemon=True),
        threading.Thread(target=serve_stream, args=(outside, directory, "out.sock"), daemon=True),
        threading.Thread(target=serve_stream, args=(inside, directory, "in.sock"), daemon=True),
        threading.Thread(target=serve_udp, args=(dgram, directory, "out.dgram"), daemon=True),
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
    except socket.timeout:
        return "TIMEOUT"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno)) if e.errno else str(e)
    return "EINVAL"


def loopback():
    """A command's own service on the loopback of its namespace."""
    try:
        server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        threading.Thread(target=lambda: answer(server.accept()[0]), daemon=True).start()
        with socket.create_connection(server.getsockname(), timeout=TIMEOUT) as s:
            return exchange(s)
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno)) if e.errno else str(e)


def main():
    if sys.argv[1] == "serve":
        serve(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "connect":
        result = connect(sys.argv[2], sys.argv[3])
        print(result)
        sys.exit(0 if result == "OK" else 1)
    elif sys.argv[1] == "loopback":
        result = loopback()
        print(result)
        sys.exit(0 if result == "OK" else 1)
    else:
        sys.exit("unknown command " + sys.argv[1])


if __name__ == "__main__":
    main()
