package main

import (
	"encoding/json"
	"strings"
)

// The ground truth of a shape, written from its script (script.go) and from how shapes.go wires
// the run, never from a trace. The format is described in tests/fixtures/eino-real/README.md.

type TruthError struct {
	Message string `json:"message"`
}

type TruthCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type TruthStep struct {
	Type string `json:"type"` // model | tool
	// model
	Model           string      `json:"model,omitempty"` // the scripted model: agent or graph node
	InputTokens     *int        `json:"input_tokens,omitempty"`
	OutputTokens    *int        `json:"output_tokens,omitempty"`
	CacheReadTokens *int        `json:"cache_read_tokens,omitempty"`
	ReasoningTokens *int        `json:"reasoning_tokens,omitempty"`
	Content         *string     `json:"content,omitempty"`
	ToolCalls       []TruthCall `json:"tool_calls,omitempty"`
	// tool
	Name       string  `json:"name,omitempty"`
	ToolCallID string  `json:"tool_call_id,omitempty"`
	Arguments  string  `json:"arguments,omitempty"`
	Output     *string `json:"output,omitempty"`
	HandoffTo  *string `json:"handoff_to,omitempty"`
	// both
	Error         *TruthError `json:"error"`
	ParallelGroup *int        `json:"parallel_group"`
}

type TruthActivation struct {
	Index int    `json:"index"`
	Agent string `json:"agent"`
	// TransferredFrom is the activation whose transfer_to_agent call started this one (ADK);
	// null for the first.
	TransferredFrom *int        `json:"transferred_from"`
	InputTokens     int         `json:"input_tokens"`
	OutputTokens    int         `json:"output_tokens"`
	Steps           []TruthStep `json:"steps"`
}

type TruthRoot struct {
	Name string `json:"name"`
	// IsTeam: the root is not an activation but the agent that runs them all as its direct
	// children (adk/prebuilt/supervisor wraps the supervisor in a container agent of the same
	// name, which the Runner runs; every transfer runs the next agent inside it). Otherwise the
	// root is the one activation.
	IsTeam          bool        `json:"is_team"`
	Error           *TruthError `json:"error"`
	InputTokens     int         `json:"input_tokens"`
	OutputTokens    int         `json:"output_tokens"`
	CacheReadTokens int         `json:"cache_read_tokens"`
	ReasoningTokens int         `json:"reasoning_tokens"`
	ModelCalls      int         `json:"model_calls"`
	ToolCalls       int         `json:"tool_calls"`
	FailedSteps     int         `json:"failed_steps"`
}

type Truth struct {
	FormatVersion int               `json:"format_version"`
	Shape         string            `json:"shape"`
	Description   string            `json:"description"`
	Entry         string            `json:"entry"`
	Stream        bool              `json:"stream"`
	UserRequest   string            `json:"user_request"`
	FinalAnswer   *string           `json:"final_answer"`
	Root          TruthRoot         `json:"root"`
	Activations   []TruthActivation `json:"activations"`
}

func modelStep(agent string, t Turn) TruthStep {
	step := TruthStep{Type: "model", Model: agent}
	if t.Error != "" {
		step.Error = &TruthError{Message: t.Error}
		return step
	}
	step.InputTokens, step.OutputTokens = ptr(t.Usage.Input), ptr(t.Usage.Output)
	step.CacheReadTokens, step.ReasoningTokens = ptr(t.Usage.CacheRead), ptr(t.Usage.Reasoning)
	step.Content = ptr(t.Content)
	for _, c := range t.ToolCalls {
		step.ToolCalls = append(step.ToolCalls, TruthCall(c))
	}
	return step
}

func toolStep(s Shape, c Call, group *int) TruthStep {
	step := TruthStep{Type: "tool", Name: c.Name, ToolCallID: c.ID, Arguments: c.Arguments,
		ParallelGroup: group}
	if c.Name == "transfer_to_agent" {
		var args struct {
			AgentName string `json:"agent_name"`
		}
		_ = json.Unmarshal([]byte(c.Arguments), &args)
		step.HandoffTo = ptr(args.AgentName)
		// the transfer tool is Eino's own (adk/chatmodel.go); its result is not scripted
		return step
	}
	outcome := s.Outcomes[c.ID]
	if outcome.Error != "" {
		step.Error = &TruthError{Message: outcome.Error}
	} else {
		step.Output = ptr(outcome.Result)
	}
	return step
}

