"""A local HTTP server that misbehaves on purpose, for the hostile-input suite and tests/hostile_cases.py.

It listens on 127.0.0.1 only and every fault is bounded in time (``MAX_FAULT_SECONDS``) and
size, so a client that does not protect itself fails its test instead of hanging the run.
The first path segment selects the fault (``/drip/api/v1/x`` drips too, so a provider's
``api_url`` can point at a fault):

  /json?body=...      a good JSON body (the body is the query value)
  /drip               200 with Content-Length 10000, one byte a second
  /drip-headers       the status line, then header bytes one a second
  /silent             accepts, never answers (until the bound)
  /loop               302 to itself, forever
  /loop-a, /loop-b    302 to each other
  /garbage            200 with bytes that are no JSON and no UTF-8
  /not-http           bytes that are no HTTP response at all
  /huge               200 with a 1 GB body, streamed (the client must stop reading)
  /gzip-bomb          200, Content-Encoding gzip, 256 MB of zeros compressed (256 KB on the wire)
  /bad-gzip           200, Content-Encoding gzip, a body that is not gzip
  /truncated          200 with Content-Length 1000 and 10 bytes, then close
  /bad-chunked        200 chunked, a chunk size line that is not hex
  /cut-chunked        200 chunked, one chunk, then close without the last chunk
  /deep-json          200 with [[[[...]]]] 100000 levels deep
  /pages?token=N      a page of items with a new token each time (endless paging), in two
                      shapes: {items, next} and Lambda's {data, page_token} (page_token=N)
  /same-page?token=N  the same items under a new token each time
  /status?code=N      that status (500 by default) with a short JSON body, every time
  /html?code=N&mb=M   that status (200 by default) with an M MB HTML page (2 by default), as a proxy's error
  /redirect?to=URL    307 (a POST's body is sent again) to URL, another host
"""

from __future__ import annotations

import functools
import json
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

MAX_FAULT_SECONDS = 20.0


