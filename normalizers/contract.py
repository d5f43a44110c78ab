"""The run contract: what one run was — models and versions, sampling parameters, the system
prompt and tool schemas (as hashes), framework and SDK versions — read from whatever the
instrumentation recorded. Pure; no I/O.

Every field lists the distinct values found, in span start order, each with where it came from
(`span <id> attribute <key>`, `resource of span <id> attribute <key>`, `trajectory step <id>
input`, …); a field with no values is unknown. Parameters of the model call are read from the
spans the trajectory made model steps, so a chain span that merely inherits metadata does not
count as a model call.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from trajhub.normalizers.document import parse_document
from trajhub.normalizers.immutable import immutable
from trajhub.normalizers.model import AttributeValue, Span
from trajhub.records.arguments import canonical_arguments

#: contract sampling parameter → the keys it is recorded under, in the order they are tried:
#: (attribute key) or (attribute key holding a JSON object, key inside it)
SAMPLING_KEYS: Mapping[str, tuple[tuple[str, ...], ...]] = {
    param: (
        (f"gen_ai.request.{otel}",),
        ("llm.invocation_parameters", native),
        ("call_options", native),
        (f"langsmith.metadata.ls_{ls}",),
        (f"traceloop.association.properties.ls_{ls}",),
    )
    for param, otel, native, ls in (
        ("temperature", "temperature", "temperature", "temperature"),
        ("top_p", "top_p", "top_p", "top_p"),
        ("top_k", "top_k", "top_k", "top_k"),
        ("max_tokens", "max_tokens", "max_tokens", "max_tokens"),
        ("seed", "seed", "seed", "seed"),
        ("stop", "stop_sequences", "stop", "stop"),
        ("frequency_penalty", "frequency_penalty", "frequency_penalty", "frequency_penalty"),
        ("presence_penalty", "presence_penalty", "presence_penalty", "presence_penalty"),
    )
}
MODEL_NAME_KEYS = ("gen_ai.request.model", "llm.model_name", "model_name",
                   "langsmith.metadata.ls_model_name")
MODEL_VERSION_KEYS = ("gen_ai.response.model", "llm.response.model")
PROMPT_VERSION_SUFFIXES = ("prompt.version", "prompt_version", "prompt_template.version")
SYSTEM_PROMPT_KEYS = ("gen_ai.system_instructions",)


@immutable
class Sourced:
    value: Any
    source: str


@dataclass
class ContractField:
    """The distinct values one field took in the run; none = unknown."""

    values: list[Sourced] = field(default_factory=list)

    @property
    def known(self) -> bool:
        return bool(self.values)

    def add(self, value: Any, source: str) -> None:
        if value is None or value == "":
            return
        if all(canonical_arguments(v.value) != canonical_arguments(value) for v in self.values):
            self.values.append(Sourced(value, source))


@dataclass
class Contract:
    model_names: ContractField = field(default_factory=ContractField)
    model_versions: ContractField = field(default_factory=ContractField)
    model_providers: ContractField = field(default_factory=ContractField)
    sampling: dict[str, ContractField] = field(
        default_factory=lambda: {p: ContractField() for p in SAMPLING_KEYS})
    system_prompt_hash: ContractField = field(default_factory=ContractField)
    system_prompt_version: ContractField = field(default_factory=ContractField)
    tool_schema_hash: ContractField = field(default_factory=ContractField)
    tool_names: ContractField = field(default_factory=ContractField)
    framework: ContractField = field(default_factory=ContractField)
    framework_version: ContractField = field(default_factory=ContractField)
    instrumentation: ContractField = field(default_factory=ContractField)
    sdk: ContractField = field(default_factory=ContractField)
    service_version: ContractField = field(default_factory=ContractField)

    def unknown(self) -> list[str]:
        """The names of the fields nothing in the run recorded."""
        names = [name for name, value in vars(self).items()
                 if isinstance(value, ContractField) and not value.known]
        names += [f"sampling.{p}" for p, value in self.sampling.items() if not value.known]
        return names


def sha256(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def _json(value: AttributeValue) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return None
    return value


def _scalar(value: Any) -> Any:
    """A recorded number may arrive as a string ("0", "0.7"): read it as the number."""
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return value
        return int(number) if number.is_integer() and "." not in value else number
    return value


def _tool_schema(entry: Any) -> dict[str, Any] | None:
    """{name, description, parameters} of one tool definition in any of the usual shapes
    (OpenAI's {"type": "function", "function": {...}}, or flat)."""
    entry = _json(entry) if isinstance(entry, str) else entry
    if not isinstance(entry, Mapping):
        return None
    function = entry.get("function")
    inner: Mapping[str, Any] = function if isinstance(function, Mapping) else entry
    if not isinstance(inner.get("name"), str):
        return None
    return {"name": inner["name"], "description": inner.get("description", ""),
            "parameters": inner.get("parameters", {})}


def _tool_schemas(span: Span) -> tuple[list[dict[str, Any]], str] | None:
    """The tool definitions a model call was given, and where they were read."""
    attrs = span.attributes
    indexed = sorted((k for k in attrs if k.startswith("llm.tools.")
                      and k.endswith(".tool.json_schema")),
                     key=lambda k: int(k.split(".")[2]) if k.split(".")[2].isdigit() else 0)
    candidates: list[tuple[Any, str]] = []
    if indexed:
        candidates.append(([attrs[k] for k in indexed], "attribute llm.tools.*.tool.json_schema"))
    for key in ("gen_ai.tool.definitions", "llm.request.functions"):
        if key in attrs:
            candidates.append((_json(attrs[key]), f"attribute {key}"))
    params = _json(attrs.get("llm.invocation_parameters"))
    if isinstance(params, Mapping) and "tools" in params:
        candidates.append((params["tools"], "attribute llm.invocation_parameters.tools"))
    if span.cozeloop is not None and span.cozeloop.input:
        native = _json(span.cozeloop.input)
        if isinstance(native, Mapping) and "tools" in native:
            candidates.append((native["tools"], "Coze Loop input.tools"))
    for value, where in candidates:
        if isinstance(value, list):
            schemas = [s for s in (_tool_schema(v) for v in value) if s is not None]
            if schemas:
                return sorted(schemas, key=lambda s: str(s["name"])), where
    return None


def _system_texts(value: Any) -> list[str]:
    """The system message texts in a model step's input, whatever its message shape."""
    found: list[str] = []

    def text_of(content: Any) -> str:
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            return "".join(text_of(p.get("content", p.get("text", "")))
                           if isinstance(p, Mapping) else text_of(p) for p in content)
        return ""

    def walk(node: Any) -> None:
        if isinstance(node, list):
            for item in node:
                walk(item)
        elif isinstance(node, Mapping):
            raw_kwargs = node.get("kwargs")
            kwargs: Mapping[str, Any] = raw_kwargs if isinstance(raw_kwargs, Mapping) else {}
            ident = node.get("id")
            is_system = (node.get("role") == "system" or node.get("type") == "system"
                         or kwargs.get("type") == "system"
                         or (isinstance(ident, list) and ident[-1:] == ["SystemMessage"]))
            if is_system:
                content = node.get("content", node.get("parts", kwargs.get("content")))
                text = text_of(content)
                if text:
                    found.append(text)
                return
            for key in ("messages", "input", "data", "kwargs"):
                if key in node:
                    walk(node[key])

    walk(value)
    return found


def run_contract(spans: Sequence[Span], document: Mapping[str, Any] | None) -> Contract:
    """The contract of one run from its spans and (when derived) its trajectory document."""
    contract = Contract()
    ordered = sorted(spans, key=lambda s: (s.start_ns, s.end_ns, s.span_id))
    trajectory = parse_document(document) if document else None
    # stored order (agent entries, then their steps), as the contract lists values as found
    model_steps = [step for agent in (trajectory.agent_steps if trajectory else [])
                   for step in agent.steps if step.type == "model"]
    model_ids = {step.id for step in model_steps}

    for step in model_steps:
        where = f"trajectory step {step.id} metadata"
        contract.model_names.add(step.metadata.get("model_name"), f"{where}.model_name")
        contract.model_providers.add(step.metadata.get("model_provider"),
                                     f"{where}.model_provider")
        try:
            messages = json.loads(step.input)
        except ValueError:
            messages = None
        for text in _system_texts(messages):
            contract.system_prompt_hash.add(sha256(text), f"trajectory step {step.id} "
                                                          "input (system message)")
    if trajectory is not None:
        contract.framework.add(trajectory.root_step.metadata.get("framework"),
                               "trajectory root_step metadata.framework")

    for span in ordered:
        attrs = span.attributes
        at = f"span {span.span_id} attribute"
        if span.span_id in model_ids:
            for key in MODEL_NAME_KEYS:
                if not contract.model_names.known and key in attrs:
                    contract.model_names.add(attrs[key], f"{at} {key}")
            for key in MODEL_VERSION_KEYS:
                contract.model_versions.add(attrs.get(key), f"{at} {key}")
            for param, keys in SAMPLING_KEYS.items():
                for path in keys:
                    value: Any
                    if len(path) == 1:
                        value = attrs.get(path[0])
                        where = f"{at} {path[0]}"
                    else:
                        holder = _json(attrs.get(path[0]))
                        value = holder.get(path[1]) if isinstance(holder, Mapping) else None
                        where = f"{at} {path[0]}.{path[1]}"
                    if value is not None:
                        contract.sampling[param].add(_scalar(value), where)
                        break
            schemas = _tool_schemas(span)
            if schemas is not None:
                tools, where = schemas
                contract.tool_schema_hash.add(sha256(canonical_arguments(tools)),
                                              f"span {span.span_id} {where}")
                contract.tool_names.add([t["name"] for t in tools],
                                        f"span {span.span_id} {where}")
            for key in SYSTEM_PROMPT_KEYS:
                if key in attrs and not contract.system_prompt_hash.known:
                    contract.system_prompt_hash.add(sha256(str(attrs[key])), f"{at} {key}")
        for key, value in attrs.items():
            if key.endswith(PROMPT_VERSION_SUFFIXES):
                contract.system_prompt_version.add(value, f"{at} {key}")
        runtime = _json(attrs.get("runtime"))
        if isinstance(runtime, Mapping):
            raw_extra = runtime.get("extra")
            extra: Mapping[str, Any] = raw_extra if isinstance(raw_extra, Mapping) else {}
            library = runtime.get("library")
            version = runtime.get("library_version") or extra.get(f"{library}_core_version")
            if library and version:
                contract.framework_version.add(f"{library} {version}", f"{at} runtime")
            if runtime.get("loop_sdk_version"):
                contract.sdk.add(f"cozeloop-{runtime.get('language', '')} "
                                 f"{runtime['loop_sdk_version']}", f"{at} runtime")
        if span.scope_name:
            contract.instrumentation.add(
                f"{span.scope_name} {span.scope_version}".strip(),
                f"instrumentation scope of span {span.span_id}")
        res = span.resource
        if res.get("telemetry.sdk.name"):
            contract.sdk.add(
                " ".join(str(p) for p in (
                    f"{res.get('telemetry.sdk.name')!s}-{res.get('telemetry.sdk.language', '')!s}",
                    res.get("telemetry.sdk.version", "")) if p),
                f"resource of span {span.span_id} attribute telemetry.sdk.*")
        contract.service_version.add(
            res.get("service.version"),
            f"resource of span {span.span_id} attribute service.version")
    return contract
