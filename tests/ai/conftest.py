"""The fake AI provider as a fixture (`ai_fake`), plus small helpers for the provider tests."""

from __future__ import annotations

import asyncio

import pytest

from tests.fakes.ai_provider import ai_fake  # noqa: F401 - the fixture, for every test here

#: Distinctive enough to grep for in every message and log line.
FAKE_KEY = "sk-test-DLE-LEAKCHECK-9f8e7d6c5b4a"


def run(coro):
    return asyncio.run(coro)


@pytest.fixture
def fake_key() -> str:
    return FAKE_KEY
