# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What an engine hands the Kubernetes writers: desired state, never a request.

Objects: a ``Kind`` per resource (its API, namespace, how it is listed, written and owned, the fields its CRD
makes immutable) and the bodies, for ``_writers/k8s_objects.reconcile``. Node labels and annotations: node name
-> {key: value} with the ``labels.ManagedKeys`` they are, for ``_writers/k8s_nodes``.
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