// turnSteps: the model call, then the tool calls it asked for (several run in parallel).
func turnSteps(s Shape, agent string, t Turn, group *int) []TruthStep {
	steps := []TruthStep{modelStep(agent, t)}
	var g *int
	if len(t.ToolCalls) > 1 {
		*group++
		g = ptr(*group)
	}
	for _, c := range t.ToolCalls {
		steps = append(steps, toolStep(s, c, g))
	}
	return steps
}

func groundTruth(s Shape) Truth {
	truth := Truth{FormatVersion: 1, Shape: s.Name, Description: s.Description, Entry: s.Entry,
		Stream: s.Stream, UserRequest: s.Question, Root: TruthRoot{Name: s.Root}}
	group := 0
	switch s.Name {
	case "graph_fanout":
		// classify, then (after the branch and prepare) draft_itinerary and lookup in parallel
		steps := []TruthStep{modelStep("classify", s.Models["classify"][0])}
		group++
		draft := modelStep("draft_itinerary", s.Models["draft_itinerary"][0])
		draft.ParallelGroup = ptr(group)
		call := Call{"call_weather_rome", "get_weather", `{"city":"Rome"}`}
		steps = append(steps, draft, toolStep(s, call, ptr(group)))
		truth.Activations = []TruthActivation{{Agent: s.Root, Steps: steps}}
		truth.FinalAnswer = ptr(fanoutSummary(*draft.Content, s.Outcomes[call.ID].Result))
	case "supervisor":
		truth.Root.IsTeam = true
		next := map[string]int{}
		var from *int
		for i, a := range s.Activations {
			act := TruthActivation{Index: i, Agent: a.Agent}
			if a.Agent != s.Root {
				act.TransferredFrom = from
			} else if i > 0 {
				// the supervisor prebuilt transfers each sub-agent back when it is done
				act.TransferredFrom = ptr(i - 1)
			}
			for _, t := range s.Models[a.Agent][next[a.Agent] : next[a.Agent]+a.Turns] {
				act.Steps = append(act.Steps, turnSteps(s, a.Agent, t, &group)...)
			}
			next[a.Agent] += a.Turns
			from = ptr(i)
			truth.Activations = append(truth.Activations, act)
		}
	default:
		act := TruthActivation{Agent: s.Root}
		for _, t := range s.Models[s.Root] {
			act.Steps = append(act.Steps, turnSteps(s, s.Root, t, &group)...)
		}
		truth.Activations = []TruthActivation{act}
	}
	for i := range truth.Activations {
		act := &truth.Activations[i]
		for _, step := range act.Steps {
			if step.Error != nil {
				truth.Root.FailedSteps++
			}
			if step.Type == "tool" {
				truth.Root.ToolCalls++
				if step.Error != nil && s.Name == "adk_failure" {
					// an ADK agent's ToolsNode does not catch a tool's error (no middleware
					// here, unlike react_tools): it ends the agent's run
					truth.Root.Error = &TruthError{Message: step.Error.Message}
				}
				continue
			}
			truth.Root.ModelCalls++
			if step.Error != nil {
				// a model call that fails ends the run: the agent has no other way on
				truth.Root.Error = &TruthError{Message: step.Error.Message}
				continue
			}
			act.InputTokens += *step.InputTokens
			act.OutputTokens += *step.OutputTokens
			truth.Root.CacheReadTokens += *step.CacheReadTokens
			truth.Root.ReasoningTokens += *step.ReasoningTokens
			if step.Content != nil && *step.Content != "" && len(step.ToolCalls) == 0 &&
				act.Agent == s.Root && truth.FinalAnswer == nil && i == len(truth.Activations)-1 {
				truth.FinalAnswer = ptr(*step.Content)
			}
		}
		truth.Root.InputTokens += act.InputTokens
		truth.Root.OutputTokens += act.OutputTokens
	}
	return truth
}

func (t Truth) JSON() []byte {
	out, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		panic(err)
	}
	return append(out, '\n')
}

// errorMatches: the run's error is the one the script makes it fail with (or none).
func (t Truth) errorMatches(err error) bool {
	if t.Root.Error == nil {
		return err == nil
	}
	return err != nil && strings.Contains(err.Error(), t.Root.Error.Message)
}
