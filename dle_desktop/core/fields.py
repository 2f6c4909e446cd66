"""Custom contextual-gating fields (`DeepLore/field-definitions.yaml`).

We read the file with a YAML parser, so both the layout DLE writes (`fields:` then items) and
the layout DLE's wiki shows (a top-level list) work; DLE itself silently ignores the latter.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import yaml

from dle_desktop.core.frontmatter import _LoreLoader

OPERATORS = ("match_any", "match_all", "not_any", "exists", "not_exists", "eq", "gt", "lt")
TOLERANCES = ("strict", "moderate", "lenient")
TYPES = ("string", "number", "boolean")
RESERVED_NAMES = frozenset(
    [
        "keys",
        "priority",
        "tags",
        "requires",
        "excludes",
        "position",
        "depth",
        "role",
        "scandepth",
        "excluderecursion",
        "refine_keys",
        "cascade_links",
        "cooldown",
        "warmup",
        "probability",
        "summary",
        "graph",
        "enabled",
        "constant",
        "seed",
        "bootstrap",
        "type",
        "fileclass",
        "status",
        "aliases",
    ]
)
_NAME_RE = re.compile(r"^[a-z][a-z0-9_]*$")


@dataclass(frozen=True)
class FieldDefinition:
    name: str
    label: str
    type: str = "string"
    multi: bool = False
    gating_enabled: bool = True
    operator: str = "match_any"
    tolerance: str = "moderate"
    values: tuple[str, ...] = ()
    context_key: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "label": self.label,
            "type": self.type,
            "multi": self.multi,
            "context_key": self.context_key or self.name,
            "gating": {"enabled": self.gating_enabled, "operator": self.operator, "tolerance": self.tolerance},
            "values": list(self.values),
        }


def _default(name: str, label: str) -> FieldDefinition:
    return FieldDefinition(name=name, label=label, multi=True, context_key=name)


DEFAULT_FIELDS: tuple[FieldDefinition, ...] = (
    _default("era", "Era"),
    _default("location", "Location"),
    _default("scene_type", "Scene Type"),
    _default("character_present", "Character Present"),
)


@dataclass(frozen=True)
class FieldDefinitions:
    fields: tuple[FieldDefinition, ...] = DEFAULT_FIELDS
    problems: tuple[str, ...] = ()
    source: str = "defaults"  # "defaults" or the vault path it came from

    def by_name(self) -> dict[str, FieldDefinition]:
        return {f.name: f for f in self.fields}

    def signature(self) -> str:
        """What a re-parse depends on: name, type and multi of each field."""
        return "|".join(f"{f.name}:{f.type}:{int(f.multi)}" for f in self.fields)


DEFAULT_DEFINITIONS = FieldDefinitions()


def _as_bool(value: object, default: bool) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    return default


def _one_definition(raw: object, index: int, problems: list[str]) -> FieldDefinition | None:
    where = f"field #{index + 1}"
    if not isinstance(raw, dict):
        problems.append(f"{where}: expected a mapping with at least `name`, found {type(raw).__name__}")
        return None
    name = raw.get("name")
    if not isinstance(name, str) or not _NAME_RE.match(name.strip()):
        problems.append(f"{where}: name {name!r} must be lowercase letters, digits and _ starting with a letter")
        return None
    name = name.strip()
    where = f"field '{name}'"
    if name in RESERVED_NAMES:
        problems.append(f"{where}: '{name}' is a built-in frontmatter field and cannot be a custom field")
        return None
    ftype = str(raw.get("type", "string")).strip().lower()
    if ftype not in TYPES:
        problems.append(f"{where}: unknown type {raw.get('type')!r}, using string")
        ftype = "string"
    gating_raw = raw.get("gating")
    gating: dict[str, Any] = gating_raw if isinstance(gating_raw, dict) else {}
    operator = str(gating.get("operator", "match_any")).strip().lower()
    if operator not in OPERATORS:
        problems.append(f"{where}: unknown operator {gating.get('operator')!r}, using match_any")
        operator = "match_any"
    tolerance = str(gating.get("tolerance", "moderate")).strip().lower()
    if tolerance not in TOLERANCES:
        problems.append(f"{where}: unknown tolerance {gating.get('tolerance')!r}, using moderate")
        tolerance = "moderate"
    values = raw.get("values") or []
    if not isinstance(values, list):
        values = [values]
    context_key = raw.get("contextKey", raw.get("context_key", name))
    label = raw.get("label", name)
    return FieldDefinition(
        name=name,
        label=str(label) if label is not None else name,
        type=ftype,
        multi=_as_bool(raw.get("multi"), False),
        gating_enabled=_as_bool(gating.get("enabled"), True),
        operator=operator,
        tolerance=tolerance,
        values=tuple(str(v) for v in values if v is not None),
        context_key=(str(context_key).strip() if context_key is not None else "") or name,
    )


def parse_field_definitions(text: str, source: str = "field-definitions.yaml") -> FieldDefinitions:
    """Parse the YAML; any problem is reported, and with no usable field the defaults apply."""
    problems: list[str] = []
    try:
        data = yaml.load(text, Loader=_LoreLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" (line {mark.line + 1})" if mark is not None else ""
        return FieldDefinitions(
            problems=(f"{source}: not valid YAML{at}: {getattr(exc, 'problem', exc)}; using the default fields",)
        )
    if isinstance(data, dict) and "fields" in data:
        items = data.get("fields")
    elif isinstance(data, list):
        items = data  # the layout DLE's wiki documents
    else:
        items = None
    if not isinstance(items, list):
        return FieldDefinitions(
            problems=(f"{source}: expected `fields:` followed by a list of fields; using the default fields",)
        )
    fields: list[FieldDefinition] = []
    seen: set[str] = set()
    for i, raw in enumerate(items):
        fd = _one_definition(raw, i, problems)
        if fd is None:
            continue
        if fd.name in seen:
            problems.append(f"field '{fd.name}': defined twice, the first definition is used")
            continue
        seen.add(fd.name)
        fields.append(fd)
    if not fields:
        problems.append(f"{source}: no usable field definitions; using the default fields")
        return FieldDefinitions(problems=tuple(problems))
    return FieldDefinitions(fields=tuple(fields), problems=tuple(problems), source=source)


def extract_custom_value(definition: FieldDefinition, value: Any) -> str | int | float | bool | list[str] | None:
    """Coerce one frontmatter value as DLE does; None means 'no value'."""
    if value is None:
        return None
    if definition.type == "number":
        if isinstance(value, bool):
            return None
        try:
            num = float(value)
        except (TypeError, ValueError):
            return None
        if num != num:  # NaN
            return None
        return int(num) if num.is_integer() else num
    if definition.type == "boolean":
        return value is True or (isinstance(value, str) and value.strip().lower() == "true")
    if definition.multi:
        items = value if isinstance(value, list) else [value]
        out = [str(v).strip() for v in items if v is not None and not isinstance(v, (dict, list)) and str(v).strip()]
        return out
    if isinstance(value, list):
        value = value[0] if value else ""
    if isinstance(value, (dict, list)):
        return None  # nested structures are not a field value (and may be alias bombs)
    return str(value).strip()
