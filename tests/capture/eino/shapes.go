package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/cloudwego/eino/adk"
	"github.com/cloudwego/eino/adk/prebuilt/supervisor"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/flow/agent/react"
	"github.com/cloudwego/eino/schema"
)

// scriptedTool answers each call with the outcome the script gives its call id.
type scriptedTool struct {
	name     string
	outcomes map[string]Outcome
}

func (t *scriptedTool) Info(_ context.Context) (*schema.ToolInfo, error) {
	params := map[string]*schema.ParameterInfo{
		"city": {Type: schema.String, Desc: "the city", Required: true},
	}
	if t.name == "add" {
		params = map[string]*schema.ParameterInfo{
			"a": {Type: schema.Integer, Desc: "first addend", Required: true},
			"b": {Type: schema.Integer, Desc: "second addend", Required: true},
		}
	}
	return &schema.ToolInfo{
		Name:        t.name,
		Desc:        toolDescriptions[t.name],
		ParamsOneOf: schema.NewParamsOneOfByParams(params),
	}, nil
}

func (t *scriptedTool) InvokableRun(ctx context.Context, _ string, _ ...tool.Option) (string, error) {
	time.Sleep(toolLatency)
	id := compose.GetToolCallID(ctx)
	outcome, ok := t.outcomes[id]
	if !ok {
		return "", fmt.Errorf("no scripted outcome for %s call %q", t.name, id)
	}
	if outcome.Error != "" {
		return "", errors.New(outcome.Error)
	}
	return outcome.Result, nil
}

func toolsOf(s Shape, owner string) []tool.BaseTool {
	var out []tool.BaseTool
	for _, name := range s.Tools[owner] {
		out = append(out, &scriptedTool{name: name, outcomes: s.Outcomes})
	}
	return out
}

// errorsAsResults hands a failed tool call's error to the model as the call's result, so a
// failing tool does not end the run. It wraps the tool outside Eino's tool callbacks
// (compose/tool_node.go wrapToolCall), so the tracers still see the tool fail.
func errorsAsResults(next compose.InvokableToolEndpoint) compose.InvokableToolEndpoint {
	return func(ctx context.Context, input *compose.ToolInput) (*compose.ToolOutput, error) {
		out, err := next(ctx, input)
		if err != nil {
			return &compose.ToolOutput{Result: toolFailurePrefix + err.Error()}, nil
		}
		return out, nil
	}
}

func runShape(ctx context.Context, s Shape) (string, error) {
	switch s.Name {
	case "react_tools", "model_failure", "streaming":
		return runReact(ctx, s)
	case "graph_fanout":
		return runGraph(ctx, s)
	case "supervisor":
		return runSupervisor(ctx, s)
	case "adk_failure":
		return runADKAgent(ctx, s)
	}
	return "", fmt.Errorf("unknown shape %q", s.Name)
}

func runReact(ctx context.Context, s Shape) (string, error) {
	conf := &react.AgentConfig{
		ToolCallingModel: newScriptedModel(s.Root, s.Models[s.Root]),
		ToolsConfig:      compose.ToolsNodeConfig{Tools: toolsOf(s, s.Root)},
		GraphName:        s.Root,
	}
	if s.Name == "react_tools" {
		conf.ToolsConfig.ToolCallMiddlewares = []compose.ToolMiddleware{{Invokable: errorsAsResults}}
	}
	agent, err := react.NewAgent(ctx, conf)
	if err != nil {
		return "", err
	}
	input := []*schema.Message{schema.UserMessage(s.Question)}
	if !s.Stream {
		msg, err := agent.Generate(ctx, input)
		if err != nil {
			return "", err
		}
		return msg.Content, nil
	}
	stream, err := agent.Stream(ctx, input)
	if err != nil {
		return "", err
	}
	defer stream.Close()
	var text strings.Builder
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return text.String(), nil
		}
		if err != nil {
			return text.String(), err
		}
		text.WriteString(chunk.Content)
	}
}

