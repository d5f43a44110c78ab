package main

import "time"

// The scripts: every shape's question, each scripted model's turns (content, tool calls, token
// usage, errors) and each tool call's outcome. The runs (shapes.go) play them; the ground truth
// (truth.go) is written from them, never from what a tracer or trajhub made of a run.

const (
	modelName = "scripted-chat"
	// modelType is the model implementation's type (GetType), which Eino reports as the run
	// info's type: the tracers give it as the model provider.
	modelType = "Scripted"
)

// Simulated latencies. A scripted call that answers at once lasts microseconds, and trajhub's
// steps are timed in whole milliseconds: without these every step of a run would seem to start
// in the same millisecond, so order and parallelism could not be read from the times.
const (
	modelLatency = 5 * time.Millisecond // before a model answers (or its first chunk)
	chunkGap     = 2 * time.Millisecond // between streamed chunks
	toolLatency  = 3 * time.Millisecond // before a tool answers
)

type Usage struct {
	Input, Output, CacheRead, Reasoning int
}

type Call struct {
	ID, Name, Arguments string
}

type Turn struct {
	Content string
	// StreamPieces splits Content into chunks when the model streams (joined, they are Content).
	StreamPieces []string
	ToolCalls    []Call
	Usage        Usage
	// Error makes the call fail with this message instead of answering.
	Error string
}

// Outcome is what a tool call returns: Result, or an error with the message Error.
type Outcome struct {
	Result, Error string
}

// Activation is one run of an agent in a multi-agent shape: it plays the next Turns turns of
// its agent's script.
type Activation struct {
	Agent string
	Turns int
}

type Shape struct {
	Name        string
	Description string
	Entry       string // the Eino API the run goes through
	Question    string
	Root        string // the graph's or the root agent's name
	Stream      bool
	// Models: agent (or graph node) name -> its model's turns.
	Models map[string][]Turn
	// Tools: agent (or graph node) name -> the tools it has.
	Tools map[string][]string
	// Outcomes: tool call id -> what the call returns.
	Outcomes map[string]Outcome
	// Activations, for the supervisor shape: which agent ran when.
	Activations []Activation
}

var toolDescriptions = map[string]string{
	"get_weather":    "Get the current weather in a city.",
	"get_time":       "Get the local time in a city.",
	"book_flight":    "Book a flight to a city.",
	"add":            "Add two integers.",
	"search_flights": "Search flights to a city.",
}

// toolFailurePrefix is how the react shape's tool middleware hands a failed call's error back to
// the model as the call's result, so the run goes on (shapes.go, errorsAsResults).
const toolFailurePrefix = "tool call failed: "

// fanoutSummary is what the graph shape's summarize node makes of the itinerary and the weather.
func fanoutSummary(itinerary, weather string) string {
	return itinerary + " Weather: " + weather
}

