# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""aifactory.topology.k8s_nodes: topology-relevant changes of Kubernetes Nodes (and optionally Pods).

Lists, then watches Nodes (``node_selector``) and, with ``pod_selector``, Pods (Slinky's slurmd
pods); resumes from the last resourceVersion (bookmarks included), lists again after ``410 Gone``,
reconnects with bounded backoff, and waits for the API server's ``/readyz`` at start. An event is
put only for a node added or removed, a watched label changed (``watch_labels``, default
``nvidia.com/gpu.clique``) or a pod added, removed, moved or turned Ready or not Ready; heartbeats
and status updates never make one. Changes are debounced (``delay``, ``max_wait``): a burst becomes one event
``{"topology_change": {"source", "count", "changes", ...}}``.

Options: the Kubernetes connection options of the collection's modules, through their one spec
(``_transport/k8s_auth.CONNECTION``, as the modules build theirs): ``kubeconfig``, ``context``,
``host``, ``api_key``, ``validate_certs``, ``ca_cert``, ``client_cert``, ``client_key`` (and their
aliases), each falling back to its ``K8S_AUTH_*`` variable, or all of them in one mapping ``auth``, e.g.
the ``k8s_topology_auth`` variable of playbooks/k8s.yml; and ``request_timeout`` (60, the modules'
default: seconds each list request, one page, may take; the ``/readyz`` probes have ``ready_timeout``
and a watch ``watch_timeout``). Then ``node_selector``, ``watch_labels``,
``pod_selector``, ``pod_namespace``, ``delay`` (15), ``max_wait`` (120), ``initial_sync`` (true:
one event at start, so changes made while nothing watched are applied), ``ready_timeout`` (60),
``backoff_min`` (0.5), ``backoff_max`` (30), ``watch_timeout`` (300), and
the bounds against a broken API server: ``max_line`` (4 MiB), ``max_objects`` (200,000 per
resource), ``max_pages`` (1,000); ``stats_interval`` (300: a line with the counts, bad messages
included). One bad message (a garbage line, an object without a name) is counted, logged and
skipped; the source ends only on bad options, a first list that fails, or a refusal (400, 401,
403, 404). See docs/event-driven.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
import threading

try:
    from ansible_collections.aifactory.topology.plugins.module_utils._events import eda as _eda
except ImportError:  # run by ansible-rulebook from <path>/ansible_collections/aifactory/topology/extensions/...
    sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), *[".."] * 7)))
    from ansible_collections.aifactory.topology.plugins.module_utils._events import eda as _eda

from ansible_collections.aifactory.topology.plugins.module_utils._transport import k8s as _k8s
from ansible_collections.aifactory.topology.plugins.module_utils._events import k8s_watch as _k8s_watch
from ansible_collections.aifactory.topology.plugins.module_utils._base.labels import GPU_CLIQUE_LABEL, check_label_key

SOURCE = "aifactory.topology.k8s_nodes"
LOG = logging.getLogger(SOURCE)
SPEC = dict(
    **_eda.K8S_CONNECTION_SPEC,  # the modules' connection options (request_timeout too), and auth: all in one mapping
    node_selector={"type": "dict", "default": {}},
    watch_labels={"type": "list", "elements": "str", "default": [GPU_CLIQUE_LABEL]},
    pod_selector={"type": "dict", "default": {}},
    pod_namespace={"type": "str"},
    initial_sync={"type": "bool", "default": True},
    ready_timeout={"type": "float", "default": 60.0},
    backoff_min={"type": "float", "default": _k8s_watch.BACKOFF_MIN},
    backoff_max={"type": "float", "default": 30.0},
    watch_timeout={"type": "int", "default": _k8s_watch.WATCH_TIMEOUT},
    max_line={"type": "int", "default": _k8s_watch.MAX_LINE},
    max_objects={"type": "int", "default": _k8s_watch.MAX_OBJECTS},
    max_pages={"type": "int", "default": _k8s_watch.MAX_PAGES},
    **_eda.DEBOUNCE_SPEC,
    **_eda.STATS_SPEC,
)


