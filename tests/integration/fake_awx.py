"""A small in-memory AWX API (``/api/v2/``) on 127.0.0.1 for the awx.awx modules.

Enough of the REST API that awx.awx's ``controller_api`` uses to find, create and update the
objects of docs/examples/awx_setup.yml: list views filtered by field (``?name=...``, the ``or__``
form of name-or-id lookups), detail views, ``PATCH``, association sub-lists (``credentials``),
a job template's ``survey_spec``, ``unified_job_templates``, and a project whose creation starts
an already finished project update. Objects keep exactly the fields that were sent, so a second
run of the same playbook finds nothing to change.
"""

from __future__ import annotations

import contextlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlsplit

PREFIX = "/api/v2/"
UNIFIED = ("job_templates", "workflow_job_templates", "projects", "inventory_sources")
SINGULAR = {"inventories": "inventory", "project_updates": "project_update"}


class FakeAwx:
    def __init__(self):
        self.objects: dict[str, dict[int, dict]] = {}
        self.associations: dict[tuple[str, int, str], list[int]] = {}
        self.surveys: dict[int, dict] = {}
        self.writes: list[tuple[str, str, object]] = []
        self.next_id = 1
        self.lock = threading.Lock()
        self.create("organizations", {"name": "Default"})

    def create(self, endpoint, data):
        item_id = self.next_id
        self.next_id += 1
        url = f"{PREFIX}{endpoint}/{item_id}/"
        item = dict(data, id=item_id, url=url, type=SINGULAR.get(endpoint, endpoint[:-1]), related={}, summary_fields={})
        if endpoint == "job_templates":
            item["related"]["survey_spec"] = f"{url}survey_spec/"
        if endpoint == "projects":
            update = self.create("project_updates", {"status": "successful", "failed": False, "finished": "now"})
            item["scm_revision"] = ""
            item["summary_fields"]["current_update"] = {"id": update["id"]}
            item["related"]["update"] = f"{url}update/"
        self.objects.setdefault(endpoint, {})[item_id] = item
        return item

    def named(self, endpoint, name):
        return [item for item in self.objects.get(endpoint, {}).values() if item.get("name") == name]

    def listing(self, endpoint, query):
        if endpoint == "unified_job_templates":
            items = [item for name in UNIFIED for item in self.objects.get(name, {}).values()]
        else:
            items = list(self.objects.get(endpoint, {}).values())
        either = {key[4:]: value for key, value in query.items() if key.startswith("or__")}
        exact = {key: value for key, value in query.items() if not key.startswith("or__") and key != "page_size"}

        def matches(item):
            if either and not any(str(item.get(key)) == value for key, value in either.items()):
                return False
            return all(str(item.get(key)) == value for key, value in exact.items())

        found = [item for item in items if matches(item)]
        return {"count": len(found), "next": None, "previous": None, "results": found}

    def handle(self, method, path, query, body):
        """(status, JSON body) for one request."""
        if not path.startswith(PREFIX):
            return 404, {"detail": "Not found."}
        parts = [part for part in path[len(PREFIX):].split("/") if part]
        with self.lock:
            if method != "GET":
                self.writes.append((method, path, body))
            if len(parts) == 1:
                if method == "GET":
                    return 200, self.listing(parts[0], query)
                if method == "POST":
                    return 201, self.create(parts[0], body)
            if len(parts) >= 2 and parts[1].isdigit():
                endpoint, item_id = parts[0], int(parts[1])
                item = self.objects.get(endpoint, {}).get(item_id)
                if item is None:
                    return 404, {"detail": "Not found."}
                if len(parts) == 2:
                    if method == "GET":
                        return 200, item
                    if method == "PATCH":
                        item.update(body)
                        return 200, item
                    if method == "DELETE":
                        del self.objects[endpoint][item_id]
                        return 204, None
                elif parts[2] == "survey_spec":
                    if method == "GET":
                        return 200, self.surveys.get(item_id, {})
                    if method == "POST":
                        self.surveys[item_id] = body
                        return 200, {}
                    if method == "DELETE":
                        self.surveys.pop(item_id, None)
                        return 200, {}
                else:
                    return self.association(endpoint, item_id, parts[2], method, body)
        return 405, {"detail": f"{method} {path} is not part of this fake"}

    def association(self, endpoint, item_id, name, method, body):
        ids = self.associations.setdefault((endpoint, item_id, name), [])
        if method == "GET":
            results = [self.objects[name][other] for other in ids]
            return 200, {"count": len(results), "next": None, "previous": None, "results": results}
        if method == "POST" and "id" in body:
            if body.get("disassociate"):
                ids.remove(body["id"])
            elif body["id"] not in ids:
                ids.append(body["id"])
            return 204, None
        return 405, {"detail": f"{method} on {endpoint}/{item_id}/{name} is not part of this fake"}


def _handler(api):
    class Handler(BaseHTTPRequestHandler):
        def _serve(self):
            url = urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}") if length else {}
            status, payload = api.handle(self.command, url.path, dict(parse_qsl(url.query)), body)
            data = b"" if payload is None else json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PATCH = do_DELETE = _serve

        def log_message(self, format, *args):  # pylint: disable=redefined-builtin
            """Quiet: the test reads api.writes instead."""

    return Handler


@contextlib.contextmanager
def serve():
    """(FakeAwx, base URL) while a server on 127.0.0.1 answers; stopped afterwards."""
    api = FakeAwx()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(api))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield api, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
