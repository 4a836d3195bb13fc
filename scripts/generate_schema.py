#!/usr/bin/env python3
"""Generate acpio's ACP models and method table from the official JSON schema.

Usage::

    python scripts/generate_schema.py [--spec ../shared/spec] [--version 1|2] [--check]

For each protocol version N (1 and 2; ``--version N`` for one), reads ``vN/schema.unstable.json``
(every type), ``vN/schema.json`` (to mark what is stable) and ``vN/meta.unstable.json`` (the method
names), and writes the package of that version (``acpio.schema`` for v1, ``acpio.schema.v2`` for
v2): ``_models.py`` (each class created on first use), ``_models.pyi`` (the same classes as type
checkers read them), ``_names.py`` (their names, which the package reads without importing
pydantic) and ``methods.py``. ``--check`` writes nothing and exits 1 when the committed
files differ from what the schema gives. See ``docs/schema.md`` for the rules this script applies.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import hashlib
import importlib.util
import json
import keyword
import re
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def _load_wire_name() -> Any:
    """``acpio.schema.base.wire_name``, loaded without importing the package being regenerated."""
    spec = importlib.util.spec_from_file_location("_acpio_schema_base", ROOT / "src/acpio/schema/base.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module.wire_name


wire_name = _load_wire_name()
#: Fields where an explicit ``null`` differs from an omitted key (patch semantics: null clears).
#: They default to ``MISSING`` rather than ``None``, so an invalid value leaves them absent.
V1_PATCH_FIELDS = {
    ("SessionInfoUpdate", "title"),
    ("SessionInfoUpdate", "updatedAt"),
    ("CompactionUpdate", "summary"),
    ("CompactionUpdate", "error"),
    ("CompactionUpdate", "_meta"),
}
#: Other patch fields are found by their description ("Omitted means unchanged. `null` clears it.").
PATCH_WORDING = re.compile(r"Omitted (?:means|leaves)\b[^.]*\bunchanged")

#: Names for union variants that have no ``$def`` of their own, keyed by (union, tag value).
V1_VARIANT_NAMES = {
    ("RequestPermissionOutcome", "cancelled"): "CancelledPermissionOutcome",
}

#: Objects that combine their own properties with ``oneOf``/``anyOf`` variants. They are generated
#: as one class holding every variant's fields, checked by ``check_variants`` (see docs/schema.md).
V1_COMPOSITES = {
    "CreateElicitationRequest",
    "CreateElicitationResponse",
    "SetSessionConfigOptionRequest",
    "SessionConfigOption",
    "ElicitationFormMode",
    "ElicitationUrlMode",
    "MessageMcpResponse",
}

#: JSON-RPC envelope definitions: routing is by method and id, so their payloads stay raw JSON.
V1_ENVELOPES = {
    "AgentRequest": "request",
    "ClientRequest": "request",
    "AgentNotification": "notification",
    "ClientNotification": "notification",
    "AgentResponse": "response",
    "ClientResponse": "response",
    "ProxyRequest": "request",
    "ProxyNotification": "notification",
    "ProxyResponse": "response",
}

#: The capability that gates each method (A = InitializeResponse.agentCapabilities,
#: C = InitializeRequest.clientCapabilities), from the spec pages.
V1_CAPABILITIES = {
    "logout": "A.auth.logout",
    "auth/status": "A.auth.status",
    "auth/status_update": "A.auth.status",
    "session/load": "A.loadSession",
    "session/list": "A.sessionCapabilities.list",
    "session/delete": "A.sessionCapabilities.delete",
    "session/resume": "A.sessionCapabilities.resume",
    "session/close": "A.sessionCapabilities.close",
    "session/fork": "A.sessionCapabilities.fork",
    "session/archive": "A.sessionCapabilities.archive",
    "session/unarchive": "A.sessionCapabilities.archive",
    "session/status": "A.sessionCapabilities.status",
    "session/set_title": "A.sessionCapabilities.title",
    "providers/list": "A.providers",
    "providers/set": "A.providers",
    "providers/disable": "A.providers",
    "fs/read_text_file": "C.fs.readTextFile",
    "fs/write_text_file": "C.fs.writeTextFile",
    "terminal/create": "C.terminal",
    "terminal/output": "C.terminal",
    "terminal/release": "C.terminal",
    "terminal/wait_for_exit": "C.terminal",
    "terminal/kill": "C.terminal",
    "elicitation/create": "C.elicitation",
    "elicitation/complete": "C.elicitation.url",
    "mcp/message": "A.mcpCapabilities.acp",
}

#: Other wire names accepted on receive, as the schema notes recommend (Q16).
V1_EXTRA_ALIASES = {
    ("CurrentModeUpdate", "currentModeId"): "modeId",
}

#: Defs whose Python type is written by hand (the schema's shape says too little or too much).
V1_ALIASES = {
    "RequestId": "Union[StrictInt, StrictStr, None]",
    "ErrorCode": "Int32",
    "ProtocolVersion": "UInt16",
    "ElicitationContentValue": "Union[StrictBool, StrictInt, float, str, list[str]]",
    "SessionConfigSelectOptions": "Union[list[SessionConfigSelectOption], list[SessionConfigSelectGroup]]",
    "AvailableCommandInput": "UnstructuredCommandInput",
    "EmbeddedResourceResource": (
        "Annotated[Union[Annotated[TextResourceContents, Tag('text')], "
        "Annotated[BlobResourceContents, Tag('blob')]], "
        "Discriminator(presence_discriminator(('text', 'text'), ('blob', 'blob'))), "
        "SerializeAsAny(), ]"
    ),
}

INT_FORMATS = {
    "uint16": "UInt16",
    "uint32": "UInt32",
    "uint64": "UInt64",
    "int32": "Int32",
    "int64": "Int64",
}


@dataclass(frozen=True)
class Profile:
    """What differs between the protocol versions: where the output goes and the hand-written tables."""

    version: int
    package: str  # the dotted package the output lands in
    meta: str  # the meta file naming every method
    patch_fields: set[tuple[str, str]]
    variant_names: dict[tuple[str, str], str]
    composites: set[str]
    envelopes: dict[str, str]
    capabilities: dict[str, str]
    extra_aliases: dict[tuple[str, str], str]
    aliases: dict[str, str]
    patch_wording: re.Pattern[str] = PATCH_WORDING
    #: Upserts: every optional field is a patch field (their descriptions say so once, for all).
    patch_models: frozenset[str] = frozenset()
    #: Name a union's catch-all ``Other<Union>`` where ``Unknown<Union>`` is a def of the schema
    #: (v1 keeps its generated names: there the ``unknown`` state doubles as the catch-all).
    rename_clashing_catch_alls: bool = False
    #: Models whose ``to_wire_json`` is a hand-written writer of ``acpio.schema._writers`` (by name).
    writers: dict[str, str] = field(default_factory=dict)

    @property
    def out_dir(self) -> Path:
        return ROOT / "src" / Path(*self.package.split("."))


V1 = Profile(
    version=1,
    package="acpio.schema",
    meta="meta.unstable.json",
    patch_fields=V1_PATCH_FIELDS,
    variant_names=V1_VARIANT_NAMES,
    composites=V1_COMPOSITES,
    envelopes=V1_ENVELOPES,
    capabilities=V1_CAPABILITIES,
    extra_aliases=V1_EXTRA_ALIASES,
    aliases=V1_ALIASES,
    writers={"SessionNotification": "session_notification_json"},
)

#: v2 patch fields found by their description: "Omitted leaves the stored value unchanged",
#: "Omission leaves the title unchanged", "This field is optional and has patch semantics".
V2_PATCH_WORDING = re.compile(r"Omi(?:tted|ssion) (?:means|leaves)\b[^.]*\bunchanged|\bhas patch semantics\b")

V2 = Profile(
    version=2,
    package="acpio.schema.v2",
    meta="meta.unstable.json",
    patch_fields={
        ("CompactionUpdate", "summary"),
        ("CompactionUpdate", "error"),
        ("CompactionUpdate", "_meta"),
        ("UserMessage", "content"),
        ("AgentMessage", "content"),
        ("AgentThought", "content"),
    },
    patch_models=frozenset({"ToolCallUpdate", "TerminalUpdate", "SessionInfoUpdate", "SubagentUpdate"}),
    patch_wording=V2_PATCH_WORDING,
    rename_clashing_catch_alls=True,
    variant_names={},
    composites=V1_COMPOSITES | {"IdleStateUpdate", "DiffChange"},
    envelopes=V1_ENVELOPES,
    capabilities={
        **{
            m: "A.session"
            for m in (
                "session/new",
                "session/list",
                "session/resume",
                "session/close",
                "session/prompt",
                "session/cancel",
                "session/set_config_option",
                "tool_call/cancel",
                "terminal/cancel",
            )
        },
        "session/delete": "A.session.delete",
        "session/fork": "A.session.fork",
        "session/archive": "A.session.archive",
        "session/unarchive": "A.session.archive",
        "session/status": "A.session.status",
        "session/set_title": "A.session.title",
        "auth/status": "A.auth.status",
        "auth/status_update": "A.auth.status",
        "providers/list": "A.providers",
        "providers/set": "A.providers",
        "providers/disable": "A.providers",
        "elicitation/create": "C.elicitation",
        "elicitation/complete": "C.elicitation.url",
        "mcp/message": "A.session.mcp.acp",
    },
    extra_aliases={},
    aliases={
        "RequestId": "Union[StrictInt, StrictStr]",
        "ErrorCode": "Int32",
        "ProtocolVersion": "UInt16",
        "ElicitationContentValue": (
            "Annotated[Union[StrictBool, StrictInt, float, str, list[str], Any], "
            "Field(union_mode='left_to_right')]"
        ),
        "SessionConfigSelectOptions": V1_ALIASES["SessionConfigSelectOptions"],
        # known shapes first, then any other JSON value as it came
        "ErrorData": (
            "Annotated[Union[UnsupportedProtocolVersionErrorData, SessionNotFoundErrorData, Any], "
            "Field(union_mode='left_to_right')]"
        ),
        "EmbeddedResourceResource": V1_ALIASES["EmbeddedResourceResource"],
    },
)
PROFILES = {1: V1, 2: V2}

_BASEMODEL_NAMES = {
    "copy", "dict", "json", "schema", "schema_json", "validate", "construct", "fields", "parse_obj",
    "parse_raw", "parse_file", "from_orm", "update_forward_refs", "to_wire",
}  # fmt: skip


def ref_name(node: dict[str, Any]) -> str | None:
    """The def name a node refers to (``$ref`` directly or through a one-item ``allOf``)."""
    if "$ref" in node:
        return str(node["$ref"]).rsplit("/", 1)[-1]
    all_of = node.get("allOf")
    if isinstance(all_of, list) and len(all_of) == 1 and "$ref" in all_of[0]:
        return str(all_of[0]["$ref"]).rsplit("/", 1)[-1]
    return None


def snake(name: str) -> str:
    """Python attribute name for a wire property."""
    if name == "_meta":
        return "meta"
    out = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()
    if keyword.iskeyword(out) or out in _BASEMODEL_NAMES:
        out += "_"
    return out


def pascal(tag: str) -> str:
    """``agent_message_chunk`` -> ``AgentMessageChunk``."""
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[_\-/ ]+", tag) if part)


def member_name(value: str) -> str:
    """Enum member name for a wire value: ``date-time`` -> ``DATE_TIME``, ``nesEdit`` -> ``NES_EDIT``."""
    out = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", value)
    out = re.sub(r"[^0-9A-Za-z]+", "_", out).strip("_").upper()
    if not out or out[0].isdigit():
        out = "V_" + out
    return out


def indent(lines: list[str], levels: int) -> list[str]:
    """``lines`` moved right by ``levels`` levels (blank lines stay empty)."""
    pad = "    " * levels
    return [pad + line if line.strip() else "" for line in lines]


def docstring(text: str | None, indent: str, extra: str | None = None) -> list[str]:
    """Lines of a docstring (escaped) for ``text``."""
    parts = [p for p in (text, extra) if p]
    if not parts:
        return []
    body = "\n\n".join(parts).strip().replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    lines = body.splitlines()
    if len(lines) == 1:
        return [f'{indent}"""{lines[0]}"""']
    out = [f'{indent}"""{lines[0]}']
    out += [f"{indent}{line}".rstrip() for line in lines[1:]]
    out.append(f'{indent}"""')
    return out


