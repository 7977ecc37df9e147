# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The engines' desired objects (``_base/k8s_desired.Objects``: NFD's, the schedulers' Topology objects), a part
of ``k8s_reconcile.reconcile``.

One list per resource; every object compared and checked (ownership, deletionTimestamp, immutable fields and
finalizers) before the first write; then created, updated or recreated as its Kind says (server-side apply
with the options' field manager, or POST and JSON Patch), and our strays deleted. One WriteReport.
"""

from __future__ import annotations

from ansible_collections.aifactory.topology.plugins.module_utils._base import k8s_desired
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import TopologyError
from ansible_collections.aifactory.topology.plugins.module_utils._transport import k8s as _k8s
from ansible_collections.aifactory.topology.plugins.module_utils._writers.k8s import (
    APPLY_PATCH, JSON_PATCH, WriteReport, delete, read,
)

ADVICE = {
    "foreign": "choose another name, or, if it is yours to hand over, set those labels on it first",
    "kept": "give the objects a new name, move what uses them to it, then remove the old ones",
    "refused": "",
}


class _Write:
    __slots__ = ("kind", "action", "name", "desired", "current", "after", "deleted")

    def __init__(self, kind, action, name, desired, current):
        self.kind, self.action, self.name, self.desired, self.current = kind, action, name, desired, current
        self.after, self.deleted = None, False


def view(item, desired=None):
    """What the diff shows and the comparison looks at: the spec, and the labels and annotations ``desired`` sets
    (all of them without ``desired``)."""
    metadata, wanted = item.get("metadata") or {}, (desired or {}).get("metadata") or {}
    shown = {}
    for section in ("labels", "annotations"):
        have = {key: value for key, value in (metadata.get(section) or {}).items()
                if desired is None or key in (wanted.get(section) or {})}
        if have:
            shown[section] = have
    return {"metadata": shown, "spec": item.get("spec")}


def differs(current, desired):
    """Whether ``current`` lacks ``desired``'s spec or one of its labels or annotations (others' entries stay)."""
    if current.get("spec") != desired.get("spec"):
        return True
    have, wanted = current.get("metadata") or {}, desired.get("metadata") or {}
    return any((have.get(section) or {}).get(key) != value
               for section in ("labels", "annotations") for key, value in (wanted.get(section) or {}).items())


def _terminating(item):
    """``deletionTimestamp ...; finalizers ...`` of an object being deleted, or None."""
    metadata = item.get("metadata") or {}
    if not metadata.get("deletionTimestamp"):
        return None
    finalizers = metadata.get("finalizers") or []
    held = f"; finalizers {', '.join(map(str, finalizers))}" if finalizers else ""
    return f"deletionTimestamp {metadata['deletionTimestamp']}{held}"


def _refuse(problems, advice):
    """TopologyError for the first kind of problem found, before any write."""
    foreign, terminating, kept, refused, rule = problems
    if foreign:
        raise TopologyError(f"these objects exist and are not ours to write (ours carry {rule}): {'; '.join(foreign)}. "
                            f"Another team's object is never updated, deleted or recreated: {advice['foreign']}; "
                            "nothing was written")
    if terminating:
        raise TopologyError("these objects are being deleted, and what is written into them would go with them (a new "
                            f"one cannot be created until they are gone): {'; '.join(terminating)}. Wait until they are "
                            "gone (kubectl wait --for=delete), or release what holds them, then run again; nothing "
                            "was written")
    if kept:
        raise TopologyError("these objects must change a field the CRD makes immutable, and their finalizers would keep "
                            f"them after a delete (a controller still uses them): {'; '.join(kept)}. "
                            f"{advice['kept'][:1].upper()}{advice['kept'][1:]}; nothing was written")
    if refused:
        raise TopologyError("the CRDs make these fields immutable, so the objects would have to be deleted and created "
                            f"again: {'; '.join(refused)}. Set recreate: true to do so{advice['refused']}; nothing was "
                            "written")


def _plan(listed, desired, recreate, cleanup):
    """The writes (creates and updates in ``desired``'s order, then deletes) and the problems, from the lists."""
    writes, foreign, terminating, kept, refused = [], [], [], [], []
    wanted = set()
    for kind, body in desired:
        name = body["metadata"]["name"]
        wanted.add((kind, name))
        current = listed[kind].get(name)
        oid = kind.object_id(name)
        if current is None:
            writes.append(_Write(kind, "created", name, body, None))
            continue
        problem, going = kind.owner_problem(current), _terminating(current)
        if problem is not None or going is not None:
            (foreign if problem is not None else terminating).append(f"{oid} ({problem or going})")
            continue
        if differs(current, body):
            frozen = kind.frozen(current, body)
            finalizers = (current.get("metadata") or {}).get("finalizers") or []
            if frozen and finalizers:
                # Deleting would only mark it: the new object could never be created.
                kept.append(f"{oid} ({', '.join(frozen)}; finalizers {', '.join(map(str, finalizers))})")
            elif frozen and not recreate:
                refused.append(f"{oid} ({', '.join(frozen)})")
            writes.append(_Write(kind, "recreated" if frozen else "updated", name, body, current))
    rules = {f"{key}={value}" for kind, _body in desired for key, value in kind.owner_labels.items()}
    problems = (foreign, terminating, kept, refused, " and ".join(sorted(rules)))
    if cleanup:
        # The last kind first: a flavor before the Topology it names.
        for kind in reversed(list(listed)):
            writes += [_Write(kind, "deleted", name, None, item) for name, item in sorted(listed[kind].items())
                       if (kind, name) not in wanted and kind.owner_problem(item) is None and _terminating(item) is None]
    return writes, problems


def _put(client, write, options):
    """Create or update ``write``'s object as its Kind says; what the diff shows after."""
    kind, body = write.kind, write.desired
    if kind.write == k8s_desired.APPLY:
        return view(client.request("PATCH", kind.path(write.name), options.query(force="true"), body, APPLY_PATCH), body)
    current = write.current
    if current is None:
        try:
            client.request("POST", kind.path(), options.query(), body)
            return view(body, body)
        except _k8s.K8sError as exc:
            if exc.status != 409:
                raise
        # The name exists without our labels: take it over.
        current = client.request("GET", kind.path(write.name))
    client.request("PATCH", kind.path(write.name), options.query(), _json_patch(current, body), JSON_PATCH)
    return view(body, body)


def _send(client, write, options):
    if write.action in ("deleted", "recreated"):
        delete(client, write.kind.path(write.name), options)
        write.deleted = True
    if write.action == "recreated" and options.check_mode:
        # A dry-run apply after a dry-run delete would meet the stored object and its frozen field.
        write.after = view(write.desired, write.desired)
    elif write.action != "deleted":
        write.after = _put(client, write, options)
    return write


def prepare(client, objects, options):
    """Read and check ``objects`` (``k8s_desired.Objects``); the function that then writes them, returning a
    WriteReport.

    Each kind is listed once. Before the first write: an object of a desired name that is another's
    (``Kind.owner_labels``), being deleted (``deletionTimestamp``), or that must change an immutable field while
    finalizers hold it, or without ``recreate``, is refused (TopologyError; ``advice`` words what to do); then
    ``guard(listed, deletes)`` may raise. Writes go kind by kind (bounded concurrency within one), then our strays
    are deleted, the last kind first; the first failure stops the rest. A recreate whose apply fails after its
    delete is reported deleted, with a note.
    """
    kinds = objects.kinds
    listed = {kind: {item["metadata"]["name"]: item for item in client.list(kind.path(), kind.selector)}
              for kind in kinds}
    writes, problems = _plan(listed, objects.objects, objects.recreate, objects.cleanup)
    _refuse(problems, dict(ADVICE, **(objects.advice or {})))
    if objects.guard is not None:
        objects.guard(listed, [(write.kind, write.name) for write in writes if write.action == "deleted"])
    phases = [[w for w in writes if w.kind is kind and w.action != "deleted"] for kind in kinds]
    phases += [[w for w in writes if w.kind is kind and w.action == "deleted"] for kind in reversed(kinds)]
    return lambda: _write(client, phases, options)


def _write(client, phases, options):
    report = WriteReport()
    for phase in phases:
        results, report.error = _k8s.run_bounded(lambda write: _send(client, write, options), phase,
                                                 options.concurrency)
        for write, result in zip(phase, results):
            oid = write.kind.object_id(write.name)
            if result is None and not (write.deleted and write.action == "recreated"):
                continue
            if result is None:  # the delete of a recreate went through: the object is gone
                report.done.append(("deleted", oid))
                report.notes.append(f"{oid} was deleted to be created again and is not there now: run again once "
                                    "the cause is fixed")
            else:
                report.done.append((write.action, oid))
                if write.after is not None:
                    report.after[oid] = write.after
            if write.current is not None:
                report.before[oid] = view(write.current, write.desired)
        if report.error is not None:
            break
    return report


def _json_patch(existing, desired):
    """JSON Patch operations that make ``existing`` carry ``desired``'s spec, labels and annotations."""
    ops = [{"op": "add", "path": "/spec", "value": desired["spec"]}]
    metadata = existing.get("metadata") or {}
    for section in ("labels", "annotations"):
        wanted = desired["metadata"].get(section) or {}
        have = metadata.get(section)
        if have is None:
            ops.append({"op": "add", "path": f"/metadata/{section}", "value": wanted})
            continue
        for key, value in sorted(wanted.items()):
            if have.get(key) != value:
                key = key.replace("~", "~0").replace("/", "~1")
                ops.append({"op": "add", "path": f"/metadata/{section}/{key}", "value": value})
    return ops


def served_resources(client, api_version):
    """The resources the API server serves for ``api_version``; empty when the group version is unknown."""
    listing = read(client, f"/apis/{api_version}") or {}
    return {item.get("name") for item in listing.get("resources") or [] if isinstance(item, dict)}
