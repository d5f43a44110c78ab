// Command einocapture runs one scripted Eino shape under one tracing callback of eino-ext, so
// the exact requests the callback sends can be captured (tests/capture/eino_capture.py) or sent
// to a live trajhub (tests/test_eino_real.py). No network beyond the given endpoints: the chat
// model and the tools are scripted (script.go).
//
//	einocapture -shape react_tools -path cozeloop -project p   # COZELOOP_API_BASE_URL=http://...
//	einocapture -shape react_tools -path apmplus -otlp 127.0.0.1:4317 -project p
//	einocapture -truth DIR                                      # every shape's ground_truth.json
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/cloudwego/eino-ext/callbacks/apmplus"
	ccb "github.com/cloudwego/eino-ext/callbacks/cozeloop"
	"github.com/cloudwego/eino/callbacks"
	"github.com/coze-dev/cozeloop-go"
)

func main() {
	shapeName := flag.String("shape", "", "the shape to run (script.go)")
	path := flag.String("path", "", "the tracing callback: cozeloop or apmplus")
	otlp := flag.String("otlp", "127.0.0.1:4317", "apmplus: the OTLP gRPC endpoint (host:port, insecure)")
	project := flag.String("project", "", "the trajhub project: the cozeloop workspace id, or apmplus's resource attribute trajhub.project")
	truthDir := flag.String("truth", "", "write <dir>/<shape>/ground_truth.json for every shape and exit")
	flag.Parse()

	if *truthDir != "" {
		for _, s := range Shapes {
			dir := filepath.Join(*truthDir, s.Name)
			must(os.MkdirAll(dir, 0o755))
			must(os.WriteFile(filepath.Join(dir, "ground_truth.json"), groundTruth(s).JSON(), 0o644))
		}
		return
	}
	s, ok := shapeByName(*shapeName)
	if !ok {
		fail("unknown -shape %q", *shapeName)
	}
	ctx := context.Background()
	starts := &startCounter{}
	var flush func(context.Context) error
	// allEnded says whether every span the callback started has ended (flush.go)
	var allEnded func() bool
	var counts func() string
	switch *path {
	case "cozeloop":
		// The base URL comes from COZELOOP_API_BASE_URL, as for any cozeloop-go user; the
		// workspace and the token are dummies (trajhub's loopback ingest needs no auth).
		workspace := *project
		if workspace == "" {
			workspace = "7000000000000000001"
		}
		var queued atomic.Int64
		client, err := cozeloop.NewClient(
			cozeloop.WithWorkspaceID(workspace),
			cozeloop.WithAPIToken("dummy-token"),
			// a span enters the export queue when it ends
			cozeloop.WithTraceFinishEventProcessor(func(_ context.Context, info *cozeloop.FinishEventInfo) {
				if cozeloop.SpanFinishEvent(info.EventType) == cozeloop.SpanFinishEventSpanQueueEntryRate && !info.IsEventFail {
					queued.Add(int64(info.ItemNum))
				}
			}),
		)
		must(err)
		callbacks.AppendGlobalHandlers(ccb.NewLoopHandler(client), starts.handler())
		allEnded = func() bool { return queued.Load() >= starts.n.Load() }
		counts = func() string {
			return fmt.Sprintf("%d components started, %d spans queued", starts.n.Load(), queued.Load())
		}
		flush = func(ctx context.Context) error { client.Close(ctx); return nil }
	case "apmplus":
		if *project != "" {
			// apmplus builds its resource WithFromEnv (libs/acl/opentelemetry)
			must(os.Setenv("OTEL_RESOURCE_ATTRIBUTES", "trajhub.project="+*project))
		}
		handler, shutdown, err := apmplus.NewApmplusHandler(&apmplus.Config{
			Host:        *otlp,
			AppKey:      "dummy-app-key",
			ServiceName: "eino-capture",
		})
		must(err)
		spans, err := countApmplusSpans(handler)
		must(err)
		callbacks.AppendGlobalHandlers(handler, starts.handler())
		allEnded = func() bool {
			return spans.started.Load() >= starts.n.Load() && spans.ended.Load() == spans.started.Load()
		}
		counts = func() string {
			return fmt.Sprintf("%d components started, %d spans started, %d ended",
				starts.n.Load(), spans.started.Load(), spans.ended.Load())
		}
		flush = shutdown
	default:
		fail("-path must be cozeloop or apmplus, not %q", *path)
	}

	answer, runErr := runShape(ctx, s)
	flushCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	must(waitFor(flushCtx, counts, allEnded))
	flushErr := flush(flushCtx)

	truth := groundTruth(s)
	result := map[string]any{"shape": s.Name, "path": *path, "answer": answer, "error": nil}
	if runErr != nil {
		result["error"] = runErr.Error()
	}
	if flushErr != nil {
		// apmplus also exports runtime metrics, which trajhub does not take: only traces matter
		result["flush_error"] = flushErr.Error()
	}
	out, _ := json.Marshal(result)
	fmt.Println(string(out))
	if !truth.errorMatches(runErr) {
		fail("run error %v is not the scripted one", runErr)
	}
	if runErr == nil && (truth.FinalAnswer == nil || *truth.FinalAnswer != answer) {
		fail("answer %q is not the scripted one", answer)
	}
}

func must(err error) {
	if err != nil {
		fail("%v", err)
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "einocapture: "+format+"\n", args...)
	os.Exit(1)
}
