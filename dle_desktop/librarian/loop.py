"""One librarian turn: the user's message in, tool calls executed locally as the model asks for
them, the answer validated (up to 3 repair retries), the draft merged (dle-behaviour §5.4(b)).

Tools go both ways DLE knows: native tool calls (OpenAI `tool_calls`, Anthropic `tool_use`,
Gemini `functionCall`, through the provider layer) and the text protocol's `"action": "tool_call"`
for connections that cannot call tools. Cancelling the task running `run_turn` cancels the HTTP
call under it at once (the provider layer aborts the exchange)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from dle_desktop.ai.errors import AiError
from dle_desktop.ai.types import ChatRequest, ChatResponse, ToolCall, Turn
from dle_desktop.errors import DleError
from dle_desktop.librarian import protocol
from dle_desktop.librarian.sessions import Message, Session
from dle_desktop.librarian.tools import ToolContext, ToolResult, run_tool, specs_for

MAX_ITERATIONS = 15
MAX_TOOL_CALLS = 10
MANIFEST_CHARS = 8000
CHAT_CHARS = 4000
DRAFT_CHARS = 4000

Caller = Callable[[ChatRequest], Awaitable[ChatResponse]]


@dataclass(frozen=True)
class Event:
    """What the chat pane shows as it happens. kind: status | tool_call | tool_result | draft |
    repair | message | error."""

    kind: str
    text: str
    data: dict[str, Any] = field(default_factory=dict)


Emit = Callable[[Event], None]


class LibrarianFailed(DleError):
    """The turn ended without a usable answer; the message says why, for the session."""


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + "\n[…cut]"


def build_system(base: str, session: Session, ctx: ToolContext, gap_text: str = "") -> str:
    """The prompt plus the session's context: kind, gap, manifest, chat and the current draft."""
    snap = ctx.snapshot()
    manifest = "\n".join(
        f"- {e.title}" + (f" ({e.summary[:80]})" if e.summary else "")
        for e in (snap.entries if snap is not None else ())
    )
    parts = [base]
    task = {
        "new": "The user wants a new entry.",
        "gap": "The user wants to fill a gap record: lore the story asked for and the vault lacked.",
        "review": "Review the chat below and propose a queue of entries to create or update (propose_queue).",
        "audit": "Audit the vault for stale entries: compare entries with the chat and flag what is out of "
        "date (flag_entry_update).",
    }[session.kind]
    parts.append(f"## This session\n{task}" + (f"\n\nGap record: {gap_text}" if gap_text else ""))
    parts.append(f"## Entries in the vault (titles; do not duplicate)\n{_cut(manifest, MANIFEST_CHARS) or '(none)'}")
    if session.chat_text.strip():
        parts.append(f"## Recent chat\n{session.chat_text[-CHAT_CHARS:]}")
    parts.append(
        f"## Current draft (editor state)\n{_cut(json.dumps(session.draft.to_json(), ensure_ascii=False), DRAFT_CHARS)}"
    )
    return "\n\n".join(parts)


def _history_turns(session: Session) -> tuple[str, list[Turn]]:
    history = session.history()
    while history and history[0].role != "user":
        history = history[1:]
    first = history[0].text if history else "Hello."
    turns = [Turn("assistant", m.raw or m.text) if m.role == "assistant" else Turn("user", m.text) for m in history[1:]]
    return first, turns


async def run_turn(
    call: Caller,
    session: Session,
    user_text: str,
    ctx: ToolContext,
    emit: Emit,
    *,
    system_prompt: str,
    max_tokens: int = 4096,
    gap_text: str = "",
    native_tools: bool = True,
) -> protocol.SessionResponse:
    """Add the user's message to `session`, run the turn, leave the answer and draft in `session`.
    Raises LibrarianFailed (said in the session too) when no usable answer came."""
    session.messages.append(Message("user", user_text))
    try:
        return await _run(call, session, ctx, emit, system_prompt, max_tokens, gap_text, native_tools)
    except asyncio.CancelledError:
        session.messages.append(Message("error", "Cancelled; nothing was written."))
        raise
    except LibrarianFailed as exc:
        session.messages.append(Message("error", str(exc)))
        emit(Event("error", str(exc)))
        raise
    except (AiError, DleError) as exc:
        failed = LibrarianFailed(f"The librarian could not answer: {exc}")
        session.messages.append(Message("error", str(failed)))
        emit(Event("error", str(failed)))
        raise failed from None


