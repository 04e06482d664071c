package front_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/types"

	"github.com/thatch-run/thatch/actors/ocfamily"
	"github.com/thatch-run/thatch/messages"
)

// familyIdentity is the journal identity of the family of parent id.
func familyIdentity(id string) messages.Identity {
	return messages.Identity{Kind: ocfamily.KindName, ID: id}
}

// failure is the JSON body of a plugin call thatch did not accept.
type failure struct {
	Status int
	Error  string `json:"error"`
	// Retryable is a pointer so that a missing field shows as nil.
	Retryable *bool `json:"retryable"`
}

// refused sends body to path and returns how thatch refused it: the
// status must not be 200 and the answer must be the JSON error body. A
// []byte body is sent as it is; anything else is marshaled.
func (w *world) refused(path string, body any) failure {
	GinkgoHelper()
	b, ok := body.([]byte)
	if !ok {
		var err error
		b, err = json.Marshal(body)
		Expect(err).NotTo(HaveOccurred())
	}
	req, err := http.NewRequest(http.MethodPost, "http://"+w.rt.ControlAddr()+path, bytes.NewReader(b))
	Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Authorization", "Bearer "+w.token)
	req.Header.Set("Content-Type", "application/json")
	res, err := w.http.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	Expect(err).NotTo(HaveOccurred())
	Expect(res.StatusCode).NotTo(Equal(http.StatusOK), "POST %s was accepted: %s", path, raw)
	Expect(res.Header.Get("Content-Type")).To(Equal("application/json"))
	f := failure{Status: res.StatusCode}
	Expect(json.Unmarshal(raw, &f)).To(Succeed(), "answer %s", raw)
	Expect(f.Error).NotTo(BeEmpty(), "answer %s", raw)
	Expect(f.Retryable).NotTo(BeNil(), "the answer says whether to retry: %s", raw)
	return f
}

// final matches a failure that says not to retry, with that status.
func final(status int) types.GomegaMatcher {
	return And(HaveField("Status", status), HaveField("Retryable", HaveValue(BeFalse())))
}

var _ = Describe("Plugin calls thatch does not accept", func() {
	var w *world
	BeforeEach(func() {
		w = newWorld()
		w.parentCreated("ses_p")
	})

	DescribeTable("a bad body is a 400 that says not to retry",
		func(path string, body any) {
			Expect(w.refused(path, body)).To(final(http.StatusBadRequest))
		},
		Entry("tool: not JSON", "/v1/opencode/tool", []byte(`{"sessionID":`)),
		Entry("tool: no sessionID", "/v1/opencode/tool", map[string]any{"host": hostName, "tool": "bash"}),
		Entry("tool: no tool", "/v1/opencode/tool", map[string]any{"host": hostName, "sessionID": "ses_p"}),
		Entry("command: no command", "/v1/opencode/command", map[string]any{"host": hostName, "sessionID": "ses_p"}),
		Entry("payload: no sessionID", "/v1/opencode/payload", map[string]any{}),
		Entry("done: not an object", "/v1/opencode/done", []byte(`[]`)),
		Entry("register: not loopback", "/v1/opencode/register", map[string]any{"url": "http://example.com:4096"}),
		Entry("remember: no label", "/v1/memory/remember", map[string]any{"sessionID": "ses_p", "store": "global", "content": "c"}),
	)

	It("a payload fetch by a caller no family knows gets nothing, and leaves nothing behind", func() {
		Expect(w.fetch("ses_stranger", "")).To(BeNil(), "the extractor of a deleted parent is such a caller")
		Expect(w.oc.JournalForTest().HighestSeq(familyIdentity("ses_stranger"))).To(BeZero(), "no family was made for it")
		Expect(w.fetch("ses_stranger", "ses_other")).To(BeNil(), "nor for a target no family knows")
		Expect(w.oc.JournalForTest().HighestSeq(familyIdentity("ses_other"))).To(BeZero())
	})

	It("a known family's session, a child linked to it, and a stranger naming a known family still fetch", func() {
		Expect(w.fetch("ses_p", "")).To(BeNil(), "known, with nothing queued")
		w.childCreated("ses_c", "ses_p", "explore")
		Expect(w.fetch("ses_c", "")).To(BeNil())
		Expect(w.fetch("ses_stranger", "ses_p")).To(BeNil(), "another family's queue is not the stranger's to take")
	})

	It("an extraction ack by a stranger completes nothing, and is no error", func() {
		Expect(w.done("ses_stranger")).To(Equal(0))
	})
})

// postRaw sends raw to path and returns the status, for calls made from
// several goroutines (it asserts nothing).
func (w *world) postRaw(path string, raw []byte) (int, error) {
	req, err := http.NewRequest(http.MethodPost, "http://"+w.rt.ControlAddr()+path, bytes.NewReader(raw))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+w.token)
	res, err := w.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, res.Body)
	return res.StatusCode, nil
}

// toolBody is a tool call of session as the plugin posts it, with args
// written as they are.
func toolBody(session, callID, args string) []byte {
	return []byte(`{"host":"` + hostName + `","sessionID":"` + session + `","callID":"` + callID +
		`","tool":"bash","args":` + args + `,"title":"t","output":"o"}`)
}

