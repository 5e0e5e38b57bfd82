"""One of many processes doing a non-atomic read-modify-write of a Redis counter under
``RedisTokenStore.lock``: with a correct lock, no increment is lost.

    python lock_worker.py REDIS_URL ROUNDS
"""

from __future__ import annotations

import sys

import redis

from mcp_lite.auth import RedisTokenStore

url, rounds = sys.argv[1], int(sys.argv[2])
store = RedisTokenStore(url, prefix="locktest:")
raw = redis.Redis.from_url(url)
for _ in range(rounds):
    with store.lock("tokens shared-key", timeout=60):
        value = int(raw.get("locktest:counter") or 0)
        raw.set("locktest:counter", value + 1)
print("done")
