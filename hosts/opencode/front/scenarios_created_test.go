package front_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/thatch-run/thatch/actors/ocfamily"
	"github.com/thatch-run/thatch/hosts/opencode/front"
)

var _ = Describe("Session created", func() {
	var w *world
	BeforeEach(func() { w = newWorld() })

	It("sends a parent the session-start reminder once, as a noReply prompt", func() {
		w.parentCreated("ses_p")
		Eventually(w.callsOf(mNoReply)).Should(HaveLen(1))
		reminder := w.host.CallsOf(mNoReply)[0]
		Expect(reminder.Session).To(Equal("ses_p"))
		Expect(reminder.Text).To(ContainSubstring("memory_remember"))
		Expect(reminder.Text).To(ContainSubstring("memory_recall"))

		By("a repeated session.created (a reconnect) sends no second reminder")
		w.parentCreated("ses_p")
		w.never(w.countOf(mNoReply), Equal(1), "the reminder goes out once")
		Expect(w.host.CallsOf(mAsync)).To(BeEmpty(), "the reminder starts no turn")
	})

	It("sends no reminder on a v2 host, which drops noReply prompts", func() {
		v2 := newFakeHost()
		w.stop()
		w.start2(map[string]front.HostInfo{hostName: {Client: v2, API: "v2"}})
		w.parentCreated("ses_p")
		w.tools("ses_p", "call", 1) // the family is alive and buffering
		Expect(w.view("ses_p").Pending).To(Equal(1))
		w.never(func() []hostCall { return v2.Calls() }, BeEmpty(), "nothing is prompted on v2")
	})

	It("records a child under its parent and sends the child no reminder", func() {
		w.parentCreated("ses_p")
		Eventually(w.countOf(mNoReply)).Should(Equal(1))
		w.childCreated("ses_task", "ses_p", "explore the repo")

		c, ok := w.child("ses_p", "ses_task")
		Expect(ok).To(BeTrue(), "the parent's family knows the child")
		Expect(c.Kind).To(Equal(ocfamily.ChildTask))
		w.never(w.countOf(mNoReply), Equal(1), "a child gets no reminder")

		By("a child titled thatch-extraction is an extraction child")
		w.childCreated("ses_x", "ses_p", ocfamily.ExtractionTitle)
		x, ok := w.child("ses_p", "ses_x")
		Expect(ok).To(BeTrue())
		Expect(x.Kind).To(Equal(ocfamily.ChildExtraction))
	})

	It("keeps a child's own tool calls in the child's buffer, not the parent's queue", func() {
		w.parentCreated("ses_p")
		w.childCreated("ses_task", "ses_p", "explore the repo")
		w.tools("ses_task", "t", 3)
		w.tools("ses_p", "p", 2)

		Expect(w.view("ses_p").Pending).To(Equal(2))
		c, _ := w.child("ses_p", "ses_task")
		Expect(c.Buffered).To(Equal(3))
	})
})

