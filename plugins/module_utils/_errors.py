# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's exceptions: one base, four kinds a caller can tell apart (and two of one node).

Modules catch ``AifactoryTopologyError`` and fail with its message; code that must react to one
kind (a remote failure that only warns, say) catches that kind alone.
"""

from __future__ import annotations


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
    """An API (HTTP, Kubernetes, gRPC) that could not be used; the message names the request."""

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
