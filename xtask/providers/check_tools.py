"""Checks tool definitions printed by `mcp-host tools --format ...` against the providers'
own SDK types, with no network: the `anthropic`, `openai` and `google-genai` packages'
request parameter types (TypedDicts and pydantic models), and for the JSON Schema APIs, the
`jsonschema` package's draft 2020-12 metaschema.

    check_tools.py FORMAT FILE   check the definitions in FILE (the `tools` field's value)
    check_tools.py selftest      show that each check refuses a broken definition

Exits 1 with the reasons when a definition is refused (or, for selftest, when a broken one
passes).
"""

import copy
import json
import sys
import typing
import warnings

import jsonschema
import pydantic
from anthropic.types import ToolParam
from anthropic.types.tool_param import InputSchemaTyped
from google.genai import types as genai
from openai.lib._pydantic import _ensure_strict_json_schema
from openai.types.chat import ChatCompletionFunctionToolParam
from openai.types.responses import FunctionToolParam


class Refused(Exception):
    pass


def closed(tp, value, path):
    """`value` has only the keys the TypedDict `tp` declares (nested TypedDicts too) and every
    key it requires: pydantic lets TypedDicts take extra keys, the API does not."""
    if typing.is_typeddict(tp):
        if not isinstance(value, dict):
            raise Refused(f"{path}: not an object")
        hints = typing.get_type_hints(tp)
        extra = set(value) - set(hints)
        if extra:
            raise Refused(f"{path}: keys {sorted(extra)} are not in {tp.__name__}")
        missing = set(tp.__required_keys__) - set(value)
        if missing:
            raise Refused(f"{path}: {tp.__name__} requires {sorted(missing)}")
        for key, item in value.items():
            closed(hints[key], item, f"{path}.{key}")
    elif typing.get_origin(tp) is typing.Union:
        errors = []
        for arm in typing.get_args(tp):
            try:
                closed(arm, value, path)
                return
            except Refused as e:
                errors.append(str(e))
        raise Refused(" / ".join(errors))


def typed(tp, value, path):
    closed(tp, value, path)
    try:
        pydantic.TypeAdapter(tp).validate_python(value, strict=True)
    except pydantic.ValidationError as e:
        raise Refused(f"{path}: {tp.__name__}: {e}") from None


def json_schema(schema, path):
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as e:
        raise Refused(f"{path}: not a draft 2020-12 schema: {e.message}") from None


