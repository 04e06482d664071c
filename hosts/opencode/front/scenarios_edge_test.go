package front_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"

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

	It("a payload fetch by a caller no family knows is a 404 that says not to retry, and leaves nothing behind", func() {
		f := w.refused("/v1/opencode/payload", map[string]string{"sessionID": "ses_stranger"})
		Expect(f).To(final(http.StatusNotFound))
		Expect(f.Error).To(ContainSubstring("ses_stranger"))
		Expect(w.oc.JournalForTest().HighestSeq(familyIdentity("ses_stranger"))).To(BeZero(), "no family was made for it")
		Expect(w.refused("/v1/opencode/payload", map[string]string{"sessionID": "ses_stranger", "target": "ses_other"})).
			To(final(http.StatusNotFound), "nor does a target no family knows")
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
