"""A loopback TCP proxy for fault tests: forwards to a real server (PostgreSQL, Redis), and on demand
black-holes (accepts and reads, but forwards and answers nothing: packets dropped, not refused), refuses
(closes its port and every connection), or delays the server's replies (`reply_delay` seconds each)."""

from __future__ import annotations

import socket
import threading
import time


class BlackholeProxy:
    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.blackholed = False
        self.reply_delay = 0.0  # seconds each chunk from the server waits before it is forwarded
        self._listener: socket.socket | None = None
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self.port = 0

    def start(self, port: int = 0) -> BlackholeProxy:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", port))
        listener.listen(128)
        self.port = listener.getsockname()[1]
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()
        return self

    def blackhole(self) -> None:
        """Stop forwarding: connections stay open, bytes vanish, new connections get no answer."""
        self.blackholed = True

    def resume(self) -> None:
        """Forward again (connections stalled meanwhile have lost bytes: their clients must drop them)."""
        self.blackholed = False

    def refuse(self) -> None:
        """Close the port and every connection (a crashed server); `start(port)` opens it again."""
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.close()
        self.drop_connections()

    def drop_connections(self) -> None:
        with self._lock:
            sockets, self._sockets = self._sockets, []
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()

    def stop(self) -> None:
        self.refuse()

    def _track(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.append(sock)

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            self._track(client)
            threading.Thread(target=self._connect, args=(client,), daemon=True).start()

    def _connect(self, client: socket.socket) -> None:
        if self.blackholed:  # the client's handshake (or login) goes nowhere, nothing comes back
            self._drain(client)
            return
        try:
            upstream = socket.create_connection(self.target, timeout=5)
        except OSError:
            client.close()
            return
        upstream.settimeout(None)
        self._track(upstream)
        threading.Thread(target=self._pump, args=(upstream, client, True), daemon=True).start()
        self._pump(client, upstream)

    def _drain(self, sock: socket.socket) -> None:
        try:
            while sock.recv(65536):
                pass
        except OSError:
            pass

    def _pump(self, source: socket.socket, sink: socket.socket, replies: bool = False) -> None:
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                if replies and self.reply_delay:
                    time.sleep(self.reply_delay)
                if not self.blackholed:
                    sink.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