var _ = Describe("Interactions", func() {
	var w *world
	BeforeEach(func() {
		w = newWorld()
		w.parentCreated("ses_p")
	})

	It("does not buffer thatch's own tools nor skill, task and subagent", func() {
		for _, tool := range []string{"thatch_get_extraction_payload", "thatch_extraction_done", "skill", "task", "subagent"} {
			w.tool("ses_p", "c-"+tool, tool, `{}`, "x")
		}
		Expect(w.view("ses_p").Pending).To(Equal(0))
		w.tool("ses_p", "c-read", "read", `{"filePath":"a.go"}`, "package a")
		Expect(w.view("ses_p").Pending).To(Equal(1))
	})

	It("buffers a redelivered call once", func() {
		w.tool("ses_p", "c-1", "read", `{"filePath":"a.go"}`, "package a")
		w.tool("ses_p", "c-1", "read", `{"filePath":"a.go"}`, "package a")
		Expect(w.view("ses_p").Pending).To(Equal(1))
	})

	It("holds at most 20 interactions, dropping the oldest", func() {
		w.tools("ses_p", "c", 25)
		Expect(w.view("ses_p").Pending).To(Equal(20))
		p := w.fetch("ses_p", "")
		Expect(p.callIDs()).To(HaveLen(20))
		Expect(p.callIDs()[0]).To(Equal("c-6"), "the five oldest were dropped")
		Expect(p.callIDs()[19]).To(Equal("c-25"))
	})

	It("cuts output to 500 characters and summarises args to 120 in the payload", func() {
		long := strings.Repeat("é", 3000)
		args, _ := json.Marshal(map[string]string{"content": strings.Repeat("x", 5000), "filePath": "big.go"})
		w.tool("ses_p", "c-big", "write", string(args), long)
		p := w.fetch("ses_p", "")
		Expect(p.Interactions).To(HaveLen(1))
		in := p.Interactions[0]
		Expect(utf8.RuneCountInString(in.Output)).To(BeNumerically("<=", 500))
		Expect(utf8.RuneCountInString(in.Output)).To(BeNumerically(">", 400), "the start of the output is kept")
		Expect(strings.HasPrefix(in.Output, "éé")).To(BeTrue())
		var summary string
		Expect(json.Unmarshal(in.Args, &summary)).To(Succeed(), "cut args become a JSON string: %s", in.Args)
		Expect(utf8.RuneCountInString(summary)).To(BeNumerically("<=", 120))
		Expect(summary).To(HavePrefix(`{"content":"xxx`), "the summary starts with the compact args")
		Expect(in.Tool).To(Equal("write"))
		Expect(in.SessionID).To(Equal("ses_p"))
	})
})

var _ = Describe("thatch status", func() {
	It("shows each family's counts, flags, children and armed wrap-up", func() {
		w := newWorld()
		w.parentCreated("ses_p")
		w.tools("ses_p", "c", 3)
		x := w.extraction("ses_p")
		Expect(w.fetch(x, "ses_p").callIDs()).To(HaveLen(3))
		w.tools("ses_p", "d", 2)
		w.command("ses_p", "/thatch/exit")

		req, err := http.NewRequest(http.MethodGet, "http://"+w.rt.ControlAddr()+"/v1/status", nil)
		Expect(err).NotTo(HaveOccurred())
		By("without the token the status is refused")
		res, err := w.http.Do(req)
		Expect(err).NotTo(HaveOccurred())
		res.Body.Close()
		Expect(res.StatusCode).To(Equal(http.StatusUnauthorized))

		req.Header.Set("Authorization", "Bearer "+w.token)
		res, err = w.http.Do(req)
		Expect(err).NotTo(HaveOccurred())
		defer res.Body.Close()
		raw, err := io.ReadAll(res.Body)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.StatusCode).To(Equal(http.StatusOK), string(raw))
		var st struct {
			FrontEnds struct {
				OpenCode struct {
					Entities []ocfamily.StatusView `json:"entities"`
				} `json:"opencode"`
			} `json:"frontEnds"`
		}
		Expect(json.Unmarshal(raw, &st)).To(Succeed())
		Expect(st.FrontEnds.OpenCode.Entities).To(HaveLen(1), string(raw))
		v := st.FrontEnds.OpenCode.Entities[0]
		Expect(v.SessionID).To(Equal("ses_p"))
		Expect(v.Pending).To(Equal(2))
		Expect(v.Accepted).To(Equal(3))
		Expect(v.Claims).To(Equal(map[string]int{x: 3}))
		Expect(v.Extracting).To(BeTrue())
		Expect(v.ExtractionChild).To(Equal(x))
		Expect(v.Children).To(ConsistOf(HaveField("SessionID", x)))
		Expect(v.Children[0].Claimed).To(Equal(3))
		Expect(v.WrapUp).NotTo(BeNil())
		Expect(v.WrapUp.Kind).To(Equal(ocfamily.WrapUpExit))
		Expect(v.WrapUp.Token).To(Equal(ocfamily.TokenExit))
	})
})
