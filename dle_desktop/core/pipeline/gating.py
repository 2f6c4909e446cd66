"""The gating stages: DLE's per-field contextual gating and the chat's folder filter. Forced
entries (constants, seeds, bootstraps, pins) pass both."""

from __future__ import annotations

from dle_desktop.core.pipeline.stage_context import Active, StageContext


def _as_list(value: object) -> list[str]:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value if v is not None and str(v) != ""]
    text = str(value)
    return [text] if text != "" else []


def evaluate_operator(op: str, entry_value: object, active_value: object) -> bool:
    ev = [v.lower() for v in _as_list(entry_value)]
    av = [v.lower() for v in _as_list(active_value)]
    if op == "match_any":
        return any(v in av for v in ev)
    if op == "match_all":
        return all(v in av for v in ev)
    if op == "not_any":
        return not any(v in av for v in ev)
    if op == "exists":
        return bool(ev)
    if op == "not_exists":
        return not ev
    if op == "eq":
        return ",".join(ev) == ",".join(av)
    if op in ("gt", "lt"):
        try:
            a, b = float(ev[0]), float(av[0])
        except (IndexError, ValueError):
            return False
        if a != a or b != b:
            return False
        return a > b if op == "gt" else a < b
    return True


def _exempt(a: Active) -> bool:
    """DLE's forceInject policy (§3.6 P0): constants, seeds and bootstraps (even when bootstrap
    is no longer active) and pins are exempt from gating and the folder filter."""
    e = a.entry
    return a.forced or e.constant or e.seed or e.bootstrap


def contextual_gating(ctx: StageContext, items: list[Active], stage: str) -> list[Active]:
    """DLE's per-field gate: nothing is filtered unless some enabled field has an active value."""
    fields = [f for f in ctx.field_definitions.fields if f.gating_enabled]
    context = ctx.state.context
    active_values = {f.name: context.get(f.context_key or f.name) for f in fields}
    if not any(_as_list(v) for v in active_values.values()):
        return items
    out = []
    for a in items:
        if _exempt(a):
            out.append(a)
            continue
        blocked_by = None
        for f in fields:
            ev = a.entry.custom_fields.get(f.name)
            av = active_values[f.name]
            has_entry = bool(_as_list(ev)) or isinstance(ev, (int, float, bool))
            if f.operator in ("exists", "not_exists"):
                if not evaluate_operator(f.operator, ev, av):
                    blocked_by = f"{f.name} {f.operator}"
                    break
                continue
            if not has_entry:
                continue
            if not _as_list(av):
                if f.tolerance == "strict":
                    blocked_by = f"{f.name}: the entry has a value but the chat has none set (strict)"
                    break
                continue
            if not evaluate_operator(f.operator, ev, av):
                if f.tolerance == "lenient" and f.operator in ("match_any", "match_all"):
                    continue
                ev_text = ", ".join(_as_list(ev)) or str(ev)
                blocked_by = f"{f.name} is '{ev_text}', the chat's is '{', '.join(_as_list(av))}' ({f.operator})"
                break
        if blocked_by:
            ctx.trace.add(a.entry, stage, "removed", blocked_by)
        else:
            out.append(a)
    return out


def folder_filter(ctx: StageContext, items: list[Active]) -> list[Active]:
    folders = ctx.state.folder_filter
    if not folders:
        return items
    out = []
    for a in items:
        f = a.entry.folder
        if _exempt(a) or f is None or any(f == x or f.startswith(x.rstrip("/") + "/") for x in folders):
            out.append(a)
        else:
            ctx.trace.add(
                a.entry,
                "folder filter",
                "removed",
                f"its folder '{f}' is outside the chat's folder filter ({', '.join(folders)})",
            )
    return out
