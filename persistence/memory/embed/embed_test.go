package embed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func norm(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}

func TestLocalVectors(t *testing.T) {
	l := Local{}
	if l.Dim() != DefaultLocalDim || (Local{Dimensions: 64}).Dim() != 64 {
		t.Fatal("Dim defaults wrong")
	}
	v := l.Vector("Pebble syncs the WAL before it acknowledges a write.")
	if len(v) != DefaultLocalDim || math.Abs(norm(v)-1) > 1e-5 {
		t.Fatalf("len %d norm %v", len(v), norm(v))
	}
	small := Local{Dimensions: 100}.Vector("short text")
	if len(small) != 100 || math.Abs(norm(small)-1) > 1e-5 {
		t.Fatalf("100-dim: len %d norm %v", len(small), norm(small))
	}
	for _, empty := range []string{"", "   ", "!?-_/"} {
		if n := norm(l.Vector(empty)); n != 0 {
			t.Fatalf("Vector(%q) has norm %v, want zero vector", empty, n)
		}
	}
	if n := norm(l.Vector("ab")); math.Abs(n-1) > 1e-5 {
		t.Fatalf("two-letter text has norm %v", n)
	}
}

func TestLocalIsDeterministicAndNormalisesText(t *testing.T) {
	l := Local{}
	a := l.Vector("Hello, World! tmux-window")
	for _, same := range []string{"hello world tmux window", "  HELLO...world\ttmux   window  "} {
		if c := Cosine(a, l.Vector(same)); c < 1-1e-6 {
			t.Fatalf("cosine with %q = %v, want 1", same, c)
		}
	}
	// Fixed values: a change of hashing or weighting must rename the embedder.
	v := l.Vector("thatch")
	var nz []string
	for i, x := range v {
		if x != 0 {
			nz = append(nz, fmt.Sprintf("%d:%.4f", i, x))
		}
	}
	got := strings.Join(nz, " ")
	if got != localGolden {
		t.Fatalf("Local vector of \"thatch\" changed; bump Local.Name()\ngot  %s\nwant %s", got, localGolden)
	}
}

const localGolden = "37:-0.2582 56:0.2582 109:-0.2582 118:-0.2582 129:0.2582 154:-0.2582 198:-0.2582 215:0.2582 262:0.2582 277:-0.2582 344:-0.2582 355:0.2582 361:0.2582 469:0.2582 477:-0.2582"

func TestLocalSimilarityOrdersTexts(t *testing.T) {
	l := Local{}
	base := l.Vector("The journal appends events with a synced pebble batch before effects run")
	near := l.Vector("The journal appends events in a synced pebble batch before any effect runs")
	topic := l.Vector("pebble batch sync")
	far := l.Vector("Telegram forum topics map to tmux windows")
	cn, ct, cf := Cosine(base, near), Cosine(base, topic), Cosine(base, far)
	if !(cn > 0.7 && cn > ct && ct > cf && cf < 0.3) {
		t.Fatalf("near %.3f topic %.3f far %.3f", cn, ct, cf)
	}
}

func TestLocalEmbedHonoursContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := (Local{}).Embed(ctx, []string{"a"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	vs, err := (Local{}).Embed(context.Background(), []string{"a b c", "d e f"})
	if err != nil || len(vs) != 2 || Cosine(vs[0], (Local{}).Vector("a b c")) < 1-1e-6 {
		t.Fatalf("Embed = %v, %v", len(vs), err)
	}
}

func TestCosineAndNormalize(t *testing.T) {
	if Cosine([]float32{1, 0}, []float32{1}) != 0 || Cosine([]float32{0, 0}, []float32{1, 0}) != 0 {
		t.Fatal("Cosine of mismatched or zero vectors must be 0")
	}
	v := []float32{3, 4}
	if !Normalize(v) || v[0] != 0.6 || v[1] != 0.8 {
		t.Fatalf("Normalize = %v", v)
	}
	if Normalize([]float32{0, 0}) {
		t.Fatal("Normalize of zero vector reported success")
	}
}

// fakeOpenAI is an OpenAI-compatible embeddings server on loopback. Its
// vectors are deterministic: element j of the vector of text s is
// len(s)+j, and the data comes back in reverse order to exercise index
// handling.
type fakeOpenAI struct {
	*httptest.Server
	mu       sync.Mutex
	requests []openAIRequest
	auth     []string
	queries  []string
	dim      int
	status   int    // non-200 answers with this status
	body     string // replaces the reply when set
	block    chan struct{}
}

func newFakeOpenAI(t *testing.T, dim int) *fakeOpenAI {
	f := &fakeOpenAI{dim: dim}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeOpenAI) serve(w http.ResponseWriter, r *http.Request) {
	if f.block != nil {
		select {
		case <-f.block:
		case <-r.Context().Done():
			return
		}
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/embeddings" {
		http.Error(w, `{"error":{"message":"no such route"}}`, http.StatusNotFound)
		return
	}
	raw, _ := io.ReadAll(r.Body)
	var req openAIRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.requests = append(f.requests, req)
	f.auth = append(f.auth, r.Header.Get("Authorization"))
	f.queries = append(f.queries, r.URL.RawQuery)
	status, body := f.status, f.body
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if status != 0 {
		w.WriteHeader(status)
		io.WriteString(w, body)
		return
	}
	if body != "" {
		io.WriteString(w, body)
		return
	}
	type item struct {
		Object    string    `json:"object"`
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	}
	var data []item
	for i := len(req.Input) - 1; i >= 0; i-- {
		v := make([]float32, f.dim)
		for j := range v {
			v[j] = float32(len(req.Input[i]) + j)
		}
		data = append(data, item{Object: "embedding", Index: i, Embedding: v})
	}
	json.NewEncoder(w).Encode(map[string]any{"object": "list", "model": req.Model, "data": data})
}

func testClient(t *testing.T) *http.Client {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

func TestOpenAIEmbed(t *testing.T) {
	f := newFakeOpenAI(t, 4)
	o := OpenAI{URL: f.URL, Model: "nomic-embed-text", APIKey: "sk-test", Dimensions: 4, BatchSize: 2, Client: testClient(t)}
	if o.Name() != "openai:nomic-embed-text" || o.Dim() != 4 {
		t.Fatalf("Name %q Dim %d", o.Name(), o.Dim())
	}
	texts := []string{"a", "bb", "ccc", "dddd", "eeeee"}
	vs, err := o.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vs {
		if len(v) != 4 || v[0] != float32(len(texts[i])) || v[3] != float32(len(texts[i])+3) {
			t.Fatalf("vector %d = %v", i, v)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.requests) != 3 || len(f.requests[0].Input) != 2 || len(f.requests[2].Input) != 1 {
		t.Fatalf("batches = %+v", f.requests)
	}
	if f.requests[0].Model != "nomic-embed-text" || f.requests[0].EncodingFormat != "float" || f.auth[0] != "Bearer sk-test" {
		t.Fatalf("request %+v auth %q", f.requests[0], f.auth[0])
	}
}

func TestOpenAIEndpoint(t *testing.T) {
	tests := map[string]string{
		"":                         "https://api.openai.com/v1/embeddings",
		"http://127.0.0.1:11434":   "http://127.0.0.1:11434/v1/embeddings",
		"http://127.0.0.1:11434/":  "http://127.0.0.1:11434/v1/embeddings",
		"http://127.0.0.1:8080/v1": "http://127.0.0.1:8080/v1/embeddings",
		"http://h/openai/deployments/x/embeddings": "http://h/openai/deployments/x/embeddings",
		// A query stays the query, wherever the path is completed.
		"http://127.0.0.1:8080/v1?api-key=K":                      "http://127.0.0.1:8080/v1/embeddings?api-key=K",
		"http://127.0.0.1:8080?api-key=K":                         "http://127.0.0.1:8080/v1/embeddings?api-key=K",
		"http://127.0.0.1:8080/v1/?api-key=K&x=%2F":               "http://127.0.0.1:8080/v1/embeddings?api-key=K&x=%2F",
		"https://h/openai/deployments/x/embeddings?api-version=1": "https://h/openai/deployments/x/embeddings?api-version=1",
		"http://127.0.0.1:8080/v1#frag":                           "http://127.0.0.1:8080/v1/embeddings",
	}
	for in, want := range tests {
		if got := (OpenAI{URL: in}).Endpoint(); got != want {
			t.Errorf("Endpoint(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestOpenAIEmbedKeepsTheQuery posts through a base URL with a query, as a
// proxy that takes its key in the query needs.
func TestOpenAIEmbedKeepsTheQuery(t *testing.T) {
	f := newFakeOpenAI(t, 2)
	o := OpenAI{URL: f.URL + "/v1?api-key=K", Dimensions: 2, Client: testClient(t)}
	if _, err := o.Embed(context.Background(), []string{"a"}); err != nil {
		t.Fatalf("embed through %s: %v", o.Endpoint(), err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.queries) != 1 || f.queries[0] != "api-key=K" {
		t.Fatalf("the server got queries %q, want api-key=K", f.queries)
	}
}

func TestOpenAIErrors(t *testing.T) {
	ctx := context.Background()
	t.Run("error status", func(t *testing.T) {
		f := newFakeOpenAI(t, 4)
		f.status, f.body = http.StatusUnauthorized, `{"error":{"message":"Incorrect API key provided"}}`
		_, err := OpenAI{URL: f.URL, APIKey: "sk-secret", Dimensions: 4, Client: testClient(t)}.Embed(ctx, []string{"x"})
		if !errors.Is(err, ErrRemote) || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "Incorrect API key") {
			t.Fatalf("err = %v", err)
		}
		if strings.Contains(err.Error(), "sk-secret") {
			t.Fatalf("error leaks the key: %v", err)
		}
	})
	t.Run("wrong dimension", func(t *testing.T) {
		f := newFakeOpenAI(t, 3)
		_, err := OpenAI{URL: f.URL, Dimensions: 4, Client: testClient(t)}.Embed(ctx, []string{"x"})
		if !errors.Is(err, ErrBadVector) || !strings.Contains(err.Error(), "3-dim") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("too few vectors", func(t *testing.T) {
		f := newFakeOpenAI(t, 2)
		f.body = `{"data":[{"index":0,"embedding":[1,2]}]}`
		_, err := OpenAI{URL: f.URL, Dimensions: 2, Client: testClient(t)}.Embed(ctx, []string{"x", "y"})
		if !errors.Is(err, ErrRemote) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("repeated index", func(t *testing.T) {
		f := newFakeOpenAI(t, 2)
		f.body = `{"data":[{"index":0,"embedding":[1,2]},{"index":0,"embedding":[1,2]}]}`
		_, err := OpenAI{URL: f.URL, Dimensions: 2, Client: testClient(t)}.Embed(ctx, []string{"x", "y"})
		if !errors.Is(err, ErrRemote) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("not json", func(t *testing.T) {
		f := newFakeOpenAI(t, 2)
		f.body = `<html>proxy error</html>`
		_, err := OpenAI{URL: f.URL, Dimensions: 2, Client: testClient(t)}.Embed(ctx, []string{"x"})
		if !errors.Is(err, ErrRemote) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("credentials in URL stay out of errors", func(t *testing.T) {
		f := newFakeOpenAI(t, 2)
		f.status, f.body = http.StatusInternalServerError, "boom"
		u := strings.Replace(f.URL, "http://", "http://user:hunter2@", 1)
		_, err := OpenAI{URL: u, Dimensions: 2, Client: testClient(t)}.Embed(ctx, []string{"x"})
		if err == nil || strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), "boom") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		f := newFakeOpenAI(t, 2)
		f.block = make(chan struct{})
		defer close(f.block)
		_, err := OpenAI{URL: f.URL, Dimensions: 2, Timeout: 50 * time.Millisecond, Client: testClient(t)}.Embed(ctx, []string{"x"})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("connection refused", func(t *testing.T) {
		f := newFakeOpenAI(t, 2)
		u := f.URL
		f.Close()
		if _, err := (OpenAI{URL: u, Dimensions: 2, Client: testClient(t)}).Embed(ctx, []string{"x"}); err == nil {
			t.Fatal("no error from a closed server")
		}
	})
}
