# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's exceptions: one base, four kinds a caller can tell apart (and two of one node).

Which kind to raise, by whose fault it is and who can fix it:

* ``RemoteAPIError`` (``HttpError``, ``K8sError``): a server (HTTP, Kubernetes, gRPC, the EC2 or
  GCE metadata API) refused the request (HTTP 4xx, AWS ``AccessDenied``, gRPC ``PERMISSION_DENIED``,
  an expired token), failed (5xx, a timeout, retries used up), or answered with something that is
  not the documented response (not JSON or XML, a missing field, a field of the wrong type, an
  instance reported twice differently, a page repeated). ``status`` is the HTTP status, or the gRPC
  status code name, where one is known.
* ``TopologyError``: invalid operator input: options, params and creds (a missing or malformed
  credential included: there is nothing to send), model and inventory contents, command output the
  operator hands in (``ibnetdiscover``), a file a provider's params or creds name that cannot be
  read (the provider turns ``InputFileError`` into this kind), a missing Python library on the
  host, and what a well-formed answer lacks for the request the operator made (no node carries the
  label asked for, no NetQ premises is viewed).
* ``NodeDataError`` (a ``TopologyError``; ``NodeUnhealthy``): data about one node, quarantined.
* ``LocalFileError`` (``InputFileError``, ``FileWriteError``): a local file that could not be
  written, or read outside a provider (the inventory plugin's ``model_path``).
* ``CommandError``: a local command (``scontrol``, ``nvidia-smi``).

Modules run their work in ``failing_cleanly`` (below): an ``AifactoryTopologyError`` fails the task
with its message alone (the message is the whole story); anything else is a bug, and the task
fails with its traceback in ``exception`` (shown with ``-vvv``). Code that must react to one kind
(a remote failure that only warns, say: the Slurm event source's failed polls) catches that kind
alone.
``tests/integration/test_provider_errors.py`` holds every provider's known remote error paths to
``RemoteAPIError``.
"""

from __future__ import annotations

import contextlib
import traceback

from ansible_collections.aifactory.topology.plugins.module_utils._base import secrets as _secrets


class AifactoryTopologyError(Exception):
    """Base of every error this collection raises on purpose; the message is for the user."""


class TopologyError(AifactoryTopologyError, ValueError):
    """Invalid input; the message names the offending switch, node, domain, field or line."""


class NodeDataError(TopologyError):
    """Data about one node is unusable (a name the rule refuses, GPUs in two cliques, a malformed
    per-instance record): the node is quarantined, the run goes on (``invalid_nodes: fail`` makes it fatal)."""


class NodeUnhealthy(NodeDataError):
    """One node is valid but unhealthy (its NVLink fabric registration incomplete or degraded): quarantined,
    and the only kind the opt-in drain or taint acts on."""


class RemoteAPIError(AifactoryTopologyError):
    """An API (HTTP, Kubernetes, gRPC) that refused, failed or answered malformed; the message names the
    request, ``status`` is the HTTP status or gRPC code name where known."""

    def __init__(self, message, status=None):
        super().__init__(message)
        self.status = status


class LocalFileError(AifactoryTopologyError):
    """A local file that could not be read or written; the message names the file."""


class CommandError(AifactoryTopologyError):
    """A local command (scontrol, nvidia-smi) that could not run, failed, overran its time or output
    limit, or printed something that is not text; the message names the command (_command.py)."""


# What a message may show of a value: a short prefix, never a credential.
def clip(value, width=60):
    """``repr(value)`` cut to about ``width`` characters: messages never quote megabytes of input."""
    if isinstance(value, str):
        if len(value) <= width:
            return repr(value)
        return f"{value[:width]!r}... ({len(value)} characters)"
    text = repr(value) if isinstance(value, (int, float, bool, type(None))) else f"<{type(value).__name__}>"
    return text if len(text) <= width else text[:width] + "..."


def credential_problem(value):
    """What makes ``value`` unusable as a credential in an HTTP header or gRPC metadata, or None."""
    for char in value:
        if char in "\r\n":
            return "contains a line break (a trailing newline from a YAML block or a file?)"
        if not " " <= char <= "~":
            return "contains a control or non-ASCII character"
    return None


def unknown_keys_message(where, unknown, known):
    """The one wording of an unknown-key error: the place, the keys, the keys known there (never values)."""
    names = sorted(str(key) for key in unknown)
    shown = ", ".join(name if len(name) <= 60 else f"{name[:60]}... ({len(name)} characters)" for name in names[:10])
    more = f" and {len(names) - 10} more" if len(names) > 10 else ""
    return f"{where} has unknown keys: {shown}{more}; known: {', '.join(sorted(known))}"


def check_known_keys(mapping, known, where):
    """A TopologyError when ``mapping`` has a key outside ``known``."""
    unknown = [key for key in mapping if key not in known]
    if unknown:
        raise TopologyError(unknown_keys_message(where, unknown, known))


@contextlib.contextmanager
def failing_cleanly(module):
    """Fail the module on an error raised in the block, as community.docker and kubernetes.core do.

    An error of the collection (``AifactoryTopologyError``) says what to fix: its message alone.
    Anything else is a bug: its type and message, and the traceback in ``exception``, which
    ansible-playbook shows with ``-vvv``. ``exit_json`` and ``fail_json`` end the module with
    SystemExit, which passes through.
    """
    # One registry of the task's secrets (a Kubernetes token from a kubeconfig, say): its failure is scrubbed of them.
    with _secrets.scope():
        try:
            yield
        except AifactoryTopologyError as exc:
            module.fail_json(msg=_secrets.scrub(str(exc)))
        except Exception as exc:  # pylint: disable=broad-exception-caught  # reported, with its traceback
            module.fail_json(msg=_secrets.scrub(f"unexpected error in aifactory.topology ({type(exc).__name__}): "
                                                f"{exc}; the traceback is shown with -vvv"),
                             exception=_secrets.scrub(traceback.format_exc()))