def _run_in_thread(loop, watcher):
    """Run ``watcher.run`` on a daemon thread (a blocked read must not hold the process at exit)."""
    done = loop.create_future()

    def finish(error=None):
        if not done.done():
            if error is None:
                done.set_result(None)
            else:
                done.set_exception(error)

    def target():
        error = None
        try:
            watcher.run(relist_first=False)
        except BaseException as exc:  # pylint: disable=broad-exception-caught  # handed to the event loop
            error = exc
        with contextlib.suppress(RuntimeError):  # the loop is closed: the source has ended, nobody waits
            loop.call_soon_threadsafe(finish, error)

    threading.Thread(target=target, name=f"{SOURCE}-{watcher.kind}", daemon=True).start()
    return done


def connect(args):
    """The client of the source's connection options (built as the modules build theirs), after the other
    options' checks; every error names the option."""
    for label in args["watch_labels"]:
        check_label_key(label, "watch_labels item")
    if args["pod_namespace"] and not args["pod_selector"]:
        raise _eda.TopologyError(f"{SOURCE}: pod_namespace needs pod_selector")
    for name in ("max_line", "max_objects", "max_pages", "stats_interval"):
        if not args[name]:
            raise _eda.TopologyError(f"{SOURCE}: option {name!r} must be > 0")
    if args["request_timeout"] <= 0:
        raise _eda.TopologyError(f"{SOURCE}: option 'request_timeout' must be > 0")
    return _k8s.K8sClient.from_options(_eda.k8s_connection_options(args))


@_eda.scrubbed
async def main(queue, args):
    args = _eda.source_args(SOURCE, args, SPEC)
    client = connect(args)
    node_selector = _k8s.selector_string(args["node_selector"], "node_selector")
    pod_selector = _k8s.selector_string(args["pod_selector"], "pod_selector")
    LOG.info("%s: API server %s (credentials from %s); waiting until it is ready", SOURCE, client.host, client.source)
    await asyncio.to_thread(_k8s_watch.wait_ready, client, args["ready_timeout"])

    debouncer = _eda.debouncer_from(args, queue.put, SOURCE)
    debouncer.start()
    common = {name: args[name] for name in ("backoff_min", "backoff_max", "watch_timeout", "max_line",
                                            "max_objects", "max_pages")}
    common["log"] = lambda message: LOG.warning("%s: %s", SOURCE, message)
    watchers = [_k8s_watch.ResourceWatcher(client, "node", debouncer.add_threadsafe, node_selector,
                                           watched_labels=args["watch_labels"], **common)]
    if pod_selector:
        watchers.append(_k8s_watch.ResourceWatcher(client, "pod", debouncer.add_threadsafe, pod_selector,
                                                   namespace=args["pod_namespace"], **common))
    summaries = asyncio.ensure_future(_eda.log_summaries([w.stats for w in watchers], args["stats_interval"],
                                                         lambda line: LOG.info("%s: %s", SOURCE, line)))
    try:
        for watcher in watchers:  # the first list fails loudly (RBAC, selector) before anything runs
            try:
                await asyncio.to_thread(watcher.relist, False)
            except _k8s.K8sError as exc:
                raise _eda.RemoteAPIError(f"{SOURCE}: cannot list {watcher.kind}s: {exc}") from None
        LOG.info("%s: watching %d nodes%s", SOURCE, len(watchers[0].known),
                 f" and {len(watchers[1].known)} pods" if pod_selector else "")
        if args["initial_sync"]:
            debouncer.add({"kind": "source", "name": SOURCE, "change": "started", "nodes": len(watchers[0].known)})
        loop = asyncio.get_running_loop()
        await asyncio.gather(*(_run_in_thread(loop, watcher) for watcher in watchers))
    finally:
        summaries.cancel()
        for watcher in watchers:
            watcher.stop()
            LOG.info("%s: ending; %s", SOURCE, watcher.stats.summary())
        await debouncer.stop()
        client.close()


if __name__ == "__main__":
    # A quick look from a shell: print the events (python k8s_nodes.py; K8S_AUTH_* or ~/.kube/config).
    class _Printer:
        @staticmethod
        async def put(event):
            print(event, flush=True)

    logging.basicConfig(level=logging.INFO)
    asyncio.run(main(_Printer(), {"delay": 1}))
