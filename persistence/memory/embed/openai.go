package embed

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Defaults of OpenAI.
const (
	DefaultOpenAIURL       = "https://api.openai.com"
	DefaultOpenAIModel     = "text-embedding-3-small"
	DefaultOpenAIDim       = 1536
	DefaultOpenAITimeout   = 30 * time.Second
	DefaultOpenAIBatchSize = 96
)

// ErrRemote is returned when an embeddings endpoint answers with an error
// status or a reply that does not fit the request.
var ErrRemote = errors.New("embed: embeddings endpoint failed")

// maxReplyBytes bounds how much of a reply is read: a 96-text batch of
// 3072-dim vectors is about 6 MB of JSON.
const maxReplyBytes = 64 << 20

// OpenAI calls an OpenAI-compatible /v1/embeddings endpoint. The zero value
// talks to api.openai.com with text-embedding-3-small; set APIKey.
type OpenAI struct {
	// URL is the base address of the server, e.g. "http://127.0.0.1:11434"
	// for Ollama. "/v1/embeddings" is appended unless URL already ends in
	// "/embeddings"; a URL ending in "/v1" gets "/embeddings". A query is
	// kept: "http://h/v1?api-version=2" posts to
	// "http://h/v1/embeddings?api-version=2".
	// Default: DefaultOpenAIURL.
	URL string
	// Model is sent as the "model" field and is part of Name, so switching
	// models re-embeds stored memories. Default: DefaultOpenAIModel.
	Model string
	// APIKey is sent as a bearer token when not empty. It never appears in
	// errors.
	APIKey string
	// Dimensions is the length of the vectors the model returns; a reply of
	// another length is an error. Default: DefaultOpenAIDim (1536).
	Dimensions int
	// Timeout bounds each HTTP request. Default: DefaultOpenAITimeout.
	Timeout time.Duration
	// BatchSize is the most texts sent in one request.
	// Default: DefaultOpenAIBatchSize.
	BatchSize int
	// Client sends the requests. Default: a client shared by all OpenAI
	// values that use the default.
	Client *http.Client
}

var defaultClient = &http.Client{}

// Name is "openai:" followed by the model.
func (o OpenAI) Name() string { return "openai:" + o.model() }

// Dim is Dimensions or DefaultOpenAIDim.
func (o OpenAI) Dim() int {
	if o.Dimensions <= 0 {
		return DefaultOpenAIDim
	}
	return o.Dimensions
}

func (o OpenAI) model() string {
	if o.Model == "" {
		return DefaultOpenAIModel
	}
	return o.Model
}

// Endpoint is the full URL requests are posted to. The path is completed
// as URL's doc says; a query (such as Azure's "api-version" or a key some
// proxies take as "?api-key=") stays the query of the endpoint.
func (o OpenAI) Endpoint() string {
	raw := o.URL
	if strings.TrimSpace(raw) == "" {
		raw = DefaultOpenAIURL
	}
	u, err := url.Parse(raw)
	if err != nil {
		// Not a URL: completed as text, and the request reports it.
		return completePath(strings.TrimRight(raw, "/"))
	}
	u.Fragment, u.RawFragment = "", ""
	u.Path = completePath(strings.TrimRight(u.Path, "/"))
	u.RawPath = ""
	return u.String()
}

// completePath appends what an embeddings path lacks.
func completePath(p string) string {
	switch {
	case strings.HasSuffix(p, "/embeddings"):
		return p
	case strings.HasSuffix(p, "/v1"):
		return p + "/embeddings"
	default:
		return p + "/v1/embeddings"
	}
}

type openAIRequest struct {
	Model          string   `json:"model"`
	Input          []string `json:"input"`
	EncodingFormat string   `json:"encoding_format"`
}

type openAIReply struct {
	Data []struct {
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	} `json:"data"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// Embed sends texts in batches of BatchSize and returns their vectors in
// order. Errors wrap ErrRemote (bad status or reply), ErrBadVector, or the
// transport error.
func (o OpenAI) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	size := o.BatchSize
	if size <= 0 {
		size = DefaultOpenAIBatchSize
	}
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += size {
		end := min(start+size, len(texts))
		vecs, err := o.embedBatch(ctx, texts[start:end])
		if err != nil {
			return nil, err
		}
		out = append(out, vecs...)
	}
	return out, nil
}

func (o OpenAI) embedBatch(ctx context.Context, texts []string) ([][]float32, error) {
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = DefaultOpenAITimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	body, err := json.Marshal(openAIRequest{Model: o.model(), Input: texts, EncodingFormat: "float"})
	if err != nil {
		return nil, fmt.Errorf("embed: encode request: %w", err)
	}
	endpoint := o.Endpoint()
	where := redactURL(endpoint)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("embed: build request for %s: %w", where, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if o.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+o.APIKey)
	}
	client := o.Client
	if client == nil {
		client = defaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		// url.Error repeats the URL, which may hold credentials.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("embed: post %s: %w", where, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxReplyBytes))
	if err != nil {
		return nil, fmt.Errorf("embed: read reply from %s: %w", where, err)
	}
	var reply openAIReply
	decodeErr := json.Unmarshal(raw, &reply)
	if resp.StatusCode != http.StatusOK {
		msg := ""
		if decodeErr == nil && reply.Error != nil {
			msg = reply.Error.Message
		} else {
			msg = strings.TrimSpace(string(raw))
		}
		if len(msg) > 300 {
			msg = msg[:300] + "..."
		}
		return nil, fmt.Errorf("%w: %s answered %s: %s", ErrRemote, where, resp.Status, msg)
	}
	if decodeErr != nil {
		return nil, fmt.Errorf("%w: %s sent a reply that is not embeddings JSON: %v", ErrRemote, where, decodeErr)
	}
	if len(reply.Data) != len(texts) {
		return nil, fmt.Errorf("%w: %s returned %d vectors for %d texts", ErrRemote, where, len(reply.Data), len(texts))
	}
	dim := o.Dim()
	out := make([][]float32, len(texts))
	for _, d := range reply.Data {
		if d.Index < 0 || d.Index >= len(texts) || out[d.Index] != nil {
			return nil, fmt.Errorf("%w: %s returned a bad or repeated index %d", ErrRemote, where, d.Index)
		}
		if len(d.Embedding) != dim {
			return nil, fmt.Errorf("%w: %s returned %d-dim vectors, configured %d (set Dimensions)", ErrBadVector, where, len(d.Embedding), dim)
		}
		if !finite(d.Embedding) {
			return nil, fmt.Errorf("%w: %s returned a vector with NaN or Inf", ErrBadVector, where)
		}
		out[d.Index] = d.Embedding
	}
	return out, nil
}

// redactURL drops user info and the query from u for use in errors.
func redactURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "embeddings endpoint"
	}
	p.User = nil
	p.RawQuery = ""
	p.Fragment = ""
	return p.String()
}
