# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What an engine hands the Kubernetes writer: desired state, never a request.

``_writers/k8s_reconcile.reconcile`` takes a list of parts, in the order they are written: ``Objects`` (a ``Kind``
per resource: its API, namespace, how it is listed, written and owned, the fields its CRD makes immutable; and the
bodies), ``NodeEntries`` (node labels or annotations: node name -> {key: value}, with the ``labels.ManagedKeys``
they are), ``NodeTaints`` (the nodes that carry the unhealthy taint) and ``ConfigMapKey`` (one key of a ConfigMap
someone else owns).
"""

from __future__ import annotations

from urllib.parse import quote

# How a Kind's objects are written. APPLY: server-side apply (forced) with the writer's field manager, which then
# owns exactly the fields it sends. CREATE: POST a new object, JSON Patch an existing one (its spec, and our labels
# and annotations; others' stay); a name that exists without our labels (the list does not select it) is taken over.
APPLY = "apply"
CREATE = "create"


class Kind:
    """One resource of desired objects.

    ``selector``: the label selector of the list (None: every object of the resource). ``owner_labels``:
    ``{key: value}`` in order, the labels every object of ours carries: a listed object of a desired name without
    them is another's and refused; a listed object that is not desired is deleted (cleanup) only with them.
    ``immutable``: the spec fields the CRD freezes (a change needs a delete and a create), from the moment the
    stored object has ``immutable_once`` when that is set. ``kubectl_ids``: ids as kubectl spells them
    (``topologies.kueue.x-k8s.io/name``) instead of ``Kind/name``.
    """

    def __init__(self, api_version, kind, resource, namespace=None, write=APPLY, selector=None, owner_labels=None,
                 immutable=(), immutable_once=None, kubectl_ids=False):
        self.api_version, self.kind, self.resource, self.namespace = api_version, kind, resource, namespace
        self.write, self.selector, self.owner_labels = write, selector, dict(owner_labels or {})
        self.immutable, self.immutable_once, self.kubectl_ids = tuple(immutable), immutable_once, kubectl_ids

    @property
    def group(self):
        return self.api_version.rsplit("/", 1)[0] if "/" in self.api_version else ""

    def path(self, name=None):
        path = "/api/v1" if self.api_version == "v1" else f"/apis/{self.api_version}"
        if self.namespace:
            path += f"/namespaces/{quote(self.namespace, safe='')}"
        return f"{path}/{self.resource}" + (f"/{quote(name, safe='')}" if name else "")

    def object_id(self, name):
        return f"{self.resource}.{self.group}/{name}" if self.kubectl_ids else f"{self.kind}/{name}"

    def owner_problem(self, item):
        """Why the stored ``item`` is not ours to write, or None: the first owner label it lacks (after the first,
        it is ours but another set's)."""
        labels = (item.get("metadata") or {}).get("labels") or {}
        for index, (key, value) in enumerate(self.owner_labels.items()):
            have = labels.get(key)
            if have != value:
                shown = "not set" if have is None else repr(have)
                return f"label {key} is {shown}" + (", another set of this collection" if index else "")
        return None

    def frozen(self, current, desired):
        """The immutable fields ``desired`` would change in the stored ``current``."""
        have = current.get("spec") or {}
        if self.immutable_once and self.immutable_once not in have:
            return []
        return [field for field in self.immutable if have.get(field) != (desired.get("spec") or {}).get(field)]


class Objects:
    """Objects of ``kinds`` (in apply order) that must be exactly ``objects`` ([(Kind, body)], in apply order).

    ``cleanup``: our listed objects that are not desired are deleted. ``recreate``: a change of an immutable field
    deletes and creates the object again (else it is refused). ``guard(listed, deletes)`` (kind -> {name: object};
    the (Kind, name) that would be deleted) may raise before the first write. ``advice`` words what to do when an
    object is refused (keys ``foreign``, ``kept``, ``refused``).
    """

    def __init__(self, kinds, objects, cleanup=True, recreate=False, guard=None, advice=None):
        self.kinds, self.objects, self.cleanup, self.recreate = list(kinds), list(objects), cleanup, recreate
        self.guard, self.advice = guard, advice


class NodeEntries:
    """The managed labels or annotations (``field``) of nodes: node name -> {key: value} (``{}`` removes every
    managed entry); ``keys`` (``labels.ManagedKeys``) says which entries are ours. A node that is not listed (with
    ``selector``) is not touched. ``headers``: (before, after) when the diff shows it as a section of its own."""

    def __init__(self, field, keys, entries, selector=None, headers=None):
        self.field, self.keys, self.entries, self.selector, self.headers = field, keys, entries, selector, headers


class NodeTaints:
    """The listed nodes (with ``selector``) of ``unhealthy`` carry the unhealthy taint; every other listed node that
    carries it loses it."""

    def __init__(self, unhealthy, selector=None):
        self.unhealthy, self.selector = set(unhealthy), selector


class ConfigMapKey:
    """One key of a ConfigMap, and our ``annotations`` on it (server-side apply: we own only those).

    ``owned_annotations``: keys set in earlier runs that go when no longer in ``annotations``;
    ``timestamp_annotation``: set to the time when the content changes, kept otherwise; ``guard(before, content)``
    may raise to refuse the write (``before``: the key's text, None when there is none).
    """

    def __init__(self, namespace, name, key, content, annotations, owned_annotations=(), timestamp_annotation=None,
                 guard=None):
        self.namespace, self.name, self.key, self.content = namespace, name, key, content
        self.annotations, self.owned_annotations = dict(annotations), tuple(owned_annotations)
        self.timestamp_annotation, self.guard = timestamp_annotation, guard
