#!/usr/bin/env python3
"""Steering a chat from SillyTavern at scale (issue 22): what the steering calls cost on a
10,000-entry vault, timed at the engine's service (`engine/steering.py`, the work behind
/fields, /folders, /analytics, /simulate, /chats/{id}/context-field and /chats/{id}/sources)
without HTTP, so the figures are the engine's own.

The vault is bench_pipeline.generate_entries(n), each entry given gating fields from fixed pools
(300 locations, 20 eras, 500 characters, two per entry), so /fields has 820 values to count; the
chats are bench_pipeline.generate_chat over it.

    python benchmarks/bench_steering.py [--entries 10000] [--runs 5] [--chats 20] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
for p in (REPO, REPO / "benchmarks"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from bench_index import load_average, machine_info  # noqa: E402 - needs the sys.path setup above
from bench_pipeline import generate_chat, generate_entries  # noqa: E402 - needs the sys.path setup above

from dle_desktop.core.index import IndexSnapshot  # noqa: E402 - needs the sys.path setup above
from dle_desktop.core.pipeline.chat_input import parse_chat_document  # noqa: E402 - needs the sys.path setup above
from dle_desktop.core.pipeline.config import MatchConfig  # noqa: E402 - needs the sys.path setup above
from dle_desktop.engine.retrieval import RetrievalService  # noqa: E402 - needs the sys.path setup above
from dle_desktop.engine.steering import SteeringService  # noqa: E402 - needs the sys.path setup above
from dle_desktop.state.chat_store import ChatStore  # noqa: E402 - needs the sys.path setup above


def with_fields(entries: list) -> list:
    return [
        dataclasses.replace(
            e,
            custom_fields={
                "location": [f"Place {i % 300}"],
                "era": [f"Era {i % 20}"],
                "character_present": [f"Person {i % 500}", f"Person {(i * 7) % 500}"],
            },
        )
        for i, e in enumerate(entries)
    ]


def chat_doc(chat, chat_id: str | None, upto: int):
    messages = [{"name": m.name, "mes": m.mes, "is_user": m.is_user} for m in chat.messages[:upto]]
    return parse_chat_document({"chat_id": chat_id, "messages": messages, "character_name": chat.character})


async def timed(runs: int, work) -> list[float]:
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        await work()
        out.append((time.perf_counter() - t) * 1000)
    return out


async def run(args) -> dict:
    entries = with_fields(generate_entries(args.entries).entries)
    snapshot = IndexSnapshot(entries)
    chat = generate_chat(entries, 60)
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "state.sqlite"
        retrieval = RetrievalService(lambda: ChatStore(db), lambda: snapshot, MatchConfig())
        steering = SteeringService(retrieval, lambda: snapshot, db)
        await retrieval.warm(snapshot)
        for c in range(args.chats):  # chats with analytics and records, as a used install has
            for upto in range(2, 22, 2):
                await retrieval.retrieve(chat_doc(chat, f"chat {c}", upto))
        last = await retrieval.retrieve(chat_doc(chat, "chat 0", 24))
        figures = {
            "fields": await timed(args.runs, steering.fields),
            "folders": await timed(args.runs, lambda: asyncio.sleep(0, steering.folders())),
            "analytics (one chat and all)": await timed(args.runs, lambda: steering.analytics("chat 0")),
            "simulate (60 messages)": await timed(args.runs, lambda: steering.simulate(chat_doc(chat, "chat 0", 60))),
            "set a gating field": await timed(args.runs, lambda: steering.set_field("chat 1", "location", "Place 7")),
            "tie a reply to its record": await timed(
                args.runs, lambda: steering.link_source("chat 0", 24, 0, last.record or 0)
            ),
            "read a reply's lore": await timed(args.runs, lambda: steering.source("chat 0", 24, 0)),
        }
        retrieval.close()
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--chats", type=int, default=20)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    start_load = load_average()
    figures = asyncio.run(run(args))
    if args.json:
        print(json.dumps({"machine": machine_info(), "figures": figures}, indent=2))
        return 0
    machine = machine_info()
    print(f"Steering calls on {args.entries} entries ({args.chats} chats of history), {args.runs} runs each")
    print(f"machine: {machine}; load average at start {start_load}, at end {load_average()}")
    print(f"{'call':32} {'min ms':>9} {'median ms':>10} {'max ms':>9}")
    for name, samples in figures.items():
        print(f"{name:32} {min(samples):9.1f} {statistics.median(samples):10.1f} {max(samples):9.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