@functools.lru_cache(maxsize=1)
def gzip_bomb(size=1 << 28):
    """``size`` zero bytes, gzip-compressed, produced without holding them in memory (built once)."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = b"\0" * (1 << 20)
    parts = [compressor.compress(block) for _megabyte in range(size >> 20)]
    parts.append(compressor.flush())
    return b"".join(parts)


class FaultServer:
    """``with FaultServer() as server: server.url("/drip")``; ``requests`` counts what was served."""

    def __init__(self, every_path=None):
        """``every_path``: the fault every path gets (for a client that sends its own paths to a bare host)."""
        self.requests = []
        self._stop = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                server.requests.append(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)  # a POST's or PUT's body, so the connection stays in step
                parsed = urlparse(self.path)
                # The first path segment picks the fault, so a provider's own path can follow it.
                fault = every_path or parsed.path.strip("/").split("/")[0]
                handler = getattr(server, "_" + fault.replace("-", "_"), None)
                if handler is None:
                    self.send_error(404)
                    return
                try:
                    handler(self, parse_qs(parsed.query))
                except (BrokenPipeError, ConnectionResetError):
                    pass

            do_POST = do_PUT = do_GET

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def url(self, path=""):
        return f"http://127.0.0.1:{self.httpd.server_address[1]}{path}"

    # -- faults ----------------------------------------------------------------------------

    def _bounded_sleep(self, seconds):
        return not self._stop.wait(seconds)

    @staticmethod
    def _send(handler, status, body, headers=None):
        handler.send_response(status)
        for key, value in (headers or {}).items():
            handler.send_header(key, value)
        if "Content-Length" not in (headers or {}) and "Transfer-Encoding" not in (headers or {}):
            handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    def _json(self, handler, query):
        self._send(handler, 200, (query.get("body") or ["{}"])[0].encode(), {"Content-Type": "application/json"})

    def _drip(self, handler, query):
        handler.send_response(200)
        handler.send_header("Content-Length", "10000")
        handler.end_headers()
        self._one_byte_a_second(handler, b" ")

    def _drip_headers(self, handler, query):
        handler.wfile.write(b"HTTP/1.1 200 OK\r\n")
        self._one_byte_a_second(handler, b"X")

    def _one_byte_a_second(self, handler, byte):
        deadline = time.monotonic() + MAX_FAULT_SECONDS
        while time.monotonic() < deadline:
            handler.wfile.write(byte)
            handler.wfile.flush()
            if not self._bounded_sleep(1.0):
                break
        handler.close_connection = True

    def _silent(self, handler, query):
        self._bounded_sleep(MAX_FAULT_SECONDS)
        handler.close_connection = True

    def _loop(self, handler, query):
        self._send(handler, 302, b"", {"Location": "/loop"})

    def _loop_a(self, handler, query):
        self._send(handler, 302, b"", {"Location": "/loop-b"})

    def _loop_b(self, handler, query):
        self._send(handler, 302, b"", {"Location": "/loop-a"})

    def _garbage(self, handler, query):
        self._send(handler, 200, bytes(range(128, 256)) * 8, {"Content-Type": "application/json"})

    def _not_http(self, handler, query):
        handler.wfile.write(b"\x00\xff garbage that is not HTTP\r\n\r\n")
        handler.close_connection = True

    def _huge(self, handler, query):
        size = 1 << 30
        handler.send_response(200)
        handler.send_header("Content-Length", str(size))
        handler.send_header("Content-Type", "application/json")
        handler.end_headers()
        block = b"[" * (1 << 16)
        deadline = time.monotonic() + MAX_FAULT_SECONDS
        sent = 0
        while sent < size and time.monotonic() < deadline and not self._stop.is_set():
            handler.wfile.write(block)
            sent += len(block)
        handler.close_connection = True

    def _gzip_bomb(self, handler, query):
        self._send(handler, 200, gzip_bomb(), {"Content-Encoding": "gzip", "Content-Type": "application/json"})

    def _bad_gzip(self, handler, query):
        self._send(handler, 200, b"this is not gzip at all" * 10, {"Content-Encoding": "gzip"})

    @staticmethod
    def _cut(handler, header, value, body):
        """200 with one framing header, then ``body`` (which breaks that framing), then close."""
        handler.send_response(200)
        handler.send_header(header, value)
        handler.end_headers()
        handler.wfile.write(body)
        handler.close_connection = True

    def _truncated(self, handler, query):
        self._cut(handler, "Content-Length", "1000", b'{"items": [')

    def _bad_chunked(self, handler, query):
        self._cut(handler, "Transfer-Encoding", "chunked", b"zz\r\n{}\r\n0\r\n\r\n")

    def _cut_chunked(self, handler, query):
        self._cut(handler, "Transfer-Encoding", "chunked", b"5\r\n{\"a\":\r\n")

    def _deep_json(self, handler, query):
        depth = 100_000
        self._send(handler, 200, b"[" * depth + b"]" * depth, {"Content-Type": "application/json"})

    def _pages(self, handler, query, same=False):
        token = int((query.get("token") or query.get("page_token") or ["0"])[0])
        items = [{"id": "i-1" if same else f"i-{token}"}]
        body = {"items": items, "next": str(token + 1), "data": items, "page_token": str(token + 1)}
        self._send(handler, 200, json.dumps(body).encode(), {"Content-Type": "application/json"})

    def _same_page(self, handler, query):
        self._pages(handler, query, same=True)

    def _status(self, handler, query):
        code = int((query.get("code") or ["500"])[0])
        self._send(handler, code, b'{"code": "InternalServerError", "message": "fault"}',
                   {"Content-Type": "application/json"})

    def _html(self, handler, query):
        code = int((query.get("code") or ["200"])[0])
        size = int(float((query.get("mb") or ["2"])[0]) * (1 << 20))
        page = b"<html><body>" + b"<p>proxy error page</p>" * (size // 23) + b"</body></html>"
        self._send(handler, code, page, {"Content-Type": "text/html"})

    def _redirect(self, handler, query):
        self._send(handler, 307, b"", {"Location": (query.get("to") or ["http://127.0.0.2:9/"])[0]})
