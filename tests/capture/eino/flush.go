package main

import (
	"context"
	"fmt"
	"reflect"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/cloudwego/eino-ext/libs/acl/opentelemetry"
	"github.com/cloudwego/eino/callbacks"
	"github.com/cloudwego/eino/schema"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Both callbacks finish some spans after the run has returned to its caller: a streamed
// output's span ends in a goroutine once the handler has read its copy of the stream, and an
// ADK agent's span once the handler has drained the agent's events. A server never notices; a
// short-lived program that flushes as soon as its run returns loses those spans (the root
// among them). So before flushing, the program waits until every span it started has ended:
// nothing here changes what the callbacks send.

// startCounter is a callback handler that only counts the components Eino started.
type startCounter struct{ n atomic.Int64 }

func (c *startCounter) handler() callbacks.Handler {
	return callbacks.NewHandlerBuilder().
		OnStartFn(func(ctx context.Context, _ *callbacks.RunInfo, _ callbacks.CallbackInput) context.Context {
			c.n.Add(1)
			return ctx
		}).
		OnStartWithStreamInputFn(func(ctx context.Context, _ *callbacks.RunInfo, in *schema.StreamReader[callbacks.CallbackInput]) context.Context {
			c.n.Add(1)
			in.Close()
			return ctx
		}).
		Build()
}

// spanCounter is an OTel span processor that counts the spans started and ended.
type spanCounter struct{ started, ended atomic.Int64 }

func (c *spanCounter) OnStart(context.Context, sdktrace.ReadWriteSpan) { c.started.Add(1) }
func (c *spanCounter) OnEnd(sdktrace.ReadOnlySpan)                     { c.ended.Add(1) }
func (c *spanCounter) Shutdown(context.Context) error                  { return nil }
func (c *spanCounter) ForceFlush(context.Context) error                { return nil }

// countApmplusSpans registers a spanCounter with the tracer provider apmplus made for itself.
// NewApmplusHandler keeps it in an unexported field (callbacks/apmplus apmplus.go
// apmplusHandler.otelProvider) and takes no provider of ours, so it is read by reflection.
func countApmplusSpans(handler callbacks.Handler) (*spanCounter, error) {
	v := reflect.ValueOf(handler)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("apmplus handler is a %T", handler)
	}
	field := v.Elem().FieldByName("otelProvider")
	if !field.IsValid() || field.Type() != reflect.TypeOf((*opentelemetry.OtelProvider)(nil)) {
		return nil, fmt.Errorf("apmplus handler %T has no otelProvider field", handler)
	}
	provider := (*opentelemetry.OtelProvider)(unsafe.Pointer(field.Pointer()))
	if provider == nil || provider.TracerProvider == nil {
		return nil, fmt.Errorf("apmplus handler has no tracer provider")
	}
	counter := &spanCounter{}
	provider.TracerProvider.RegisterSpanProcessor(counter)
	return counter, nil
}

// waitFor polls done until it holds or the deadline passes.
func waitFor(ctx context.Context, what func() string, done func() bool) error {
	for !done() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("gave up waiting for the spans to end: %s", what())
		case <-time.After(5 * time.Millisecond):
		}
	}
	return nil
}
