from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.aifactory.topology.plugins.filter.hostlist import FilterModule


def test_filters_expand_and_compress():
    filters = FilterModule().filters()
    assert filters["hostlist_expand"]("n[01-02]") == ["n01", "n02"]
    assert filters["hostlist_compress"](["n01", "n02", "n07"]) == "n[01-02,07]"
    assert filters["hostlist_compress"]("n1") == "n1"
    with pytest.raises(AnsibleFilterError, match="invalid range"):
        filters["hostlist_expand"]("n[x]")