async def _run(
    call: Caller,
    session: Session,
    ctx: ToolContext,
    emit: Emit,
    system_prompt: str,
    max_tokens: int,
    gap_text: str,
    native_tools: bool,
) -> protocol.SessionResponse:
    first, turns = _history_turns(session)
    tools = specs_for(ctx.snapshot()) if native_tools else ()
    calls_made = 0
    repairs = 0
    for _ in range(MAX_ITERATIONS):
        system = build_system(system_prompt, session, ctx, gap_text)
        offered = tools if calls_made < MAX_TOOL_CALLS else ()  # past the limit: answer now
        emit(Event("status", "Thinking…"))
        answer = await call(
            ChatRequest(system=system, user_parts=(first,), max_tokens=max_tokens, turns=tuple(turns), tools=offered)
        )
        if answer.tool_calls:
            turns.append(Turn("assistant", answer.text, answer.tool_calls))
            for c in answer.tool_calls:
                result = _execute(ctx, session, emit, c, calls_made)
                calls_made += 1
                turns.append(Turn("tool", result.text, call_id=c.id, name=c.name))
            continue
        parsed, errors = protocol.parse(answer.text)
        if parsed is None:
            if answer.hit_token_limit:
                errors = [*errors, "the answer was cut at the token limit; keep it shorter"]
            repairs += 1
            if repairs > protocol.MAX_REPAIRS:
                raise LibrarianFailed(
                    f"The librarian's answer could not be read after {protocol.MAX_REPAIRS} "
                    f"repair attempts ({'; '.join(errors)}). Nothing was changed; try again "
                    "or use a stronger model."
                )
            emit(
                Event(
                    "repair",
                    f"The answer could not be read ({'; '.join(errors)}); asking again "
                    f"({repairs}/{protocol.MAX_REPAIRS})",
                )
            )
            turns += [Turn("assistant", answer.text or "(empty)"), Turn("user", protocol.repair_prompt(errors))]
            continue
        if parsed.action == "tool_call" and parsed.tool_calls:
            results = []
            for i, raw in enumerate(parsed.tool_calls):
                args = raw.get("args", raw.get("arguments", {}))
                c = ToolCall(
                    id=f"text-{calls_made}-{i}", name=raw["name"], args=args if isinstance(args, dict) else None
                )
                result = _execute(ctx, session, emit, c, calls_made)
                calls_made += 1
                results.append(f"### {c.name}\n{result.text}")
            if parsed.message:
                emit(Event("message", parsed.message, {"interim": True}))
            turns += [Turn("assistant", answer.text), Turn("user", "[TOOL RESULTS]\n" + "\n\n".join(results))]
            continue
        return _finish(session, emit, parsed, answer.text)
    raise LibrarianFailed(f"The librarian went {MAX_ITERATIONS} rounds without a final answer; nothing was changed.")


def _execute(ctx: ToolContext, session: Session, emit: Emit, c: ToolCall, calls_made: int) -> ToolResult:
    emit(Event("tool_call", f"{c.name}({_args_text(c.args)})", {"name": c.name, "args": c.args}))
    if calls_made >= MAX_TOOL_CALLS:
        result = ToolResult(
            f"error: the limit of {MAX_TOOL_CALLS} tool calls per turn is reached; answer now with what you have",
            error=True,
        )
    else:
        result = run_tool(ctx, c.name, c.args)
    if result.draft is not None:
        session.draft = result.draft
        emit(Event("draft", f"Loaded '{result.draft.title}' into the editor", {"draft": result.draft}))
    session.messages.append(Message("activity", f"{'✗' if result.error else '✓'} {c.name}({_args_text(c.args)})"))
    emit(Event("tool_result", _first_line(result.text), {"name": c.name, "error": result.error, "text": result.text}))
    return result


def _finish(session: Session, emit: Emit, parsed: protocol.SessionResponse, raw: str) -> protocol.SessionResponse:
    if parsed.draft:
        session.draft = session.draft.merged(parsed.draft)
        emit(Event("draft", "Draft updated", {"draft": session.draft, "fields": sorted(parsed.draft)}))
    if parsed.queue:
        session.queue = [dict(q) for q in parsed.queue][:5]
    session.messages.append(Message("assistant", parsed.message, raw=raw))
    emit(Event("message", parsed.message, {"queue": list(parsed.queue), "options": list(parsed.options)}))
    return parsed


def _args_text(args: dict | None) -> str:
    if args is None:
        return "<not an object>"
    text = ", ".join(f"{k}={v!r}" for k, v in args.items())
    return text if len(text) <= 80 else text[:79] + "…"


def _first_line(text: str) -> str:
    """A one-line gist for the activity list: a JSON list says how many and which."""
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if isinstance(value, list):
        names = [v.get("title") if isinstance(v, dict) else str(v) for v in value]
        line = f"{len(value)} result{'s' if len(value) != 1 else ''}" + (
            f": {', '.join(n for n in names if n)}" if names else ""
        )
    elif isinstance(value, dict) and isinstance(value.get("title"), str):
        line = f"{value['title']} ({value.get('path', '')})"
    else:
        line = text.strip().splitlines()[0] if text.strip() else "(empty)"
    return line if len(line) <= 120 else line[:119] + "…"
