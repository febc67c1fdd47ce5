"""A real HTTP server on 127.0.0.1 (the standard library's) serving fixture files as a mirror does
(MIRROR/NAME/FILE), with ETags, Range and If-Range as HTTP defines them, and switches that make it
misbehave the ways real servers and proxies do. No test reaches the internet."""

import hashlib
import http.server
import threading
from pathlib import Path
from typing import Dict, List, Optional, Set, Tuple


class MirrorServer:
    """Serves `root`.

    cut[path] = n: send only the first n bytes of the body, once (the whole length announced).
    wrong_offset[path] = k: answer a range request with 206 from offset k, claiming k in Content-Range.
    ignore_range: paths answered with 200 and the whole file, even to a range request.
    no_validator: paths sent without ETag or Last-Modified.
    html: paths answered with 200 and an HTML error page.
    status[path] = code: paths answered with that error status.
    redirect[path] = url: paths answered with a 302 to url.
    ignore_if_range: paths whose range requests are answered with 206 whatever If-Range says.
    etag[path] = tag: paths sent with this ETag whatever their content (a validator that lies).
    requests: (path, Range header or "") of every request.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self.cut: Dict[str, int] = {}
        self.wrong_offset: Dict[str, int] = {}
        self.ignore_range: Set[str] = set()
        self.no_validator: Set[str] = set()
        self.html: Set[str] = set()
        self.status: Dict[str, int] = {}
        self.redirect: Dict[str, str] = {}
        self.ignore_if_range: Set[str] = set()
        self.etag: Dict[str, str] = {}
        self.requests: List[Tuple[str, str]] = []
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # quiet
                pass

            def do_GET(self) -> None:
                path = self.path.lstrip("/")
                server.requests.append((path, self.headers.get("Range") or ""))
                if path in server.redirect:
                    self.send_response(302)
                    self.send_header("Location", server.redirect[path])
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if path in server.status:
                    self.send_error(server.status[path])
                    return
                if path in server.html:
                    page = b"<!DOCTYPE html><html><body><h1>Service unavailable</h1></body></html>"
                    self.send_response(200)
                    self.send_header("Content-Type", "text/html; charset=utf-8")
                    self.send_header("Content-Length", str(len(page)))
                    self.end_headers()
                    self.wfile.write(page)
                    return
                file = server.root / path
                if not file.is_file():
                    self.send_error(404)
                    return
                data = file.read_bytes()
                etag = server.etag.get(path) or '"' + hashlib.sha256(data).hexdigest()[:20] + '"'
                start, end = self._range(path, etag, len(data))
                if start is not None and path in server.wrong_offset:
                    start = server.wrong_offset[path]
                if start is not None and start < len(data):
                    self.send_response(206)
                    self.send_header("Content-Range", f"bytes {start}-{end}/{len(data)}")
                    data = data[: end + 1]
                else:
                    start = 0
                    self.send_response(200)
                self.send_header("Content-Type", "application/octet-stream")
                if path not in server.no_validator:
                    self.send_header("ETag", etag)
                self.send_header("Content-Length", str(len(data) - start))
                self.end_headers()
                body = data[start:]
                if path in server.cut:
                    body = body[: server.cut.pop(path)]
                self.wfile.write(body)

            def _range(self, path: str, etag: str, size: int) -> Tuple[Optional[int], int]:
                header = self.headers.get("Range")
                if not header or path in server.ignore_range:
                    return None, size - 1
                if_range = self.headers.get("If-Range")
                if if_range is not None and if_range != etag and path not in server.ignore_if_range:
                    return None, size - 1  # another version: the whole file (RFC 9110)
                first, _, last = header.split("=")[1].partition("-")
                return int(first), min(int(last), size - 1) if last else size - 1

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
