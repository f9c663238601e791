"""A tool-pack plugin: weather, restaurants and orders, backed by Faker.

Results are deterministic: each call seeds its own Faker from the tool name and the
arguments, so the same call always returns the same data. Scenarios use these with
``tools: {weather: {use: weather}}`` (a registered name) or
``use: plugins.shop_tools:lookup_order``.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal

from faker import Faker

from harness.plugin import hookimpl, simclock, tool

_FAKE = Faker("en_US")
_LOCK = threading.Lock()


@contextmanager
def _faker(tool_name: str, **arguments: Any) -> Iterator[Faker]:
    """One Faker (building one loads every provider), seeded from the call itself.

    Parallel calls of sync tools run in threads: the lock keeps each call's seed and
    draws together.
    """
    key = json.dumps([tool_name, arguments], sort_keys=True)
    with _LOCK:
        _FAKE.seed_instance(int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big"))
        yield _FAKE


@tool
def weather(city: str, unit: Literal["F", "C"] = "F") -> dict[str, Any]:
    """Current weather for a city."""
    simclock.sleep(0.2)  # what the real service costs, on the simulated clock
    with _faker("weather", city=city, unit=unit) as fake:
        temp = fake.random_int(50, 80) if unit == "F" else fake.random_int(10, 27)
        sky = fake.random_element(["sunny", "cloudy", "foggy", "rainy"])
    return {"city": city, "temperature": temp, "unit": unit, "sky": sky}


@tool
def restaurants(location: str, cuisine: str | None = None, limit: int = 3) -> list[dict[str, Any]]:
    """Restaurants near a location, optionally of one cuisine."""
    if not 1 <= limit <= 10:
        raise ValueError("limit must be between 1 and 10")
    simclock.sleep(0.4)
    kinds = ["Italian", "Thai", "Mexican", "Japanese", "Ethiopian"]
    with _faker("restaurants", location=location, cuisine=cuisine, limit=limit) as fake:
        return [
            {
                "name": fake.company(),
                "cuisine": cuisine or fake.random_element(kinds),
                "rating": round(fake.pyfloat(min_value=3, max_value=5, right_digits=1), 1),
            }
            for _ in range(limit)
        ]


@tool
def lookup_order(order_id: str) -> dict[str, Any]:
    """Status of an order by id (ids look like ORD-1234)."""
    if not order_id.startswith("ORD-"):
        raise KeyError(f"no order {order_id!r}; order ids look like ORD-1234")
    with _faker("lookup_order", order_id=order_id) as fake:
        return {
            "order_id": order_id,
            "status": fake.random_element(["processing", "shipped", "delivered"]),
            "customer": fake.name(),
            "total": f"${fake.random_int(10, 300)}.{fake.random_int(0, 99):02d}",
        }


@hookimpl
def harness_register_tools(register: Any) -> None:
    """Register the pack's tools by name."""
    for t in (weather, restaurants, lookup_order):
        register(t)