var Shapes = []Shape{
	{
		Name: "react_tools",
		Description: "flow/agent/react agent: the model asks for get_weather and get_time in one " +
			"turn (the ToolsNode runs them in parallel), then for book_flight, which fails; a " +
			"tool middleware hands the error back to the model as the call's result, and the " +
			"model answers",
		Entry:    "flow/agent/react Agent.Generate",
		Question: "What's the weather and the time in Paris? And book me a flight there.",
		Root:     "ReActAgent",
		Models: map[string][]Turn{"ReActAgent": {
			{
				ToolCalls: []Call{
					{"call_weather_paris", "get_weather", `{"city":"Paris"}`},
					{"call_time_paris", "get_time", `{"city":"Paris"}`},
				},
				Usage: Usage{Input: 120, Output: 30, CacheRead: 64, Reasoning: 12},
			},
			{
				ToolCalls: []Call{{"call_book_paris", "book_flight", `{"city":"Paris"}`}},
				Usage:     Usage{Input: 180, Output: 18, CacheRead: 96, Reasoning: 4},
			},
			{
				Content: "Paris is sunny at 22C and it is 14:05 there. I could not book the " +
					"flight: the booking service is unavailable.",
				Usage: Usage{Input: 230, Output: 25},
			},
		}},
		Tools: map[string][]string{"ReActAgent": {"get_weather", "get_time", "book_flight"}},
		Outcomes: map[string]Outcome{
			"call_weather_paris": {Result: "Sunny, 22C in Paris"},
			"call_time_paris":    {Result: "14:05 in Paris"},
			"call_book_paris":    {Error: "booking service unavailable (simulated)"},
		},
	},
	{
		Name: "model_failure",
		Description: "flow/agent/react agent named weather_agent: get_weather succeeds, then the " +
			"model's second call fails, so the run fails",
		Entry:    "flow/agent/react Agent.Generate",
		Question: "What's the weather in Tokyo?",
		Root:     "weather_agent",
		Models: map[string][]Turn{"weather_agent": {
			{
				ToolCalls: []Call{{"call_weather_tokyo", "get_weather", `{"city":"Tokyo"}`}},
				Usage:     Usage{Input: 90, Output: 15},
			},
			{Error: "upstream model returned HTTP 500 (simulated)"},
		}},
		Tools:    map[string][]string{"weather_agent": {"get_weather"}},
		Outcomes: map[string]Outcome{"call_weather_tokyo": {Result: "Rainy, 18C in Tokyo"}},
	},
	{
		Name: "graph_fanout",
		Description: "compose.Graph trip_planner: the classify model answers \"travel\"; a branch " +
			"picks the prepare node (not smalltalk); prepare fans out to the draft_itinerary " +
			"model and the lookup ToolsNode (get_weather), which run in parallel; summarize " +
			"joins their outputs",
		Entry:    "compose.Graph Runnable.Invoke",
		Question: "Plan a two-day trip to Rome.",
		Root:     "trip_planner",
		Models: map[string][]Turn{
			"classify": {{Content: "travel", Usage: Usage{Input: 40, Output: 2}}},
			"draft_itinerary": {{
				Content: "Day 1: Colosseum and Forum. Day 2: Vatican Museums.",
				Usage:   Usage{Input: 150, Output: 40, CacheRead: 32},
			}},
		},
		Tools: map[string][]string{"lookup": {"get_weather"}},
		// prepare asks for this call itself (shapes.go); no model turn names it
		Outcomes: map[string]Outcome{"call_weather_rome": {Result: "Clear, 25C in Rome"}},
	},
	{
		Name: "streaming",
		Description: "flow/agent/react agent stream_agent run with Stream: both model calls " +
			"stream (the tool call in the first chunk, the answer in three pieces, the usage " +
			"in the last chunk)",
		Entry:    "flow/agent/react Agent.Stream",
		Question: "What's the weather in Oslo?",
		Root:     "stream_agent",
		Stream:   true,
		Models: map[string][]Turn{"stream_agent": {
			{
				ToolCalls: []Call{{"call_weather_oslo", "get_weather", `{"city":"Oslo"}`}},
				Usage:     Usage{Input: 70, Output: 12},
			},
			{
				Content:      "Oslo has snow and -3C.",
				StreamPieces: []string{"Oslo ", "has snow ", "and -3C."},
				Usage:        Usage{Input: 110, Output: 9},
			},
		}},
		Tools:    map[string][]string{"stream_agent": {"get_weather"}},
		Outcomes: map[string]Outcome{"call_weather_oslo": {Result: "Snow, -3C in Oslo"}},
	},
	{
		Name: "supervisor",
		Description: "ADK supervisor (adk/prebuilt/supervisor) over the ChatModelAgents " +
			"weather_agent (get_weather) and math_agent (add): the supervisor transfers to " +
			"weather_agent, which calls its tool and answers and is transferred back; then to " +
			"math_agent likewise; then the supervisor answers",
		Entry:    "adk Runner.Query",
		Question: "What's the weather in Berlin, and what is 2+3?",
		Root:     "supervisor",
		Models: map[string][]Turn{
			"supervisor": {
				{
					ToolCalls: []Call{{"call_to_weather", "transfer_to_agent", `{"agent_name":"weather_agent"}`}},
					Usage:     Usage{Input: 60, Output: 10},
				},
				{
					ToolCalls: []Call{{"call_to_math", "transfer_to_agent", `{"agent_name":"math_agent"}`}},
					Usage:     Usage{Input: 120, Output: 10},
				},
				{
					Content: "Berlin is cloudy at 15C, and 2+3 = 5.",
					Usage:   Usage{Input: 150, Output: 16},
				},
			},
			"weather_agent": {
				{
					ToolCalls: []Call{{"call_weather_berlin", "get_weather", `{"city":"Berlin"}`}},
					Usage:     Usage{Input: 80, Output: 14},
				},
				{Content: "Berlin is cloudy, 15C.", Usage: Usage{Input: 100, Output: 8}},
			},
			"math_agent": {
				{
					ToolCalls: []Call{{"call_add", "add", `{"a":2,"b":3}`}},
					Usage:     Usage{Input: 70, Output: 12},
				},
				{Content: "2+3 = 5.", Usage: Usage{Input: 90, Output: 6}},
			},
		},
		Tools: map[string][]string{
			"weather_agent": {"get_weather"},
			"math_agent":    {"add"},
		},
		Outcomes: map[string]Outcome{
			"call_weather_berlin": {Result: "Cloudy, 15C in Berlin"},
			"call_add":            {Result: "5"},
		},
		Activations: []Activation{
			{"supervisor", 1}, {"weather_agent", 2}, {"supervisor", 1}, {"math_agent", 2},
			{"supervisor", 1},
		},
	},
	{
		Name: "adk_failure",
		Description: "ADK ChatModelAgent planner run by a Runner: the model asks for " +
			"search_flights, which fails; the ADK ToolsNode does not catch it, so the agent and " +
			"the run fail after one model call",
		Entry:    "adk Runner.Query",
		Question: "Find me a flight to Lisbon.",
		Root:     "planner",
		Models: map[string][]Turn{"planner": {
			{
				ToolCalls: []Call{{"call_search_lisbon", "search_flights", `{"city":"Lisbon"}`}},
				Usage:     Usage{Input: 75, Output: 11, CacheRead: 16, Reasoning: 3},
			},
		}},
		Tools:    map[string][]string{"planner": {"search_flights"}},
		Outcomes: map[string]Outcome{"call_search_lisbon": {Error: "flight search timed out (simulated)"}},
	},
}

func shapeByName(name string) (Shape, bool) {
	for _, s := range Shapes {
		if s.Name == name {
			return s, true
		}
	}
	return Shape{}, false
}
