"""The plan and template cache (quipu.sparql.lru): least recently used out first."""

from __future__ import annotations

import pytest

from quipu.sparql.lru import LruCache

pytestmark = pytest.mark.backend_independent


def test_the_least_recently_used_entry_goes_first_and_none_is_a_value() -> None:
    cache: LruCache[str, int | None] = LruCache(2)
    cache.put("a", 1)
    cache.put("b", None)  # a refused template is remembered as None
    assert cache.find("a") == (True, 1)  # now "b" is the least recently used
    cache.put("c", 3)
    assert cache.find("b") == (False, None)
    assert cache.find("a") == (True, 1) and cache.find("c") == (True, 3)
    cache.put("a", 4)  # replacing counts as a use
    cache.put("d", 5)
    assert [cache.find(k)[0] for k in "acd"] == [True, False, True]