@dataclass
class Variant:
    """One member of a tagged union."""

    tag: str | None  # None: the untagged member
    cls: str


@dataclass
class Union_:
    """A union definition to emit as a type alias."""

    name: str
    discriminator: str | None  # wire name of the tag field
    variants: list[Variant] = field(default_factory=list)
    unknown: str | None = None  # name of the catch-all class
    untagged: str | None = None  # tag used for members without a tag


@dataclass
class FieldSpec:
    """One model field."""

    wire: str
    attr: str
    annotation: str
    required: bool
    default: str | None = None  # Python source of the default
    description: str | None = None
    omit_none: bool = False  # None is omitted on the wire (the schema forbids null here)
    extra_alias: str | None = None  # another wire name accepted on receive
    validate_default: bool = False  # the default is the wire JSON of the value (an object)


@dataclass
class ModelSpec:
    """One generated model class."""

    name: str
    base: str
    description: str | None
    fields: list[FieldSpec] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)  # attrs filled by the class itself
    classvars: list[str] = field(default_factory=list)
    variant_groups: str | None = None  # source of check_variants groups
    post_init_tag_of: str | None = None  # attr whose value's tag to mark as set
    unstable: bool = False


class Generator:
    """Walks the schema once and collects everything to emit."""

    def __init__(
        self, unstable: dict[str, Any], stable: dict[str, Any], meta: dict[str, Any], profile: Profile = V1
    ) -> None:
        self.profile = profile
        self.defs: dict[str, Any] = unstable["$defs"]
        self.stable_defs = set(stable["$defs"])
        self.meta = meta
        self.aliases: dict[str, str] = {}  # name -> source
        self.enums: dict[str, tuple[list[str], bool, str | None]] = {}  # name -> (values, open, doc)
        self.models: dict[str, ModelSpec] = {}
        self.unions: dict[str, Union_] = {}
        #: classes that get a tag field: class -> (wire tag field, value, auto-set)
        self.tagged: dict[str, tuple[str, str, bool]] = {}
        self.subclasses: dict[str, tuple[str, str, str]] = {}  # new class -> (base def, tag field, value)
        self.generated_names: set[str] = set()
        #: unions that are one tagged member of another union: union -> (outer tag field, value)
        self.nested: dict[str, tuple[str, str]] = {}

    # ----- classification -------------------------------------------------------------------
    def is_unstable(self, name: str) -> bool:
        return name not in self.stable_defs

    def enum_values(self, node: dict[str, Any]) -> tuple[list[str], bool] | None:
        alts = node.get("oneOf") or node.get("anyOf")
        if not isinstance(alts, list) or "properties" in node:
            return None
        values, is_open = [], False
        for alt in alts:
            if alt.get("type") == "string" and "const" in alt:
                values.append(alt["const"])
            elif alt.get("type") == "string" and alt.get("title") in ("other", "unknown"):
                is_open = True
            else:
                return None
        return values, is_open

    def plan(self) -> None:
        for name, node in self.defs.items():
            if name in self.profile.envelopes:
                continue
            enum = self.enum_values(node)
            if enum is not None:
                self.enums[name] = (enum[0], enum[1], node.get("description"))
            elif node.get("type") == "string":
                self.aliases[name] = "str"
            elif name in self.profile.aliases:
                self.aliases[name] = self.profile.aliases[name]
            elif self.derived_from(node) is not None:
                pass  # a model that extends another unchanged (InitializeProxyRequest), planned below
            elif (
                name in self.profile.composites
                or node.get("type") == "object"
                or node == {}
                or set(node)
                <= {
                    "x-side",
                    "x-method",
                    "description",
                }
            ):
                pass  # a model, planned below
            elif "oneOf" in node or "anyOf" in node:
                self.plan_union(name, node)
            else:
                raise SystemExit(f"generate_schema: no rule for $def {name!r}: {json.dumps(node)[:200]}")

    def derived_from(self, node: dict[str, Any]) -> str | None:
        """The def a message def merely renames (``allOf`` one ``$ref``, with its own ``x-method``)."""
        if "x-method" in node and not set(node) - {"x-side", "x-method", "description", "allOf"}:
            return ref_name(node)
        return None

    def plan_union(self, name: str, node: dict[str, Any]) -> None:
        alts = node.get("oneOf") or node.get("anyOf")
        disc = (node.get("discriminator") or {}).get("propertyName")
        union = Union_(name=name, discriminator=disc)
        for alt in alts:
            tag_field = next((k for k, v in alt.get("properties", {}).items() if "const" in v), None)
            target = ref_name(alt)
            if tag_field is not None:
                disc = disc or tag_field
                value = alt["properties"][tag_field]["const"]
                if target is not None and self.is_union(target):
                    # its members carry this tag too, written only where they sit in this union
                    self.nested[target] = (tag_field, value)
                    cls = target
                elif target is None:
                    cls = self.profile.variant_names[(name, value)]
                    self.models[cls] = ModelSpec(
                        cls, "AcpModel", f"The ``{value}`` variant of :data:`{name}`."
                    )
                    self.tagged[cls] = (tag_field, value, True)
                elif self.shared(target, name):
                    cls = pascal(value)
                    if cls in self.defs:
                        # the tag's own name is the def: tag it, but only union membership sets it
                        cls = target
                        self.tagged[cls] = (tag_field, value, False)
                    else:
                        self.subclasses[cls] = (target, tag_field, value)
                else:
                    cls = target
                    self.tagged[cls] = (tag_field, value, True)
                union.variants.append(Variant(value, cls))
            elif alt.get("title") == "other":
                union.unknown = self.catch_all_name(name)
            else:
                assert target is not None, (name, alt)
                untag = str(alt.get("title") or target).lower()
                union.untagged = untag
                union.variants.append(Variant(untag, target))
        union.discriminator = disc
        if union.unknown is None:
            union.unknown = self.catch_all_name(name)
        self.unions[name] = union

    def catch_all_name(self, union: str) -> str:
        """``Unknown<Union>``, or ``Other<Union>`` where the schema has a def of that name (v2's
        ``UnknownStateUpdate`` is the ``unknown`` state, not the catch-all)."""
        name = f"Unknown{union}"
        return f"Other{union}" if self.profile.rename_clashing_catch_alls and name in self.defs else name

    def is_union(self, name: str) -> bool:
        """Whether def ``name`` is a union of objects (planned as a type alias, not a class)."""
        node = self.defs[name]
        alts = node.get("oneOf") or node.get("anyOf")
        return (
            isinstance(alts, list)
            and "properties" not in node
            and name not in self.profile.composites
            and name not in self.profile.aliases
            and self.enum_values(node) is None
        )

    def shared(self, target: str, union: str) -> bool:
        """Whether ``target`` is used anywhere but as one tagged member of ``union``."""
        uses = 0
        for owner, node in self.defs.items():
            text = json.dumps(node)
            count = text.count(f'"#/$defs/{target}"')
            if owner == union and count == 1:
                continue
            uses += count
        return uses > 0

    # ----- types -------------------------------------------------------------------------------
    def type_of(self, node: dict[str, Any]) -> tuple[str, bool]:
        """(annotation, nullable) for a property schema."""
        target = ref_name(node)
        if target is not None:
            return self.named(target), "None" in self.aliases.get(target, "")
        for key in ("anyOf", "oneOf"):
            alts = node.get(key)
            if isinstance(alts, list):
                non_null = [a for a in alts if a.get("type") != "null"]
                nullable = len(non_null) != len(alts)
                types = [self.type_of(a)[0] for a in non_null]
                ann = types[0] if len(types) == 1 else f"Union[{', '.join(types)}]"
                return ann, nullable
        typ = node.get("type")
        nullable = False
        if isinstance(typ, list):
            nullable = "null" in typ
            rest = [t for t in typ if t != "null"]
            typ = rest[0] if len(rest) == 1 else None
        if typ is None:
            return "Any", False
        if typ == "string":
            return "str", nullable
        if typ == "boolean":
            return "StrictBool", nullable
        if typ == "integer":
            return INT_FORMATS.get(node.get("format", "int64"), "StrictInt"), nullable
        if typ == "number":
            return "Union[StrictInt, float]", nullable  # 3 stays 3, 3.5 stays 3.5
        if typ == "array":
            item = self.type_of(node.get("items", {}))[0]
            return f"list[{item}]", nullable
        if typ == "object":
            extra = node.get("additionalProperties")
            if isinstance(extra, dict):
                return f"dict[str, {self.type_of(extra)[0]}]", nullable
            return "dict[str, Any]", nullable
        raise SystemExit(f"generate_schema: no Python type for {node!r}")

    def named(self, target: str) -> str:
        if target in self.enums:
            return f"Annotated[Union[{target}, str], open_enum({target})]"
        return target

    def field_spec(self, owner: str, wire: str, node: dict[str, Any], required: bool) -> FieldSpec:
        ann, nullable = self.type_of(node)
        if wire == "_meta":
            ann, nullable = "dict[str, Any]", True
        untyped = ann == "Any"
        spec = FieldSpec(wire=wire, attr=snake(wire), annotation=ann, required=required)
        spec.description = node.get("description")
        spec.extra_alias = self.profile.extra_aliases.get((owner, wire))
        if node.get("x-deserialize-default-on-null"):
            empty = {"array": "NULL_AS_EMPTY_LIST", "object": "NULL_AS_EMPTY_DICT"}[node["type"]]
            spec.annotation = f"Annotated[{spec.annotation}, {empty}]"
        if node.get("x-deserialize-skip-invalid-items"):
            spec.annotation = f"Annotated[{spec.annotation}, SKIP_INVALID_ITEMS]"
        if not required:
            default = node.get("default")
            if isinstance(default, dict):
                # validated by this model's own validator when the field is omitted (no factory calling
                # ``X.model_validate``, which would build X's validator as well on first use)
                spec.default = repr(default)
                spec.validate_default = True
            elif default is not None:
                spec.default = repr(default)
            else:
                spec.default = "None"
            if not untyped:
                spec.annotation = f"{spec.annotation} | None"
            spec.omit_none = not untyped and not nullable
            if (
                (owner, wire) in self.profile.patch_fields
                or owner in self.profile.patch_models
                or self.profile.patch_wording.search(spec.description or "")
            ):
                spec.annotation = f"{spec.annotation} | MISSING"
                spec.default = "MISSING"
            if node.get("x-deserialize-default-on-error"):
                spec.annotation = f"Annotated[{spec.annotation}, DEFAULT_ON_ERROR]"
        return spec

    # ----- models ------------------------------------------------------------------------------
    def build_models(self) -> None:
        for name, node in self.defs.items():
            if name in self.enums or name in self.aliases or name in self.unions:
                continue
            if name in self.profile.envelopes:
                self.models[name] = self.envelope(name, node)
                continue
            spec = ModelSpec(name, "AcpModel", node.get("description"), unstable=self.is_unstable(name))
            method = node.get("x-method")
            if method is not None:
                spec.base = self.derived_from(node) or self.message_base(name)
                spec.classvars.append(f"METHOD: ClassVar[str] = {method!r}")
            if not set(node) - {"x-side", "x-method", "description"}:
                spec.base = "AcpJson"  # any JSON value
            required = set(node.get("required", []))
            for wire, prop in node.get("properties", {}).items():
                spec.fields.append(self.field_spec(name, wire, prop, wire in required))
            if name in self.profile.composites:
                self.flatten(spec, node)
            self.models[name] = spec
        for name, (base, tag_field, value) in self.subclasses.items():
            spec = ModelSpec(
                name,
                base,
                f"A ``{value}`` session update: :class:`{base}` tagged ``{tag_field}: {value!r}``.",
                unstable=self.is_unstable(base),
            )
            self.models[name] = spec
            self.tagged[name] = (tag_field, value, True)
        for cls, (tag_field, value, auto) in self.tagged.items():
            spec = self.models[cls]
            attr = snake(tag_field)
            spec.fields = [f for f in spec.fields if f.wire != tag_field]
            spec.fields.insert(
                0,
                FieldSpec(tag_field, attr, f"Literal[{value!r}]", required=False, default=repr(value)),
            )
            if auto:
                spec.tags.append(attr)
        for union in self.unions.values():
            tag_field = union.discriminator
            assert union.unknown is not None
            if union.unknown in self.models:
                continue
            spec = ModelSpec(
                union.unknown,
                "AcpModel",
                f"A :data:`{union.name}` variant this version of the schema does not know.\n\n"
                "Its fields are kept as they arrived (as extra attributes), so it can be passed on "
                "unchanged.",
            )
            if tag_field is not None:
                spec.fields.append(
                    FieldSpec(
                        tag_field,
                        snake(tag_field),
                        self.unknown_tag_type(union),
                        required=union.untagged is None,
                        default=None if union.untagged is None else "None",
                    )
                )
            self.models[union.unknown] = spec
        for inner, (tag_field, value) in self.nested.items():
            members = [v.cls for v in self.unions[inner].variants] + [self.unions[inner].unknown or ""]
            for cls in members:
                self.models[cls].fields.insert(
                    1,
                    FieldSpec(
                        tag_field,
                        snake(tag_field),
                        f"Literal[{value!r}]",
                        required=False,
                        default=repr(value),
                    ),
                )
        # a ToolCallUpdate placed in a session notification must carry its tag
        for spec in self.models.values():
            for f in spec.fields:
                if f.annotation.split(" ")[0] == "SessionUpdate":
                    spec.post_init_tag_of = f.attr

    def message_base(self, name: str) -> str:
        if name.endswith("Response"):
            return "AcpResponse"
        if name.endswith("Notification"):
            return "AcpNotification"
        return "AcpRequest"

    def envelope(self, name: str, node: dict[str, Any]) -> ModelSpec:
        kind = self.profile.envelopes[name]
        spec = ModelSpec(name, "AcpModel", node.get("description"))
        spec.description = (
            f"A JSON-RPC {kind} envelope ({name}). Its payload stays raw JSON: acpio decodes params by "
            "method and results by the pending request, never by shape."
        )
        if kind == "request" or (kind == "response" and "None" in self.aliases["RequestId"]):
            spec.fields.append(FieldSpec("id", "id", "RequestId", required=True))
        elif kind == "response":
            # a request id is never null, but an error response has a null id when the request's
            # id could not be read (a parse error)
            spec.fields.append(FieldSpec("id", "id", "RequestId | None", required=True))
        if kind in ("request", "notification"):
            spec.fields.append(FieldSpec("method", "method", "str", required=True))
            spec.fields.append(FieldSpec("params", "params", "Any", required=False, default="None"))
        else:
            spec.fields.append(FieldSpec("result", "result", "Any", required=False, default="None"))
            spec.fields.append(
                FieldSpec("error", "error", "Error | None", required=False, default="None", omit_none=True)
            )
        return spec

    def flatten(self, spec: ModelSpec, node: dict[str, Any]) -> None:
        """Merge the fields of every variant into ``spec`` and record the variant groups."""
        groups: list[str] = []
        seen_groups: set[str] = set()
        have = {f.wire for f in spec.fields}
        types: dict[str, list[str]] = {}
        required_everywhere: dict[str, int] = {}

        def collect(group_node: dict[str, Any]) -> None:
            for key in ("oneOf", "anyOf"):
                alts = group_node.get(key)
                if not isinstance(alts, list):
                    continue
                variants = []
                for alt in alts:
                    props = dict(alt.get("properties", {}))
                    req = list(alt.get("required", []))
                    target = ref_name(alt)
                    if target is not None:
                        tdef = self.defs[target]
                        props.update(tdef.get("properties", {}))
                        req += tdef.get("required", [])
                        collect(tdef)
                    collect({k: v for k, v in alt.items() if k in ("anyOf", "oneOf")})
                    tag_field = next((k for k, v in alt.get("properties", {}).items() if "const" in v), None)
                    for wire, prop in props.items():
                        if wire == "_meta" or prop.get("type") == "null":
                            continue  # a variant where the field is absent or null adds no type
                        if tag_field == wire:
                            types.setdefault(wire, []).append("str")
                        else:
                            types.setdefault(wire, []).append(self.type_of(prop)[0])
                        if wire not in have:
                            spec_field = self.field_spec(spec.name, wire, prop, False)
                            spec_field.description = prop.get("description")
                            spec.fields.append(spec_field)
                            have.add(wire)
                    for wire in set(req):
                        required_everywhere[wire] = required_everywhere.get(wire, 0) + 1
                    if alt.get("title") == "other":
                        continue
                    wires = [w for w in dict.fromkeys(req) if w != tag_field]
                    attrs = tuple(snake(w) + self.kind_suffix(props.get(w, {})) for w in wires)
                    if tag_field is not None:
                        value = alt["properties"][tag_field]["const"]
                        variants.append(f"({snake(tag_field)!r}, {value!r}, {attrs!r})")
                    else:
                        variants.append(f"(None, None, {attrs!r})")
                source = "(" + ", ".join(variants) + ",)"
                if variants and source not in seen_groups:
                    seen_groups.add(source)
                    groups.append(source)

        collect(node)
        for f in spec.fields:
            alts = list(dict.fromkeys(types.get(f.wire, [])))
            if len(alts) > 1:
                f.annotation = f"Union[{', '.join(alts)}] | None"
            elif alts and alts[0] == "str" and f.wire in ("type", "mode", "action"):
                f.annotation = "str | None"
        spec.variant_groups = "(" + ", ".join(groups) + ",)" if groups else None

    def kind_suffix(self, prop: dict[str, Any]) -> str:
        """``:str`` or ``:bool`` when a variant's field must hold that JSON type (told apart by it)."""
        ann = self.type_of(prop)[0]
        if ann == "str" or self.aliases.get(ann) == "str":
            return ":str"
        if ann == "StrictBool":
            return ":bool"
        return ""

    # ----- emit --------------------------------------------------------------------------------
    def emit_models(self, header: str, stub_header: str) -> tuple[str, str]:
        """``_models.py`` (each class created on first use) and ``_models.pyi`` (as type checkers read it)."""
        out = [header]
        out += [
            "# ruff: noqa",
            "from enum import StrEnum",
            "from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, TypeAlias, Union",
            "",
            "from pydantic import (",
            "    AliasChoices,",
            "    Discriminator,",
            "    MISSING,",
            "    Field,",
            "    SerializeAsAny,",
            "    StrictBool,",
            "    StrictInt,",
            "    StrictStr,",
            "    Tag,",
            "    model_validator,",
            ")",
            "",
            "from acpio.schema._lenient import (",
            "    DEFAULT_ON_ERROR,",
            "    NULL_AS_EMPTY_DICT,",
            "    NULL_AS_EMPTY_LIST,",
            "    SKIP_INVALID_ITEMS,",
            "    UNKNOWN,",
            "    check_variants,",
            "    not_one_of,",
            "    open_enum,",
            "    presence_discriminator,",
            "    tag_discriminator,",
            ")",
            "from acpio.schema.base import (",
            "    AcpJson,",
            "    AcpModel,",
            "    AcpNotification,",
            "    AcpRequest,",
            "    AcpResponse,",
            "    construction_hook,",
            "    tagging_init,",
            ")",
            *(
                [f"from acpio.schema._writers import {', '.join(sorted(set(self.profile.writers.values())))}"]
                if self.profile.writers
                else []
            ),
            "",
            "UInt16: TypeAlias = Annotated[StrictInt, Field(ge=0, le=65535)]",
            "UInt32: TypeAlias = Annotated[StrictInt, Field(ge=0, le=4294967295)]",
            "UInt64: TypeAlias = Annotated[StrictInt, Field(ge=0, le=18446744073709551615)]",
            "Int32: TypeAlias = Annotated[StrictInt, Field(ge=-2147483648, le=2147483647)]",
            "Int64: TypeAlias = Annotated[StrictInt, Field(ge=-9223372036854775808, le=9223372036854775807)]",
            "",
            "",
            "def _is_none(value: Any) -> bool:",
            "    return value is None",
            "",
        ]
        # enums
        for name in sorted(self.enums):
            values, is_open, doc = self.enums[name]
            out += ["", f"class {name}(StrEnum):"]
            extra = (
                "Other values are accepted and kept as plain strings."
                if is_open
                else "A value this schema does not know is kept as a plain string, not rejected."
            )
            out += docstring(doc, "    ", extra)
            out.append("")
            for value in values:
                out.append(f"    {member_name(value)} = {value!r}")
            out.append("")
        # simple aliases that do not reference classes
        late_aliases = {}
        for name in sorted(self.aliases):
            source = self.aliases[name]
            if set(re.findall(r"\w+", source)) & (set(self.models) | set(self.unions)):
                late_aliases[name] = source
                continue
            out += ["", f"{name}: TypeAlias = {source}"]
            out += docstring(self.defs[name].get("description"), "")
        out.append("")
        out.append("__all__ = [")
        out += [f"    {n!r}," for n in self.public_names()]
        out.append("]")
        out += ["", ""]
        unstable = sorted(
            n
            for n in list(self.models) + list(self.enums) + list(self.aliases) + list(self.unions)
            if self.defs.get(n) is not None and self.is_unstable(n)
        )
        out.append("#: Names of the types that exist only in the unstable schema.")
        out.append("UNSTABLE_TYPES: frozenset[str] = frozenset({")
        out += [f"    {n!r}," for n in unstable]
        out.append("})")
        out += ["", ""]
        # models, unions and the aliases of classes, each after what it uses (see definition_order)
        defined = set(self.enums) | (set(self.aliases) - set(late_aliases))
        sources: dict[str, list[str]] = {}
        for name in self.definition_order(late_aliases):
            if name in self.models:
                sources[name] = self.emit_model(self.models[name], defined)
            elif name in self.unions:
                sources[name] = self.emit_union(self.unions[name])
            else:
                sources[name] = ["", "", f"{name}: TypeAlias = {late_aliases[name]}"]
                sources[name] += docstring(self.defs[name].get("description"), "")
            defined.add(name)
        stub = [stub_header, *out[1:]]
        for lines in sources.values():
            stub += lines
        stub.append("")
        out += self.emit_lazy(sources)
        out.append("")
        return "\n".join(out), "\n".join(stub)

    def public_names(self) -> list[str]:
        """The names ``_models.py`` exports: every class, enum, alias and union, and ``UNSTABLE_TYPES``."""
        public = sorted(set(self.models) | set(self.enums) | set(self.aliases) | set(self.unions))
        return [*public, "UNSTABLE_TYPES"]

    def emit_names(self, header: str) -> str:
        """``_names.py``: the names of ``_models.py``, which the package reads without importing pydantic."""
        out = [header, '__all__ = ["NAMES"]', ""]
        out.append("#: Every public name of ``_models.py`` (its ``__all__``), in the same order.")
        out.append("NAMES: tuple[str, ...] = (")
        out += [f"    {n!r}," for n in self.public_names()]
        out += [")", ""]
        return "\n".join(out)

    def emit_lazy(self, sources: dict[str, list[str]]) -> list[str]:
        """The classes, unions and class aliases, each the body of a function that creates it.

        ``_models.pyi`` has them as plain module-level definitions, which type checkers (and the
        pydantic mypy plugin) read. Here each is the body of a function ``_define_<Name>`` that
        :class:`acpio.schema._lazy.LazyNames` calls the first time the name is read, with the names
        to create before it and after it (see ``references``).
        """
        out = ["from acpio.schema._lazy import LazyNames", ""]
        references = {name: self.references(name, lines, sources) for name, lines in sources.items()}
        self.check_acyclic({name: before for name, (before, _) in references.items()})
        entries: list[str] = []
        for name, lines in sources.items():
            before, after = references[name]
            out += ["", f"def _define_{name}() -> Any:"]
            out += indent(lines[next(i for i, line in enumerate(lines) if line.strip()) :], 1)
            out.append(f"    return {name}")
            entries.append(f"    {name!r}: (_define_{name}, {tuple(before)!r}, {tuple(after)!r}),")
        responses = [
            f"    {name!r}: {self.response_of(name)!r},"
            for name in self.models
            if "x-method" in self.defs.get(name, {}) and self.message_base(name) == "AcpRequest"
        ]
        out += [
            "",
            "",
            "# Each lazy name: its definer, the names created before it, the names created after it.",
        ]
        out += ["_lazy = LazyNames(", "    globals(),", "    {"]
        out += ["    " + e for e in entries]
        out += [
            "    },",
            "    # Request -> response bindings: a request class gets its RESPONSE when created.",
            "    {",
        ]
        out += ["    " + r for r in responses]
        out += ["    },", "    __all__,", ")", "__getattr__ = _lazy.__getattr__", "__dir__ = _lazy.__dir__"]
        return out

    def references(
        self, name: str, lines: list[str], sources: dict[str, list[str]]
    ) -> tuple[list[str], list[str]]:
        """The lazy names ``lines`` (one definition) evaluates as it runs, and those it names for later.

        Read from the emitted code, whatever ``emit_model`` and ``emit_union`` write: a name loaded
        while the class statement (or alias) runs must exist before; a name in a quoted annotation
        (a forward reference, resolved when pydantic builds the validator) or in a method body must
        exist once the definition is used, and a request's response becomes its ``RESPONSE``.
        """
        before: dict[str, None] = {}
        after: dict[str, None] = {}
        tree = ast.parse(textwrap.dedent("\n".join(lines)))

        def later(node: ast.AST) -> None:
            for sub in ast.walk(node):
                if isinstance(sub, ast.Name):
                    after[sub.id] = None
                elif isinstance(sub, ast.Constant) and isinstance(sub.value, str):
                    with contextlib.suppress(SyntaxError):
                        later(ast.parse(sub.value, mode="eval"))

        def now(node: ast.AST) -> None:
            if isinstance(node, ast.Name):
                before[node.id] = None
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                for part in [
                    *getattr(node, "decorator_list", []),
                    *node.args.defaults,
                    *node.args.kw_defaults,
                ]:
                    if part is not None:
                        now(part)
                annotations = [a.annotation for a in [*node.args.args, *node.args.kwonlyargs] if a.annotation]
                for part in [*annotations, getattr(node, "returns", None)]:
                    if part is not None:
                        now(part)
                for part in node.body if isinstance(node.body, list) else [node.body]:
                    later(part)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                later(node)  # a quoted annotation, a string in Literal[...]: kept for later at most
            else:
                for child in ast.iter_child_nodes(node):
                    now(child)

        now(tree)
        if (
            name in self.models
            and "x-method" in self.defs.get(name, {})
            and self.message_base(name) == "AcpRequest"
        ):
            after[self.response_of(name)] = None
        lazy = [n for n in sources if n != name]
        return [n for n in lazy if n in before], [n for n in lazy if n in after and n not in before]

    @staticmethod
    def check_acyclic(before: dict[str, list[str]]) -> None:
        """Fail when a name is needed, directly or not, to create itself (a definer could never run)."""
        state: dict[str, str] = {}

        def visit(name: str, path: list[str]) -> None:
            if state.get(name) == "done":
                return
            if state.get(name) == "visiting":
                raise SystemExit(f"generate_schema: creation cycle: {' -> '.join([*path, name])}")
            state[name] = "visiting"
            for dependency in before[name]:
                visit(dependency, [*path, name])
            state[name] = "done"

        for name in before:
            visit(name, [])

    def response_of(self, request: str) -> str:
        method = self.defs[request]["x-method"]
        for name, node in self.defs.items():
            if node.get("x-method") == method and name.endswith("Response"):
                return name
        raise SystemExit(f"generate_schema: no response type for {request}")

    def definition_order(self, late_aliases: dict[str, str]) -> list[str]:
        """Models, unions and class aliases, each after the names it uses; otherwise schema order.

        The module has no ``from __future__ import annotations``: Python evaluates each annotation
        as the class is created, which is much cheaper than pydantic evaluating it from a string.
        A base class, and every name in a type alias, must exist before; in a reference cycle, a
        field annotation naming what comes later is emitted as a string (see ``emit_model``).
        """
        sources: dict[str, str] = dict(late_aliases)
        for name, union in self.unions.items():
            sources[name] = " ".join([*(v.cls for v in union.variants), union.unknown or ""])
        for name, spec in self.models.items():
            sources[name] = " ".join([spec.base, *(f.annotation for f in spec.fields)])
        order: list[str] = []
        state: dict[str, str] = {}  # name -> "visiting" | "done"

        def visit(name: str) -> None:
            if name in state:
                return
            state[name] = "visiting"
            used = [u for u in dict.fromkeys(re.findall(r"\w+", sources[name])) if u in sources and u != name]
            for dependency in used:
                visit(dependency)
            needed = [self.models[name].base] if name in self.models else used
            if any(state.get(u) != "done" for u in needed if u in sources):
                del state[name]  # in a cycle: after the class being emitted, which names it in a string
                return
            state[name] = "done"
            order.append(name)

        everything = [*self.models, *sorted(late_aliases), *sorted(self.unions)]
        for name in everything:
            visit(name)
        if len(order) != len(everything):
            stuck = sorted(set(everything) - set(order))
            raise SystemExit(f"generate_schema: type aliases in a reference cycle: {', '.join(stuck)}")
        return order

    def unresolved(self, source: str, defined: set[str]) -> set[str]:
        """The generated names that ``source`` uses and that are not in ``defined`` yet."""
        generated = self.models.keys() | self.unions.keys() | self.aliases.keys() | self.enums.keys()
        return (set(re.findall(r"\w+", source)) & generated) - defined

    def emit_model(self, spec: ModelSpec, defined: set[str]) -> list[str]:
        """The class source; ``defined`` holds the names already emitted (the others are quoted)."""
        base = spec.base
        if base == "AcpRequest" and "x-method" in self.defs.get(spec.name, {}):
            # the response type, for type checkers only: AcpRequest[...] is AcpRequest at run time
            base = f'AcpRequest["{self.response_of(spec.name)}"]'
        out = ["", "", f"class {spec.name}({base}):"]
        note = (
            "**Unstable**: only in the unstable schema; may change or disappear." if spec.unstable else None
        )
        doc = docstring(spec.description or f"The ``{spec.name}`` object of the ACP schema.", "    ", note)
        out += doc
        body: list[str] = []
        for cv in spec.classvars:
            body.append(f"    {cv}")
        if spec.tags:
            # marked as set when built in Python (AcpModel.__init__); parsing reads them from the input
            body += [
                f"    _acp_tags: ClassVar[tuple[str, ...]] = {tuple(spec.tags)!r}",
                "",
                "    if not TYPE_CHECKING:",
                "        __init__ = tagging_init",
                "",
            ]
        for f in spec.fields:
            args = []
            default_src = None if f.required else f.default or "None"
            kwargs = []
            if wire_name(f.attr) != f.wire:
                raise SystemExit(f"generate_schema: {spec.name}.{f.wire} does not round-trip as {f.attr!r}")
            if f.extra_alias:
                kwargs.append(f"validation_alias=AliasChoices({f.wire!r}, {f.extra_alias!r}, {f.attr!r})")
            if f.validate_default:
                kwargs.append("validate_default=True")
            if f.omit_none:
                kwargs.append("exclude_if=_is_none")
            if kwargs:
                # the default by keyword: type checkers read only ``default=`` as a field's default
                if default_src is not None:
                    args.append(f"default={default_src}")
                value = f"Field({', '.join(args + kwargs)})"
            else:
                value = default_src
            annotation = f.annotation
            if self.unresolved(annotation, defined):
                annotation = repr(annotation)  # a forward reference: pydantic resolves it on first use
            line = f"    {f.attr}: {annotation}"
            if value is not None:
                line += f" = {value}"
            body.append(line)
            if f.description:
                body += docstring(f.description, "    ")
        writer = self.profile.writers.get(spec.name)
        if writer is not None:
            body += ["", "    if not TYPE_CHECKING:", f"        to_wire_json = {writer}"]
        if spec.variant_groups:
            body += [
                "",
                "    @model_validator(mode='after')",
                f"    def _check_variant(self) -> {spec.name!r}:",
                f"        check_variants(self, {spec.variant_groups})",
                "        return self",
            ]
        if spec.post_init_tag_of:
            body += [
                "",
                "    if not TYPE_CHECKING:",
                "",
                "        @construction_hook",
                "        def __init__(self, /, **data: Any) -> None:",
                "            self.__pydantic_validator__.validate_python(data, self_instance=self)",
                "            # tag the update even if its class is used untagged elsewhere (ToolCallUpdate),",
                "            # on a copy: the caller's object may be reused where the tag does not belong",
                f"            if 'session_update' not in self.{spec.post_init_tag_of}"
                ".__pydantic_fields_set__:",
                f"                self.{spec.post_init_tag_of} = self.{spec.post_init_tag_of}.model_copy()",
                f"                self.{spec.post_init_tag_of}.__pydantic_fields_set__.add('session_update')",
            ]
        if not body:
            body = ["    pass"] if not doc else []
        return out + body

    def unknown_tag_type(self, union: Union_) -> str:
        """The tag's type on a union's catch-all.

        Where the schema says to drop invalid items of the union (an array marked
        ``x-deserialize-skip-invalid-items``), the catch-all refuses the known tags, so that a
        malformed known variant is invalid and dropped. Elsewhere it takes any tag: a known variant
        whose fields do not validate (a ``usage_update`` whose ``used`` is ``null``) is delivered as
        unknown, its JSON kept, instead of failing the whole message that carries it.
        """
        if union.untagged is not None:
            return "str | None"
        if union.name not in self.skipped_item_types():
            return "str"
        known = tuple(sorted({v.tag for v in union.variants if v.tag is not None}))
        return f"Annotated[str, not_one_of({known!r})]"

    def skipped_item_types(self) -> set[str]:
        """The defs used as items of an array whose invalid items are dropped."""
        found: set[str] = set()

        def walk(node: Any) -> None:
            if isinstance(node, dict):
                if node.get("x-deserialize-skip-invalid-items"):
                    target = ref_name(node.get("items", {}))
                    if target is not None:
                        found.add(target)
                for value in node.values():
                    walk(value)
            elif isinstance(node, list):
                for value in node:
                    walk(value)

        walk(self.defs)
        return found

    def emit_union(self, union: Union_) -> list[str]:
        """The union's type alias.

        ``SerializeAsAny()``: a value of a union field is always an instance of one member, and is
        written by that class's own serializer. Pydantic's union serializer would first find the
        member again (by tag, or by calling the discriminator function), then fall back member by
        member: the same bytes, at a cost (``tests/schema/test_wire_bytes.py`` compares them).
        """
        assert union.discriminator is not None
        assert union.unknown is not None
        if union.untagged is None and not any(v.cls in self.unions for v in union.variants):
            # Fully tagged: pydantic's own discriminator (fast, in Rust), then the catch-all, which
            # also takes a known tag whose fields are invalid (see ``unknown_tag_type``).
            out = ["", f"{union.name}: TypeAlias = Annotated[", "    Union["]
            out.append("        Annotated[")
            out.append("            Union[" + ", ".join(v.cls for v in union.variants) + "],")
            out.append(f"            Field(discriminator={snake(union.discriminator)!r}),")
            out.append("        ],")
            out.append(f"        {union.unknown},")
            out.append("    ],")
            out.append("    Field(union_mode='left_to_right'),")
            out.append("    SerializeAsAny(),")
            out.append("]")
            out += docstring(self.defs[union.name].get("description"), "")
            return out
        members = [f"Annotated[{v.cls}, Tag({v.tag!r})]" for v in union.variants]
        members.append(f"Annotated[{union.unknown}, Tag(UNKNOWN)]")
        known = sorted({v.tag for v in union.variants if v.tag is not None})
        untagged = f", untagged={union.untagged!r}" if union.untagged else ""
        out = ["", f"{union.name}: TypeAlias = Annotated[", "    Union["]
        out += [f"        {m}," for m in members]
        out.append("    ],")
        out.append(
            f"    Discriminator(tag_discriminator({union.discriminator!r}, {snake(union.discriminator)!r}, "
            f"{known!r}{untagged})),"
        )
        out.append("    SerializeAsAny(),")
        out.append("]")
        out += docstring(self.defs[union.name].get("description"), "")
        return out

    def emit_methods(self, header: str, source: str) -> str:
        rows = []
        protocol = self.meta.get("protocolMethods", {})
        directions: dict[str, list[str]] = {}
        for method in self.meta["agentMethods"].values():
            directions.setdefault(method, []).append("client_to_agent")
        for method in self.meta["clientMethods"].values():
            directions.setdefault(method, []).append("agent_to_client")
        for method in protocol.values():
            directions.setdefault(method, []).append("both")
        for method in self.meta.get("proxyMethods", {}).values():
            directions.setdefault(method, []).append("proxy")
        for method, dirs in directions.items():
            direction = "both" if len(dirs) > 1 and "proxy" not in dirs else dirs[0]
            owners = [n for n, d in self.defs.items() if d.get("x-method") == method]
            params = [n for n in owners if not n.endswith("Response")]
            for p in params:
                kind = "notification" if p.endswith("Notification") else "request"
                result = self.response_of(p) if kind == "request" else None
                stable = not self.is_unstable(p)
                cap = self.profile.capabilities.get(method)
                if cap is not None:
                    self.check_capability(cap)
                rows.append((method, direction, kind, p, result, stable, cap))
        out = [header, "from __future__ import annotations", ""]
        if self.profile is V1:
            out.append("from acpio.schema._lazy import lazy_spec")
            out.append("from acpio.schema.method_spec import MethodSpec")
        else:
            out.append("from acpio.schema._lazy import lazy_specs")
            out.append("from acpio.schema.method_spec import MethodSpec")
            out += ["", f"lazy_spec = lazy_specs({self.profile.package + '._models'!r})"]
        out += ["", '__all__ = ["METHODS", "NOTIFICATIONS", "REQUESTS", "SCHEMA_SOURCE"]', ""]
        out.append("#: The schema these models were generated from (``acpio --version`` prints it).")
        out.append(f"SCHEMA_SOURCE = {source!r}")
        out.append("")
        out.append(
            f"#: Every ACP v{self.profile.version} method (stable and unstable), in the order of "
            f"{self.profile.meta}."
        )
        out.append(
            "#: A row names its models: each is created the first time ``params`` or ``result`` is read."
        )
        out.append("METHODS: tuple[MethodSpec, ...] = (")
        for method, direction, kind, p, result, stable, cap in rows:
            out.append(
                f"    lazy_spec({method!r}, {direction!r}, {kind!r}, {p!r}, {result!r}, "
                f"stable={stable!r}, capability={cap!r}),"
            )
        out.append(")")
        out += [
            "",
            "#: Requests by wire method.",
            "REQUESTS: dict[str, MethodSpec] = {m.method: m for m in METHODS if m.kind == 'request'}",
            "#: Notifications by wire method.",
            "NOTIFICATIONS: dict[str, MethodSpec] = {",
            "    m.method: m for m in METHODS if m.kind == 'notification'",
            "}",
            "",
        ]
        return "\n".join(out)

    def check_capability(self, path: str) -> None:
        """Fail when a capability path does not exist in the schema (so the table cannot rot)."""
        side, *parts = path.split(".")
        node = self.defs["AgentCapabilities" if side == "A" else "ClientCapabilities"]
        for part in parts:
            prop = node.get("properties", {}).get(part)
            if prop is None:
                raise SystemExit(f"generate_schema: capability {path} does not exist in the schema")
            target = ref_name(prop) or next((ref_name(a) for a in prop.get("anyOf", []) if ref_name(a)), None)
            node = self.defs[target] if target else prop