func runGraph(ctx context.Context, s Shape) (string, error) {
	g := compose.NewGraph[[]*schema.Message, *schema.Message]()
	lookup, err := compose.NewToolNode(ctx, &compose.ToolsNodeConfig{Tools: toolsOf(s, "lookup")})
	if err != nil {
		return "", err
	}
	steps := []error{
		g.AddChatModelNode("classify", newScriptedModel("classify", s.Models["classify"]),
			compose.WithNodeName("classify")),
		g.AddLambdaNode("prepare", compose.InvokableLambda(
			func(_ context.Context, _ *schema.Message) (map[string]any, error) {
				return map[string]any{
					"messages": []*schema.Message{
						schema.SystemMessage("Draft a short itinerary."),
						schema.UserMessage(s.Question),
					},
					"call": schema.AssistantMessage("", []schema.ToolCall{{
						ID:       "call_weather_rome",
						Type:     "function",
						Function: schema.FunctionCall{Name: "get_weather", Arguments: `{"city":"Rome"}`},
					}}),
				}, nil
			}), compose.WithNodeName("prepare")),
		g.AddLambdaNode("smalltalk", compose.InvokableLambda(
			func(_ context.Context, m *schema.Message) (*schema.Message, error) {
				return schema.AssistantMessage("Happy to chat!", nil), nil
			}), compose.WithNodeName("smalltalk")),
		g.AddChatModelNode("draft_itinerary",
			newScriptedModel("draft_itinerary", s.Models["draft_itinerary"]),
			compose.WithNodeName("draft_itinerary"),
			compose.WithInputKey("messages"), compose.WithOutputKey("itinerary")),
		g.AddToolsNode("lookup", lookup, compose.WithNodeName("lookup"),
			compose.WithInputKey("call"), compose.WithOutputKey("weather")),
		g.AddLambdaNode("summarize", compose.InvokableLambda(
			func(_ context.Context, in map[string]any) (*schema.Message, error) {
				itinerary, _ := in["itinerary"].(*schema.Message)
				weather, _ := in["weather"].([]*schema.Message)
				if itinerary == nil || len(weather) != 1 {
					return nil, fmt.Errorf("summarize: unexpected input %v", in)
				}
				return schema.AssistantMessage(fanoutSummary(itinerary.Content, weather[0].Content), nil), nil
			}), compose.WithNodeName("summarize")),
		g.AddEdge(compose.START, "classify"),
		g.AddBranch("classify", compose.NewGraphBranch(
			func(_ context.Context, m *schema.Message) (string, error) {
				if m.Content == "travel" {
					return "prepare", nil
				}
				return "smalltalk", nil
			}, map[string]bool{"prepare": true, "smalltalk": true})),
		g.AddEdge("prepare", "draft_itinerary"),
		g.AddEdge("prepare", "lookup"),
		g.AddEdge("draft_itinerary", "summarize"),
		g.AddEdge("lookup", "summarize"),
		g.AddEdge("summarize", compose.END),
		g.AddEdge("smalltalk", compose.END),
	}
	if err := errors.Join(steps...); err != nil {
		return "", err
	}
	runnable, err := g.Compile(ctx, compose.WithGraphName(s.Root))
	if err != nil {
		return "", err
	}
	msg, err := runnable.Invoke(ctx, []*schema.Message{schema.UserMessage(s.Question)})
	if err != nil {
		return "", err
	}
	return msg.Content, nil
}

func newADKAgent(ctx context.Context, s Shape, name, description string) (adk.Agent, error) {
	conf := &adk.ChatModelAgentConfig{
		Name:        name,
		Description: description,
		Instruction: "You are " + name + ".",
		Model:       newScriptedModel(name, s.Models[name]),
	}
	if tools := toolsOf(s, name); len(tools) > 0 {
		conf.ToolsConfig = adk.ToolsConfig{ToolsNodeConfig: compose.ToolsNodeConfig{Tools: tools}}
	}
	return adk.NewChatModelAgent(ctx, conf)
}

func runADKAgent(ctx context.Context, s Shape) (string, error) {
	agent, err := newADKAgent(ctx, s, s.Root, "plans trips")
	if err != nil {
		return "", err
	}
	return drain(s, adk.NewRunner(ctx, adk.RunnerConfig{Agent: agent}).Query(ctx, s.Question))
}

func runSupervisor(ctx context.Context, s Shape) (string, error) {
	newAgent := func(name, description string) (adk.Agent, error) {
		return newADKAgent(ctx, s, name, description)
	}
	boss, err := newAgent(s.Root, "routes each question to the right agent")
	if err != nil {
		return "", err
	}
	weather, err := newAgent("weather_agent", "answers weather questions")
	if err != nil {
		return "", err
	}
	math, err := newAgent("math_agent", "does arithmetic")
	if err != nil {
		return "", err
	}
	team, err := supervisor.New(ctx, &supervisor.Config{Supervisor: boss, SubAgents: []adk.Agent{weather, math}})
	if err != nil {
		return "", err
	}
	return drain(s, adk.NewRunner(ctx, adk.RunnerConfig{Agent: team}).Query(ctx, s.Question))
}

// drain reads a run's events to the end: the root agent's last answer, or the first error.
func drain(s Shape, events *adk.AsyncIterator[*adk.AgentEvent]) (string, error) {
	answer := ""
	for {
		event, ok := events.Next()
		if !ok {
			return answer, nil
		}
		if event.Err != nil {
			return answer, event.Err
		}
		if event.AgentName == s.Root && event.Output != nil && event.Output.MessageOutput != nil {
			msg, err := event.Output.MessageOutput.GetMessage()
			if err != nil {
				return answer, err
			}
			if msg.Role == schema.Assistant && len(msg.ToolCalls) == 0 {
				answer = msg.Content
			}
		}
	}
}
