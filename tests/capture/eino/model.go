package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cloudwego/eino/callbacks"
	"github.com/cloudwego/eino/components"
	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/schema"
)

// scriptedModel is a model.ToolCallingChatModel that plays the turns of one agent's script in
// order, with no network. It runs Eino's callbacks itself (IsCallbacksEnabled), as the
// eino-ext provider models do, so the tracing handlers see a model.CallbackInput/Output with
// its Config and TokenUsage rather than the bare messages Eino's fallback wrapper would give.
type scriptedModel struct {
	agent string
	tools []*schema.ToolInfo
	state *modelState
}

// modelState is shared by the copies WithTools makes: one agent, one sequence of turns.
type modelState struct {
	mu    sync.Mutex
	turns []Turn
	next  int
}

func newScriptedModel(agent string, turns []Turn) *scriptedModel {
	return &scriptedModel{agent: agent, state: &modelState{turns: turns}}
}

func (m *scriptedModel) WithTools(tools []*schema.ToolInfo) (model.ToolCallingChatModel, error) {
	return &scriptedModel{agent: m.agent, tools: tools, state: m.state}, nil
}

func (m *scriptedModel) GetType() string { return modelType }

func (m *scriptedModel) IsCallbacksEnabled() bool { return true }

func (m *scriptedModel) take() (Turn, error) {
	m.state.mu.Lock()
	defer m.state.mu.Unlock()
	if m.state.next >= len(m.state.turns) {
		return Turn{}, fmt.Errorf("script of %s has no turn %d", m.agent, m.state.next+1)
	}
	turn := m.state.turns[m.state.next]
	m.state.next++
	return turn, nil
}

func (m *scriptedModel) start(ctx context.Context, input []*schema.Message, opts []model.Option) context.Context {
	options := model.GetCommonOptions(&model.Options{Tools: m.tools, Model: ptr(modelName)}, opts...)
	ctx = callbacks.EnsureRunInfo(ctx, m.GetType(), components.ComponentOfChatModel)
	return callbacks.OnStart(ctx, &model.CallbackInput{
		Messages: input,
		Tools:    options.Tools,
		Config:   &model.Config{Model: modelName},
	})
}

// next starts the call's callbacks and plays the script's next turn, after the simulated
// latency; a scripted error is reported to the callbacks and returned.
func (m *scriptedModel) next(ctx context.Context, input []*schema.Message, opts []model.Option) (context.Context, Turn, error) {
	ctx = m.start(ctx, input, opts)
	turn, err := m.take()
	time.Sleep(modelLatency)
	if err == nil && turn.Error != "" {
		err = errors.New(turn.Error)
	}
	if err != nil {
		callbacks.OnError(ctx, err)
	}
	return ctx, turn, err
}

func (m *scriptedModel) Generate(ctx context.Context, input []*schema.Message, opts ...model.Option) (*schema.Message, error) {
	ctx, turn, err := m.next(ctx, input, opts)
	if err != nil {
		return nil, err
	}
	msg := turn.message()
	callbacks.OnEnd(ctx, &model.CallbackOutput{
		Message:    msg,
		Config:     &model.Config{Model: modelName},
		TokenUsage: turn.Usage.callback(),
	})
	return msg, nil
}

// Stream sends the turn as an OpenAI-style stream: the tool calls (if any) in the first chunk,
// the content in pieces, then a last empty chunk carrying the finish reason and the usage.
func (m *scriptedModel) Stream(ctx context.Context, input []*schema.Message, opts ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	ctx, turn, err := m.next(ctx, input, opts)
	if err != nil {
		return nil, err
	}
	chunks := turn.chunks()
	sr, sw := schema.Pipe[*model.CallbackOutput](len(chunks))
	go func() {
		defer sw.Close()
		for i, chunk := range chunks {
			if i > 0 {
				time.Sleep(chunkGap)
			}
			out := &model.CallbackOutput{Message: chunk, Config: &model.Config{Model: modelName}}
			if i == len(chunks)-1 {
				out.TokenUsage = turn.Usage.callback()
			}
			sw.Send(out, nil)
		}
	}()
	_, wrapped := callbacks.OnEndWithStreamOutput(ctx, sr)
	return schema.StreamReaderWithConvert(wrapped, func(o *model.CallbackOutput) (*schema.Message, error) {
		return o.Message, nil
	}), nil
}

func (t Turn) message() *schema.Message {
	msg := schema.AssistantMessage(t.Content, t.toolCalls())
	msg.ResponseMeta = &schema.ResponseMeta{FinishReason: t.finishReason(), Usage: t.Usage.message()}
	return msg
}

func (t Turn) finishReason() string {
	if len(t.ToolCalls) > 0 {
		return "tool_calls"
	}
	return "stop"
}

func (t Turn) toolCalls() []schema.ToolCall {
	var out []schema.ToolCall
	for i, c := range t.ToolCalls {
		index := i
		out = append(out, schema.ToolCall{
			Index:    &index,
			ID:       c.ID,
			Type:     "function",
			Function: schema.FunctionCall{Name: c.Name, Arguments: c.Arguments},
		})
	}
	return out
}

func (t Turn) chunks() []*schema.Message {
	var out []*schema.Message
	if calls := t.toolCalls(); len(calls) > 0 {
		out = append(out, &schema.Message{Role: schema.Assistant, ToolCalls: calls})
	}
	pieces := t.StreamPieces
	if len(pieces) == 0 && t.Content != "" {
		pieces = []string{t.Content}
	}
	for _, p := range pieces {
		out = append(out, &schema.Message{Role: schema.Assistant, Content: p})
	}
	out = append(out, &schema.Message{
		Role:         schema.Assistant,
		ResponseMeta: &schema.ResponseMeta{FinishReason: t.finishReason(), Usage: t.Usage.message()},
	})
	return out
}

// callback is the usage the model callback reports: the message's counts (message), in the
// callback's own types, whose details differ from the message's only in their JSON tags.
func (u Usage) callback() *model.TokenUsage {
	m := u.message()
	return &model.TokenUsage{
		PromptTokens:            m.PromptTokens,
		PromptTokenDetails:      model.PromptTokenDetails(m.PromptTokenDetails),
		CompletionTokens:        m.CompletionTokens,
		TotalTokens:             m.TotalTokens,
		CompletionTokensDetails: model.CompletionTokensDetails(m.CompletionTokensDetails),
	}
}

func (u Usage) message() *schema.TokenUsage {
	return &schema.TokenUsage{
		PromptTokens:            u.Input,
		PromptTokenDetails:      schema.PromptTokenDetails{CachedTokens: u.CacheRead},
		CompletionTokens:        u.Output,
		TotalTokens:             u.Input + u.Output,
		CompletionTokensDetails: schema.CompletionTokensDetails{ReasoningTokens: u.Reasoning},
	}
}

func ptr[T any](v T) *T { return &v }