def schema_source(spec: Path, profile: Profile, digest: str) -> str:
    """Where the schema comes from, as ``spec/README.md`` tells it, and the digest of the file read."""
    readme = spec / "README.md"
    text = readme.read_text() if readme.exists() else ""
    bundle = re.search(r"`(@agentclientprotocol/sdk)` ([0-9][0-9.]*)", text)
    name = f"ACP v{profile.version} schema"
    origin = f"{name} bundled in {bundle[1]} {bundle[2]}" if bundle else name
    return f"{origin} (schema.unstable.json sha256 {digest})"


def generate(spec: Path, profile: Profile) -> tuple[Generator, dict[Path, str]]:
    """The generator that read ``profile``'s schema, and the text of each file it generates."""
    folder = spec / f"v{profile.version}"
    paths = {
        "unstable": folder / "schema.unstable.json",
        "stable": folder / "schema.json",
        "meta": folder / profile.meta,
    }
    texts = {k: p.read_bytes() for k, p in paths.items()}
    digest = hashlib.sha256(texts["unstable"]).hexdigest()[:16]
    gen = Generator(*(json.loads(texts[k]) for k in ("unstable", "stable", "meta")), profile=profile)
    gen.plan()
    gen.build_models()
    version = f"ACP v{profile.version}"
    header = (
        f"# GENERATED by scripts/generate_schema.py from the {version} schema "
        f"(schema.unstable.json sha256 {digest}). DO NOT EDIT.\n"
        "# Regenerate with `make schema`; docs/schema.md explains the rules.\n"
        '"""{doc}"""\n'
    )
    models, stub = gen.emit_models(
        header.format(
            doc=f"The {version} models (stable and unstable), generated: each class created on first use."
        ),
        header.format(
            doc=f"The {version} models (stable and unstable), as type checkers see them; generated."
        ),
    )
    out = profile.out_dir
    return gen, {
        out / "_models.py": models,
        out / "_models.pyi": stub,
        out / "_names.py": gen.emit_names(
            header.format(
                doc=f"The names of the {version} models, generated: read without importing pydantic."
            )
        ),
        out / "methods.py": gen.emit_methods(
            header.format(doc=f"The {version} method table, generated."), schema_source(spec, profile, digest)
        ),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", type=Path, default=ROOT.parent / "shared" / "spec")
    parser.add_argument("--check", action="store_true", help="exit 1 if the committed files are stale")
    parser.add_argument(
        "--version", type=int, choices=sorted(PROFILES), action="append", help="only this protocol version"
    )
    args = parser.parse_args()
    status = 0
    for version in args.version or sorted(PROFILES):
        gen, outputs = generate(args.spec, PROFILES[version])
        stale = [p for p, text in outputs.items() if not p.exists() or p.read_text() != text]
        if args.check:
            for p in stale:
                print(f"{p.relative_to(ROOT)} is stale: run `make schema`", file=sys.stderr)
            status = status or (1 if stale else 0)
            continue
        for p in stale:  # an unchanged file keeps its mtime, so its cached bytecode stays valid
            p.write_text(outputs[p])
        print(
            f"v{version}: {len(gen.models)} models, {len(gen.enums)} enums, {len(gen.unions)} unions, "
            f"{len(gen.aliases)} aliases; "
            + (
                f"wrote {', '.join(str(p.relative_to(ROOT)) for p in stale)}"
                if stale
                else "already up to date"
            )
        )
    return status


if __name__ == "__main__":
    sys.exit(main())