var _ = Describe("What thatch acknowledges, it can replay", func() {
	var w *world
	BeforeEach(func() {
		w = newWorld()
		w.parentCreated("ses_p")
	})

	It("records a tool call whose args nest too deep, cut, and the family still answers after a restart", func() {
		deep := strings.Repeat("[", 9999) + strings.Repeat("]", 9999)
		// 9,999 levels: as deep as the body's own decoder takes, deeper
		// than the journal's decoder does once the event wraps them.
		Expect(w.postRaw("/v1/opencode/tool", toolBody("ses_p", "c-deep", deep))).To(Equal(http.StatusOK))
		w.tool("ses_p", "c-next", "bash", `{"command":"make test"}`, "ok")

		w.restart()
		Expect(w.view("ses_p").Pending).To(Equal(2), "the family replays both calls")
		p := w.fetch("ses_p", "")
		Expect(p.callIDs()).To(Equal([]string{"c-deep", "c-next"}))
		var summary string
		Expect(json.Unmarshal(p.Interactions[0].Args, &summary)).To(Succeed(), "a long args summary is a string: %s", p.Interactions[0].Args)
		Expect(summary).To(HavePrefix(`[[[[`))
		Expect(summary).To(ContainSubstring("cut"), "the deep part says it was cut")
	})

	It("refuses a number the journal cannot write, and a valid call at the same moment goes through", func() {
		statuses := make([]int, 2)
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i, body := range [][]byte{
			toolBody("ses_p", "c-inf", `{"n":[1e999]}`),
			toolBody("ses_p", "c-ok", `{"n":[1e308]}`),
		} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				statuses[i], errs[i] = w.postRaw("/v1/opencode/tool", body)
			}()
		}
		wg.Wait()
		Expect(errs).To(HaveEach(Succeed()))
		Expect(statuses).To(Equal([]int{http.StatusBadRequest, http.StatusOK}))

		f := w.refused("/v1/opencode/tool", toolBody("ses_p", "c-inf", `{"n":[-1e999]}`))
		Expect(f).To(final(http.StatusBadRequest))
		Expect(f.Error).To(ContainSubstring("1e999"))
		Expect(w.fetch("ses_p", "").callIDs()).To(Equal([]string{"c-ok"}))
	})

	long := strings.Repeat("s", 257)
	DescribeTable("refuses an invalid id at once",
		func(path string, body map[string]any, field string) {
			f := w.refused(path, body)
			Expect(f).To(final(http.StatusBadRequest))
			Expect(f.Error).To(ContainSubstring(field))
		},
		Entry("tool: NUL in sessionID", "/v1/opencode/tool", map[string]any{"host": hostName, "sessionID": "ses_\x00p", "callID": "c", "tool": "bash"}, "sessionID"),
		Entry("tool: NUL in callID", "/v1/opencode/tool", map[string]any{"host": hostName, "sessionID": "ses_p", "callID": "c\x00", "tool": "bash"}, "callID"),
		Entry("tool: control character in host", "/v1/opencode/tool", map[string]any{"host": "fa\x1bke", "sessionID": "ses_p", "callID": "c", "tool": "bash"}, "host"),
		Entry("tool: NUL in tool", "/v1/opencode/tool", map[string]any{"host": hostName, "sessionID": "ses_p", "callID": "c", "tool": "ba\x00sh"}, "tool"),
		Entry("tool: sessionID too long", "/v1/opencode/tool", map[string]any{"host": hostName, "sessionID": long, "tool": "bash"}, "sessionID"),
		Entry("command: NUL in sessionID", "/v1/opencode/command", map[string]any{"host": hostName, "sessionID": "\x00", "command": "thatch/exit"}, "sessionID"),
		Entry("payload: NUL in target", "/v1/opencode/payload", map[string]any{"sessionID": "ses_p", "target": "ses_\x00"}, "target"),
		Entry("payload: NUL in sessionID", "/v1/opencode/payload", map[string]any{"sessionID": "ses_p\x00"}, "sessionID"),
		Entry("done: NUL in sessionID", "/v1/opencode/done", map[string]any{"sessionID": "ses_p\x00"}, "sessionID"),
		Entry("remember: NUL in sessionID", "/v1/memory/remember", map[string]any{"sessionID": "ses_p\x00", "store": "global", "label": "l", "content": "c"}, "sessionID"),
		Entry("recall: NUL in sessionID", "/v1/memory/recall", map[string]any{"sessionID": "\x00", "query": "q"}, "sessionID"),
	)

	It("refuses a body that is not valid UTF-8", func() {
		Expect(w.refused("/v1/opencode/tool", toolBody("ses_p\xff", "c", `{}`))).To(final(http.StatusBadRequest))
	})

	It("refuses trailing data after the body", func() {
		Expect(w.refused("/v1/opencode/tool", append(toolBody("ses_p", "c", `{}`), " xyz"...))).To(final(http.StatusBadRequest))
		Expect(w.refused("/v1/opencode/done", []byte(`{"sessionID":"ses_p"}{"sessionID":"ses_q"}`))).To(final(http.StatusBadRequest))
	})

	It("refuses a body over the size cap, and takes one just under it", func() {
		body := func(n int) map[string]any {
			return map[string]any{"host": hostName, "sessionID": "ses_p", "callID": "c", "tool": "bash", "output": strings.Repeat("o", n)}
		}
		f := w.refused("/v1/opencode/tool", body(1<<20))
		Expect(f).To(final(http.StatusBadRequest))
		Expect(f.Error).To(ContainSubstring("1 MiB"))
		w.post("/v1/opencode/tool", body(1<<20-200), nil)
		Expect(w.view("ses_p").Pending).To(Equal(1))
	})
})