def unordered_required(value):
    """`value` with every `required` list sorted: its order means nothing."""
    if isinstance(value, dict):
        return {
            k: sorted(v) if k == "required" and isinstance(v, list) else unordered_required(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [unordered_required(v) for v in value]
    return value


def strict_fixpoint(schema, path):
    """The openai SDK's own strict-schema pass must change nothing in a schema we call strict
    (but the order of `required`, which it rewrites to the order of `properties`)."""
    again = _ensure_strict_json_schema(copy.deepcopy(schema), path=(), root=copy.deepcopy(schema))
    if unordered_required(again) != unordered_required(schema):
        raise Refused(f"{path}: the openai SDK's strict pass would change this schema")


def check_anthropic(tool, path):
    typed(ToolParam, tool, path)
    schema = tool["input_schema"]
    # The typed arm of InputSchema: `type: "object"` at the root.
    try:
        pydantic.TypeAdapter(InputSchemaTyped).validate_python(schema)
    except pydantic.ValidationError as e:
        raise Refused(f"{path}.input_schema: {e}") from None
    json_schema(schema, f"{path}.input_schema")
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            raise Refused(f"{path}.input_schema: `{key}` at the top level (the API refuses it)")


def check_openai_parameters(schema, strict, path):
    json_schema(schema, path)
    if schema.get("type") != "object":
        raise Refused(f"{path}: the root is not type object (the API refuses it)")
    for key in ("anyOf", "oneOf", "allOf", "enum", "not"):
        if key in schema:
            raise Refused(f"{path}: `{key}` at the top level (the API refuses it)")
    if strict:
        strict_fixpoint(schema, path)


def check_openai(tool, path):
    typed(ChatCompletionFunctionToolParam, tool, path)
    function = tool["function"]
    check_openai_parameters(function["parameters"], function.get("strict"), f"{path}.function.parameters")


def check_openai_strict(tool, path):
    check_openai(tool, path)
    if tool["function"].get("strict") is not True:
        raise Refused(f"{path}: not strict")


def check_openai_responses(tool, path):
    typed(FunctionToolParam, tool, path)
    check_openai_parameters(tool["parameters"], tool.get("strict"), f"{path}.parameters")


def same(a, b):
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def check_gemini_tool(tool, path):
    """One `Tool`: google-genai's pydantic models refuse unknown fields at every level; what
    they accept must come back out unchanged (nothing dropped or coerced)."""
    try:
        model = genai.Tool.model_validate(tool)
    except pydantic.ValidationError as e:
        raise Refused(f"{path}: types.Tool: {e}") from None
    back = model.model_dump(mode="json", by_alias=True, exclude_none=True)
    if not same(back, tool):
        raise Refused(f"{path}: types.Tool does not give back what it was given:\n{json.dumps(back)[:2000]}")
    for i, declaration in enumerate(model.function_declarations or []):
        if declaration.parameters is None or declaration.parameters.type != genai.Type.OBJECT:
            raise Refused(f"{path}.functionDeclarations[{i}]: parameters are not an OBJECT")


CHECKS = {
    "anthropic": check_anthropic,
    "openai": check_openai,
    "openai-strict": check_openai_strict,
    "openai-responses": check_openai_responses,
    "gemini": check_gemini_tool,
}


def check(format, tools):
    if not isinstance(tools, list):
        raise Refused("the `tools` value is not a list")
    for i, tool in enumerate(tools):
        CHECKS[format](tool, f"tools[{i}]")
    if format == "gemini":
        return sum(len(t.get("functionDeclarations", [])) for t in tools)
    return len(tools)


OBJECT = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"], "additionalProperties": False}

BROKEN = {
    "anthropic": [
        {"name": "x", "description": "d", "inputSchema": OBJECT},
        {"name": "x", "input_schema": {"type": "string"}},
        {"name": "x", "input_schema": {"type": "object", "oneOf": [OBJECT]}},
        {"name": "x", "input_schema": {"type": "object", "properties": {"a": {"type": 7}}}},
    ],
    "openai": [
        {"type": "function", "function": {"name": "x", "parameters": OBJECT, "strict": "yes"}},
        {"type": "function", "function": {"name": "x", "parameters": {"type": "object", "properties": {"a": {"type": "string"}}}, "strict": True}},
        {"type": "function", "name": "x", "parameters": OBJECT},
    ],
    "openai-strict": [
        {"type": "function", "function": {"name": "x", "parameters": OBJECT, "strict": False}},
    ],
    "openai-responses": [
        {"type": "function", "name": "x", "parameters": OBJECT},
        {"type": "function", "function": {"name": "x", "parameters": OBJECT}, "strict": True},
    ],
    "gemini": [
        {"functionDeclarations": [{"name": "x", "parameters": {"type": "OBJECT", "oneOf": []}}]},
        {"functionDeclarations": [{"name": "x", "parameters": {"type": "STRINGY"}}]},
        {"functionDeclarations": [{"name": "x", "parameters": {"type": "OBJECT", "properties": {"a": {"type": "STRING", "exclusiveMinimum": 1}}}}]},
        {"functionDeclarations": [{"name": "x", "parametersJsonSchema": OBJECT, "parameters": {"type": "OBJECT"}}], "x": 1},
    ],
}


def selftest():
    # google-genai warns before it refuses an unknown type; the refusal is what counts here.
    warnings.filterwarnings("ignore", category=UserWarning)
    failures = 0
    for format, tools in BROKEN.items():
        for tool in tools:
            try:
                check(format, [tool])
            except Refused:
                continue
            print(f"selftest: {format} took a broken definition: {json.dumps(tool)}", file=sys.stderr)
            failures += 1
    if failures:
        sys.exit(1)
    print(f"selftest: every check refused its {sum(map(len, BROKEN.values()))} broken definitions")


def main():
    if sys.argv[1:] == ["selftest"]:
        selftest()
        return
    format, file = sys.argv[1], sys.argv[2]
    with open(file, encoding="utf-8") as f:
        tools = json.load(f)
    try:
        count = check(format, tools)
    except Refused as e:
        print(f"{format}: {file}: refused: {e}", file=sys.stderr)
        sys.exit(1)
    print(f"{format}: {count} tool definitions accepted by the SDK types")


if __name__ == "__main__":
    main()
