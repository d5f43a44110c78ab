"""The HTTP listening socket: connections it accepts send small writes at once (Nagle's
algorithm off), so an answer's body never waits for the client's delayed ACK of its headers."""

from __future__ import annotations

import socket

from trajhub.service.server import bind_http


def test_accepted_connections_have_nagle_off() -> None:
    listener = bind_http("127.0.0.1", 0)
    try:
        client = socket.create_connection(listener.getsockname())
        accepted, _ = listener.accept()
        try:
            assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
        finally:
            accepted.close()
            client.close()
    finally:
        listener.close()
