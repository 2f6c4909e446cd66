"""`dle-desktop match`: the pipeline on a chat file, for scripting and for comparing with DLE."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from dle_desktop.core.pipeline.chat_input import (
    ChatDocument,
    ChatInputError,
    has_lone_surrogate,
    parse_chat_document,
)
from dle_desktop.core.pipeline.config import MatchConfig
from dle_desktop.errors import ConfigError, InputError
from dle_desktop.fileio import read_json_file
from dle_desktop.state.settings import settings_from_mapping

if TYPE_CHECKING:
    from dle_desktop.engine.engine import Engine, EngineEvent


def load_chat(path: str) -> ChatDocument:
    """A JSON chat document or message list, or SillyTavern's .jsonl chat export."""
    if path.endswith(".jsonl"):
        from dle_desktop.core.pipeline.chat_formats import parse_chat_text

        try:
            doc = parse_chat_text(Path(path).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise InputError(f"chat file not found: {path}") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"chat file {path} cannot be read: {exc}") from None
        except ChatInputError as exc:
            raise InputError(f"chat file {path}: {exc}") from None
        except RecursionError:
            raise InputError(f"chat file {path} is not valid JSON lines: a line is nested too deeply") from None
        except ValueError:  # an integer longer than Python's digit limit
            raise InputError(f"chat file {path} is not valid JSON lines: a number in it is too long") from None
        if has_lone_surrogate([doc.character_name, [(m.name, m.mes, m.extra) for m in doc.messages]]):
            raise InputError(
                f"chat file {path} has a \\u escape of an unpaired surrogate (\\ud800-\\udfff), which is not text"
            )
        return doc
    try:
        return parse_chat_document(read_json_file(path, "chat"))
    except ChatInputError as exc:
        raise InputError(f"chat file {path}: {exc}") from None


def _print_human(gens: list[dict]) -> None:
    for g in gens:
        print(
            f"== generation after message {g['messages']}: {len(g['injected'])} entries, {g['total_tokens']} tokens "
            f"({g['timings_ms'].get('total', 0):.1f} ms)"
        )
        if g["skipped_reason"]:
            print(f"   skipped: {g['skipped_reason']}")
        for note in g.get("notes", ()):
            print(f"   note: {note}")
        for i in g["injected"]:
            cut = " (truncated)" if i["truncated"] else ""
            print(f"   + {i['title']}  [{i['matched_by']}] {i['tokens']}t{cut}")
        for v in g["verdicts"]:
            if v["outcome"] in ("skipped", "removed", "cut"):
                print(f"   - {v['title']}: {v['stage']}: {v['reason']}")


def _embedding_progress(status) -> None:
    if status.state == "embedding" and status.total:
        print(f"\rembedding entries: {status.done}/{status.total}", end="", file=sys.stderr, flush=True)
        if status.done >= status.total:
            print(file=sys.stderr, flush=True)


def _run(
    engine: Engine, doc: ChatDocument, cfg: MatchConfig, replay: bool, seed: int | None, quiet: bool
) -> list[dict]:
    """Index once; with the semantic stage on, embed new or changed entries first (they persist
    in the data folder, so the next run embeds only what changed) and look up each generation."""

    async def go() -> list[dict]:
        try:
            await asyncio.to_thread(engine.indexer.load_cache)
            result = await engine.indexer.sync_all()
            if cfg.semantic_enabled:
                if not quiet:

                    def on_event(event: EngineEvent) -> None:
                        if event.kind == "semantic":
                            _embedding_progress(engine.semantic.status)

                    engine.subscribe(on_event)
                engine.semantic.pause(False)  # a pause set in the app would stall this run forever
                await engine.semantic.schedule(result.snapshot)
                status = engine.semantic.status
                if status.state == "error":
                    print(f"warning: semantic search unavailable: {status.error}", file=sys.stderr)
            return await engine.retrieval.dry_run(result.snapshot, doc, cfg, replay, seed)
        finally:
            await engine.stop()

    return asyncio.run(go())


def _profile_id(settings, wanted: str) -> str:
    """--profile NAME: a connection profile by id, else by name (case-insensitive)."""
    for p in settings.connection_profiles:
        if p.id == wanted:
            return p.id
    for p in settings.connection_profiles:
        if p.name.lower() == wanted.lower():
            return p.id
    names = ", ".join(p.name for p in settings.connection_profiles) or "none yet (add one in the app's Channels view)"
    raise ConfigError(f"no connection profile called '{wanted}'; the profiles are: {names}")


def run_match(args) -> int:
    from dle_desktop.app.context import make_context, make_engine
    from dle_desktop.cli.args import embedding_model_arg

    ctx = make_context(args.data_dir)
    doc = load_chat(args.chat)
    settings = ctx.settings
    if args.settings:
        raw = read_json_file(args.settings, "settings")
        try:
            settings = settings_from_mapping(raw, base=settings)
        except ConfigError as exc:
            raise ConfigError(f"settings file {args.settings}: {exc}") from None
    if doc.settings:
        settings = settings_from_mapping(doc.settings, base=settings)
    if getattr(args, "semantic", False):
        settings = settings.replace(semantic_enabled=True)
    if getattr(args, "embedding_model", None):
        settings = settings.replace(embedding_model_path=embedding_model_arg(args.embedding_model))
    if getattr(args, "ai", None):
        settings = settings.replace(ai_search_enabled=True, ai_search_mode=args.ai)
    if getattr(args, "profile", None):
        settings = settings.replace(
            ai_search_connection_mode="profile", ai_search_profile_id=_profile_id(settings, args.profile)
        )
    ctx.settings = settings  # the engine reads tags, the model path and the rest from the same settings
    engine = make_engine(ctx, getattr(args, "vault", None), ai_offline=getattr(args, "ai_offline", False))
    gens = _run(engine, doc, MatchConfig.from_object(settings), args.replay, args.seed, quiet=args.json)
    if args.json:
        json.dump({"generations": gens}, sys.stdout, ensure_ascii=False, indent=1)
        sys.stdout.write("\n")
    else:
        _print_human(gens)
    return 0
