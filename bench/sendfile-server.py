#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# The benchmarks' HTTP server (standard library only): HTTP/1.0, one GET per connection, answered
# with the file named on the command line whatever the path, sent with sendfile(2) so that the
# server costs next to nothing and what a benchmark measures is the client's side. Prints its
# port on 127.0.0.1 once it listens.
import os, socket, socketserver, sys
path = sys.argv[1]
class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
            pass
        size = os.path.getsize(path)
        self.wfile.write(b"HTTP/1.0 200 OK\r\nContent-Length: %d\r\n\r\n" % size)
        self.wfile.flush()
        with open(path, "rb") as f:
            self.connection.sendfile(f)
socketserver.ThreadingTCPServer.daemon_threads = True
with socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler) as srv:
    print(srv.server_address[1], flush=True)
    srv.serve_forever()
