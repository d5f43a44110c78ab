"""Replay as the REST API answers it: a run's contract, its step events (playback), its
recorded tool results (hybrid replay) and the comparison of two runs.

`StepError` and `Tokens` are the answers' shape of the normalizers' value classes of those
names (trajhub.normalizers.trajectory, .playback), which the client cannot import.
`RunMetrics`, `StepRefView` and `AlignedPairView` are the comparison's own classes:
trajhub.evaluators.compare computes with them.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from trajhub.records.examples import example_config
from trajhub.records.pages import deprecated_alias
from trajhub.records.trajectories import CostView

#: the price table the examples name
PRICE_TABLE_EXAMPLE = "genai-prices 0.2.3, data of 2026-11-10"


class StepError(BaseModel):
    """`basic_info.error`: present only when the span failed."""

    code: int
    msg: str


class Tokens(BaseModel):
    input: int
    output: int
    reasoning: int
    cached_input: int  # cache reads
    cache_write: int = 0


class RunMetrics(BaseModel):
    path_length: int  # model + tool steps
    model_steps: int
    tool_calls: int
    retries: int
    input_tokens: int
    output_tokens: int
    duration_ms: int
    failed_steps: int


class Sourced(BaseModel):
    value: Any
    source: str = Field(description="where the value was read: a span attribute, a resource "
                        "attribute, the trajectory document, …")


class ContractValue(BaseModel):
    known: bool = Field(description="false: nothing in the run recorded this")
    values: list[Sourced] = Field(description="the distinct values, in the order seen")


class RunContract(BaseModel):
    model_config = example_config({
        "trace_id": "1de9ea6670d3da1fc735df5ef7697fb9", "revision": 1, "status": "final",
        "model_names": {"known": True, "values": [{
            "value": "fake-gpt-4o-mini",
            "source": "trajectory step 19322fed157cf9c6 metadata.model_name"}]},
        "model_versions": {"known": False, "values": []},
        "model_providers": {"known": True, "values": [{
            "value": "openai", "source": "trajectory step 19322fed157cf9c6 "
            "metadata.model_provider"}]},
        "sampling": {
            "temperature": {"known": True, "values": [{
                "value": 0.0, "source": "span 19322fed157cf9c6 attribute "
                "llm.invocation_parameters.temperature"}]},
            "top_p": {"known": False, "values": []}, "top_k": {"known": False, "values": []},
            "max_tokens": {"known": False, "values": []},
            "seed": {"known": False, "values": []}, "stop": {"known": False, "values": []},
            "frequency_penalty": {"known": False, "values": []},
            "presence_penalty": {"known": False, "values": []}},
        "system_prompt_hash": {"known": True, "values": [{
            "value": "sha256:7753e3382dcda9164e49aeb48db6d7265bbbd2f496be8b5941db5a193831dc39",
            "source": "trajectory step 19322fed157cf9c6 input (system message)"}]},
        "system_prompt_version": {"known": False, "values": []},
        "tool_schema_hash": {"known": True, "values": [{
            "value": "sha256:da09ad3ebe37be7c88a5d293cd1e2b175c60b5d75c237bc29205249393fbff3d",
            "source": "span 19322fed157cf9c6 attribute llm.tools.*.tool.json_schema"}]},
        "tool_names": {"known": True, "values": [{
            "value": ["add", "divide", "get_weather"],
            "source": "span 19322fed157cf9c6 attribute llm.tools.*.tool.json_schema"}]},
        "framework": {"known": True, "values": [{
            "value": "langgraph", "source": "trajectory root_step metadata.framework"}]},
        "framework_version": {"known": False, "values": []},
        "instrumentation": {"known": True, "values": [{
            "value": "openinference.instrumentation.langchain 0.1.80",
            "source": "instrumentation scope of span 17346b4501eaf614"}]},
        "sdk": {"known": True, "values": [{
            "value": "opentelemetry-python 1.45.2",
            "source": "resource of span 17346b4501eaf614 attribute telemetry.sdk.*"}]},
        "service_version": {"known": True, "values": [{
            "value": "0.0.1",
            "source": "resource of span 17346b4501eaf614 attribute service.version"}]},
        "unknown": ["model_versions", "system_prompt_version", "framework_version",
                    "sampling.top_p", "sampling.top_k", "sampling.max_tokens", "sampling.seed",
                    "sampling.stop", "sampling.frequency_penalty",
                    "sampling.presence_penalty"]})
    trace_id: str
    revision: int
    status: str
    model_names: ContractValue
    model_versions: ContractValue = Field(description="the model version the provider "
                                          "answered with (e.g. gen_ai.response.model)")
    model_providers: ContractValue
    sampling: dict[str, ContractValue] = Field(description="temperature, top_p, top_k, "
                                               "max_tokens, seed, stop, frequency_penalty, "
                                               "presence_penalty")
    system_prompt_hash: ContractValue = Field(description="sha256 of each system prompt text")
    system_prompt_version: ContractValue
    tool_schema_hash: ContractValue = Field(description="sha256 of the canonical JSON of the "
                                            "tool definitions given to the model, sorted by name")
    tool_names: ContractValue
    framework: ContractValue
    framework_version: ContractValue
    instrumentation: ContractValue
    sdk: ContractValue
    service_version: ContractValue
    unknown: list[str] = Field(description="the fields nothing recorded")


class StepCostView(BaseModel):
    usd: float | None = Field(description="null: no price for this model")
    priced_as: str | None = Field(description="the price entry used: `provider:model` of "
                                  "genai-prices, or the TRAJHUB_PRICES key")
    price_source: str | None = Field(description="where the price came from, with its date "
                                     "(see CostView.price_sources); null when not priced")


class StepEventView(BaseModel):
    """One line of the NDJSON playback."""

    seq: int
    step_id: str
    parent_id: str
    type: str = Field(description="model, tool, agent or graph")
    name: str
    agent: str = Field(description="the agent (or graph) activation the step belongs to")
    agent_step_id: str
    agent_path: list[str] = Field(description="the agent and graph activations from the "
                                  "outermost down to `agent`")
    start_time: str = Field(description="RFC 3339: when the step started")
    started_at_ms: int = deprecated_alias("start_time", "the start as Unix milliseconds")
    duration_ms: int
    input: str
    output: str
    error: StepError | None
    model: str | None
    tokens: Tokens | None
    tool_call_id: str | None
    arguments_hash: str | None
    metadata: dict[str, str]
    cost: StepCostView | None = Field(description="model steps only")


class ToolResultView(BaseModel):
    tool_name: str
    call_id: str | None
    arguments: Any
    arguments_hash: str = Field(description="sha256 of the arguments' canonical JSON (keys "
                                "sorted, no whitespace, integral floats as integers)")
    output: str
    error: StepError | None
    step_id: str
    agent: str
    seq: int


class ToolResults(BaseModel):
    model_config = example_config({
        "trace_id": "1de9ea6670d3da1fc735df5ef7697fb9", "revision": 1, "status": "final",
        "results": [
            {"tool_name": "get_weather", "call_id": "call_weather_1",
             "arguments": {"city": "Paris"},
             "arguments_hash": "sha256:6e1e312d537bc71b5410b0599f5a508142149e13174c6ee0d1671658"
                               "845bc67d",
             "output": "Sunny, 22C in Paris", "error": None, "step_id": "040e1e30c9ed0248",
             "agent": "LangGraph", "seq": 1},
            {"tool_name": "divide", "call_id": "call_div_1", "arguments": {"a": 1, "b": 0},
             "arguments_hash": "sha256:70c75ca39048db680b52c5fd0040136c6bcb678be341277eaaac5af"
                               "d16d4e70d",
             "output": "",
             "error": {"code": -1, "msg": "ZeroDivisionError: float division by zero"},
             "step_id": "3ff4bb8cf703c9ff", "agent": "LangGraph", "seq": 4}]})
    trace_id: str
    revision: int
    status: str
    results: list[ToolResultView]


class AgentCostView(BaseModel):
    agent_step_id: str
    agent: str
    cost: CostView


class StepCostEntry(BaseModel):
    step_id: str
    agent: str
    model: str | None
    usd: float | None = Field(description="null: no price for this model")
    priced_as: str | None = Field(description="the price entry used: `provider:model` of "
                                  "genai-prices, or the TRAJHUB_PRICES key")
    price_source: str | None = Field(description="where the price came from, with its date; "
                                     "null when not priced")


_UNPRICED_COST = {"input_tokens": 530, "output_tokens": 73, "cached_input_tokens": 160,
                  "cache_write_tokens": 0, "reasoning_tokens": 0,
                  "usd": None, "complete": False, "unpriced_models": ["fake-gpt-4o-mini"],
                  "price_sources": [], "currency": "USD", "price_table": PRICE_TABLE_EXAMPLE,
                  "prices_as_of": "2026-11-10"}


class RunCostView(BaseModel):
    model_config = example_config({
        "trace_id": "1de9ea6670d3da1fc735df5ef7697fb9", "revision": 1, "status": "final",
        "run": _UNPRICED_COST,
        "agents": [{"agent_step_id": "17346b4501eaf614", "agent": "LangGraph",
                    "cost": _UNPRICED_COST}],
        "steps": [{"step_id": "19322fed157cf9c6", "agent": "LangGraph",
                   "model": "fake-gpt-4o-mini", "usd": None, "priced_as": None,
                   "price_source": None},
                  {"step_id": "d868c2cf1d4a2b12", "agent": "LangGraph",
                   "model": "fake-gpt-4o-mini", "usd": None, "priced_as": None,
                   "price_source": None}]})
    trace_id: str
    revision: int
    status: str
    run: CostView
    agents: list[AgentCostView] = Field(description="each agent activation's own model steps")
    steps: list[StepCostEntry] = Field(description="every model step")


class StepRefView(BaseModel):
    seq: int
    step_id: str
    type: str
    name: str
    agent: str
    arguments_hash: str | None


class AlignedPairView(BaseModel):
    op: str = Field(description="same, changed, inserted (only in b) or deleted (only in a)")
    position: int
    a: StepRefView | None
    b: StepRefView | None


class ComparedRun(BaseModel):
    trace_id: str
    revision: int
    status: str
    metrics: RunMetrics
    cost: CostView


def _priced_cost(input_tokens: int, output_tokens: int, usd: float) -> dict[str, Any]:
    return {"input_tokens": input_tokens, "output_tokens": output_tokens,
            "cached_input_tokens": 0, "cache_write_tokens": 0, "reasoning_tokens": 0,
            "usd": usd, "complete": True, "unpriced_models": [],
            "price_sources": [PRICE_TABLE_EXAMPLE], "currency": "USD",
            "price_table": PRICE_TABLE_EXAMPLE, "prices_as_of": "2026-11-10"}


_ADD_HASH = "sha256:206f7b5543e6f2ef39bf334988fd7097b725caeed16588cd9d785480f2f0f8f6"
_SECOND_CHAT = {"op": "inserted", "position": 2, "a": None, "b": {
    "seq": 2, "step_id": "418893ffe6da18c7", "type": "model", "name": "chat gpt-4o-mini",
    "agent": "calc_agent", "arguments_hash": None}}


class ComparisonView(BaseModel):
    model_config = example_config({
        "a": {"trace_id": "07496c7684d074983cb8f9387e1156f2", "revision": 1, "status": "final",
              "metrics": {"path_length": 2, "model_steps": 1, "tool_calls": 1, "retries": 0,
                          "input_tokens": 12, "output_tokens": 4, "duration_ms": 0,
                          "failed_steps": 0},
              "cost": _priced_cost(12, 4, 4.2e-06)},
        "b": {"trace_id": "f15936868cc8af52134b0f65722bf35c", "revision": 1, "status": "final",
              "metrics": {"path_length": 4, "model_steps": 2, "tool_calls": 2, "retries": 0,
                          "input_tokens": 24, "output_tokens": 8, "duration_ms": 0,
                          "failed_steps": 0},
              "cost": _priced_cost(24, 8, 8.4e-06)},
        "distance": 2, "counts": {"same": 2, "changed": 0, "inserted": 2, "deleted": 0},
        "first_divergence": _SECOND_CHAT,
        "alignment": [
            {"op": "same", "position": 1,
             "a": {"seq": 1, "step_id": "16be4ed3456605f2", "type": "tool", "name": "add",
                   "agent": "calc_agent", "arguments_hash": _ADD_HASH},
             "b": {"seq": 1, "step_id": "d4acac58964efd7a", "type": "tool", "name": "add",
                   "agent": "calc_agent", "arguments_hash": _ADD_HASH}},
            _SECOND_CHAT],
        "deltas": {"path_length": 2.0, "model_steps": 1.0, "tool_calls": 1.0, "retries": 0.0,
                   "input_tokens": 12.0, "output_tokens": 4.0, "duration_ms": 0.0,
                   "failed_steps": 0.0, "cost_usd": 4.2e-06}})
    a: ComparedRun
    b: ComparedRun
    distance: int = Field(description="edit distance of the aligned step sequences")
    counts: dict[str, int]
    first_divergence: AlignedPairView | None
    alignment: list[AlignedPairView]
    deltas: dict[str, float | None] = Field(description="b − a per metric, and cost_usd "
                                            "(null when either cost is unknown)")
