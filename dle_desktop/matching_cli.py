"""`dle-desktop match`: the pipeline on a chat file, for scripting and for comparing with DLE."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from dle_desktop.core.pipeline.chat_input import ChatDocument, ChatInputError, has_lone_surrogate, parse_chat_document
from dle_desktop.core.pipeline.config import MatchConfig
from dle_desktop.core.pipeline.replay import generations
from dle_desktop.errors import ConfigError, InputError
from dle_desktop.state.settings import settings_from_mapping



def _read_json(path: str, what: str):
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{what} file not found: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{what} file {path} cannot be read: {exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{what} file {path} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:
        raise InputError(f"{what} file {path} is not valid JSON: it is nested too deeply") from None
    except ValueError:  # an integer longer than Python's digit limit
        raise InputError(f"{what} file {path} is not valid JSON: a number in it is too long") from None
    if has_lone_surrogate(data):
        raise InputError(f"{what} file {path} has a \\u escape of an unpaired surrogate (\\ud800-\\udfff), which is not text")
    return data


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
            raise InputError(f"chat file {path} has a \\u escape of an unpaired surrogate (\\ud800-\\udfff), which is not text")
        return doc
    try:
        return parse_chat_document(_read_json(path, "chat"))
    except ChatInputError as exc:
        raise InputError(f"chat file {path}: {exc}") from None


def _print_human(gens: list[dict]) -> None:
    for g in gens:
        print(f"== generation after message {g['messages']}: {len(g['injected'])} entries, {g['total_tokens']} tokens "
              f"({g['timings_ms'].get('total', 0):.1f} ms)")
        if g["skipped_reason"]:
            print(f"   skipped: {g['skipped_reason']}")
        for i in g["injected"]:
            cut = " (truncated)" if i["truncated"] else ""
            print(f"   + {i['title']}  [{i['matched_by']}] {i['tokens']}t{cut}")
        for v in g["verdicts"]:
            if v["outcome"] in ("skipped", "removed", "cut"):
                print(f"   - {v['title']}: {v['stage']}: {v['reason']}")


def run_match(args) -> int:
    from dle_desktop.app import index_once, make_context, make_engine

    ctx = make_context(args.data_dir)
    doc = load_chat(args.chat)
    settings = ctx.settings
    if args.settings:
        raw = _read_json(args.settings, "settings")
        try:
            settings = settings_from_mapping(raw, base=settings)
        except ConfigError as exc:
            raise ConfigError(f"settings file {args.settings}: {exc}") from None
    if doc.settings:
        settings = settings_from_mapping(doc.settings, base=settings)
    engine = make_engine(ctx, args.vault)
    result = index_once(engine)
    gens = generations(result.snapshot, doc, MatchConfig.from_object(settings), args.replay, args.seed)
    if args.json:
        json.dump({"generations": gens}, sys.stdout, ensure_ascii=False, indent=1)
        sys.stdout.write("\n")
    else:
        _print_human(gens)
    return 0
