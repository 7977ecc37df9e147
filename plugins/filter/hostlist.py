# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.aifactory.topology.plugins.module_utils._base import hostlist as _hostlist


def hostlist_expand(expression):
    """``gb200-r01-n[01-03]`` -> ``['gb200-r01-n01', 'gb200-r01-n02', 'gb200-r01-n03']``."""
    try:
        return _hostlist.expand(expression)
    except _hostlist.HostlistError as exc:
        raise AnsibleFilterError(str(exc)) from None


def hostlist_compress(names):
    """A list of names -> the shortest hostlist expression Slurm expands back to them."""
    if isinstance(names, str):
        names = [names]
    return _hostlist.compress(names)


class FilterModule:
    def filters(self):
        return {"hostlist_expand": hostlist_expand, "hostlist_compress": hostlist_compress}
