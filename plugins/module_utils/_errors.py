# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's exceptions: one base, three kinds a caller can tell apart.

Modules catch ``AifactoryTopologyError`` and fail with its message; code that must react to one
kind (a remote failure that only warns, say) catches that kind alone.
"""

from __future__ import annotations


class AifactoryTopologyError(Exception):
    """Base of every error this collection raises on purpose; the message is for the user."""


class TopologyError(AifactoryTopologyError, ValueError):
    """Invalid input; the message names the offending switch, node, domain, field or line."""


class RemoteAPIError(AifactoryTopologyError):
    """An API (HTTP, Kubernetes, gRPC) that could not be used; the message names the request."""

    def __init__(self, message, status=None):
        super().__init__(message)
        self.status = status


class LocalFileError(AifactoryTopologyError):
    """A local file that could not be read or written; the message names the file."""


def unknown_keys_message(where, unknown, known):
    """The one wording of an unknown-key error: the place, the keys, the keys known there (never values)."""
    return f"{where} has unknown keys: {', '.join(sorted(map(str, unknown)))}; known: {', '.join(sorted(known))}"


def check_known_keys(mapping, known, where):
    """A TopologyError when ``mapping`` has a key outside ``known``."""
    unknown = [key for key in mapping if key not in known]
    if unknown:
        raise TopologyError(unknown_keys_message(where, unknown, known))
