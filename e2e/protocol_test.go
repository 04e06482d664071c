package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/thatch-run/thatch/e2e/fakemodel"
	"github.com/thatch-run/thatch/hosts/opencode/install"
	"github.com/thatch-run/thatch/persistence/memory"
)

// The extraction protocol test (issue 5 §6). It proves that the protocol
// an extraction child runs works end to end through the real opencode,
// the real plugin and the built daemon: the skill is offered and loads,
// the payload fetch hands over what the parent's hook buffered, each
// memory_remember lands in the store the payload named, the ack completes
// the claim, and the toast counts what was saved. It does not measure how
// well a model extracts facts: the model is scripted, and it writes
// exactly the facts each case lists.
//
// Each case in testdata/protocol is a recorded session: the files of its
// project, the tool calls its agent made and what they printed, and the
// facts the scripted child is to write. The scripted model replays the
// calls through the real opencode (so the plugin's real hook buffers
// them), then plays the extraction child step by step as the skill asks:
// load the skill, fetch the payload, recall each fact first, write one
// memory per fact (overwriting what recall found), ack, and end with
// "Extraction complete.".
//
// The test judges no prose. It checks what the child was given (the skill
// in its system prompt, the SKILL.md text from the skill tool, the
// recorded interactions in its payload), that the protocol ran in order
// with every call succeeding, and that the daemon ends up holding exactly
// the facts the child wrote (label, content, confidence, branch, store).
var _ = Describe("extraction protocol with a scripted model", Label("opencode", "protocol"), func() {
	cases, err := loadProtocolCases(filepath.Join("testdata", "protocol"))
	if err != nil {
		It("loads the protocol cases", func() { Fail(err.Error()) })
		return
	}
	for _, c := range cases {
		It(c.Name, func() { runProtocolCase(c) })
	}
})

// protocolCase is one file of testdata/protocol.
type protocolCase struct {
	Name  string `json:"name"`
	About string `json:"about"`
	// Git, when set, makes the project a git repository on Branch with
	// Remote as origin (which names its memory store).
	Git *struct {
		Branch string `json:"branch"`
		Remote string `json:"remote"`
	} `json:"git,omitempty"`
	// ProjectStore is the store the payload must name for the project.
	ProjectStore string `json:"projectStore"`
	// Files are written into the project (paths relative to it).
	Files map[string]string `json:"files"`
	// Seed are memories that exist before the session, in ProjectStore.
	Seed         []protocolFact        `json:"seed,omitempty"`
	Prompt       string                `json:"prompt"`
	Interactions []protocolInteraction `json:"interactions"`
	Answer       string                `json:"answer"`
	// Facts are what the scripted child writes, one memory_remember
	// each; empty when the case has nothing durable, and the child then
	// goes from the payload straight to the ack.
	Facts []protocolFact `json:"facts"`
}

// protocolInteraction is one recorded tool call; "{{project}}" in its string
// arguments stands for the project folder. Output is a part of what the
// tool printed, which the payload must carry.
type protocolInteraction struct {
	Tool   string         `json:"tool"`
	Args   map[string]any `json:"args"`
	Output string         `json:"output"`
}

// protocolFact is one memory. Recall is the query the child looks it up with
// before writing it (default: its label).
type protocolFact struct {
	Label      string `json:"label"`
	Content    string `json:"content"`
	Confidence int    `json:"confidence"`
	Branch     string `json:"branch,omitempty"`
	Recall     string `json:"recall,omitempty"`
}

func (f protocolFact) query() string {
	if f.Recall != "" {
		return f.Recall
	}
	return f.Label
}

// loadProtocolCases reads and checks every case of dir, in file name order.
func loadProtocolCases(dir string) ([]protocolCase, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("no protocol cases in %s", dir)
	}
	sort.Strings(paths)
	var out []protocolCase
	names := map[string]bool{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		var c protocolCase
		if err := dec.Decode(&c); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		if err := c.check(); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		if names[c.Name] {
			return nil, fmt.Errorf("%s: case name %q is used twice", p, c.Name)
		}
		names[c.Name] = true
		out = append(out, c)
	}
	return out, nil
}

func (c protocolCase) check() error {
	switch {
	case c.Name == "" || c.Prompt == "" || c.Answer == "" || c.ProjectStore == "":
		return fmt.Errorf("name, prompt, answer and projectStore are required")
	case len(c.Interactions) == 0:
		return fmt.Errorf("a case needs at least one interaction")
	case c.Git != nil && (c.Git.Branch == "" || c.Git.Remote == ""):
		return fmt.Errorf("git needs a branch and a remote")
	}
	for _, in := range c.Interactions {
		if in.Tool == "" || in.Output == "" {
			return fmt.Errorf("every interaction needs a tool and a recorded output")
		}
	}
	labels := map[string]bool{}
	for _, f := range append(append([]protocolFact(nil), c.Seed...), c.Facts...) {
		if f.Label == "" || f.Content == "" || f.Confidence < 1 || f.Confidence > 10 {
			return fmt.Errorf("fact %q needs a label, content and a confidence from 1 to 10", f.Label)
		}
	}
	for _, f := range c.Facts {
		if labels[f.Label] {
			return fmt.Errorf("fact label %q appears twice", f.Label)
		}
		labels[f.Label] = true
	}
	return nil
}

// marker is the part of the parent's prompt its script matches on.
func (c protocolCase) marker() string { return "PROTOCOL[" + c.Name + "]" }

// seeded reports whether label is one of the seed memories.
func (c protocolCase) seeded(label string) bool {
	for _, s := range c.Seed {
		if s.Label == label {
			return true
		}
	}
	return false
}

// withProject replaces "{{project}}" in every string of v.
func withProject(v any, project string) any {
	switch x := v.(type) {
	case string:
		return strings.ReplaceAll(x, "{{project}}", project)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = withProject(e, project)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = withProject(e, project)
		}
		return out
	default:
		return v
	}
}

// prepare writes the case's files (and git repository) into the project
// before opencode or thatch look at it.
func (c protocolCase) prepare(w *World) {
	for rel, content := range c.Files {
		p := filepath.Join(w.Project, filepath.FromSlash(rel))
		Expect(os.MkdirAll(filepath.Dir(p), 0o755)).To(Succeed())
		mode := os.FileMode(0o644)
		if strings.HasSuffix(rel, ".sh") {
			mode = 0o755
		}
		Expect(os.WriteFile(p, []byte(content), mode)).To(Succeed())
	}
	if c.Git == nil {
		return
	}
	for _, args := range [][]string{
		{"init", "-q", "-b", c.Git.Branch},
		{"remote", "add", "origin", c.Git.Remote},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = w.Project, w.Env
		out, err := cmd.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "git %v: %s", args, out)
	}
}

// startProtocolStack is StartStack with the case's project prepared first.
func startProtocolStack(c protocolCase) *Stack { return startStackWith(c.prepare) }

// protocolParent scripts the parent turn: one recorded call per step, then
// the recorded answer.
func protocolParent(c protocolCase, project string) fakemodel.Rule {
	var steps []fakemodel.Step
	for _, in := range c.Interactions {
		steps = append(steps, fakemodel.Step{ToolCalls: []fakemodel.ToolCall{{Name: in.Tool, Args: withProject(in.Args, project)}}})
	}
	steps = append(steps, fakemodel.Step{Text: c.Answer})
	return fakemodel.Rule{Name: "parent:" + c.Name, Match: fakemodel.LastUserContains(c.marker()), Steps: steps}
}

// The tools the extraction protocol calls.
const (
	toolSkill    = "skill"
	toolPayload  = "thatch_get_extraction_payload"
	toolRecall   = "memory_recall"
	toolRemember = "memory_remember"
	toolDone     = "thatch_extraction_done"
)

// protocolExtractor scripts the child after the skill's steps for the case's
// facts, and returns the step of its final text. A case without facts
// goes from the payload straight to the ack.
func protocolExtractor(c protocolCase) (fakemodel.Rule, int) {
	steps := []fakemodel.Step{
		{ToolCalls: []fakemodel.ToolCall{{Name: toolSkill, Args: map[string]any{"name": install.SkillName}}}},
		{ToolCalls: []fakemodel.ToolCall{{Name: toolPayload, ArgsFrom: func(r *fakemodel.Request) any {
			return map[string]any{"session_id": promptedParent(r)}
		}}}},
	}
	if len(c.Facts) > 0 {
		var recalls, writes []fakemodel.ToolCall
		for i, f := range c.Facts {
			recalls = append(recalls, fakemodel.ToolCall{Name: toolRecall, Args: map[string]any{"query": f.query()}})
			writes = append(writes, fakemodel.ToolCall{Name: toolRemember, ArgsFrom: func(r *fakemodel.Request) any {
				return rememberArgs(r, f, i)
			}})
		}
		steps = append(steps, fakemodel.Step{ToolCalls: recalls}, fakemodel.Step{ToolCalls: writes})
	}
	steps = append(steps,
		fakemodel.Step{ToolCalls: []fakemodel.ToolCall{{Name: toolDone, Args: map[string]any{}}}},
		fakemodel.Step{Text: "Extraction complete."})
	return fakemodel.Rule{Name: ExtractorName, Match: fakemodel.FirstUserContains(extractionMarker), Steps: steps}, len(steps) - 1
}

// rememberArgs is what the scripted child writes for fact f, the i-th it
// recalled: into the store the payload named, with a branch only when the
// fact has one, and overwriting only when its recall found the label.
func rememberArgs(r *fakemodel.Request, f protocolFact, i int) map[string]any {
	args := map[string]any{"label": f.Label, "content": f.Content, "confidence": f.Confidence}
	if f.Branch != "" {
		args["branch"] = f.Branch
	}
	ex := exchanges(r)
	if p, ok := findResult(ex, toolPayload, 0); ok {
		var payload struct {
			ProjectStore string `json:"projectStore"`
		}
		if json.Unmarshal([]byte(p), &payload) == nil && payload.ProjectStore != "" {
			args["store"] = payload.ProjectStore
		}
	}
	if res, ok := findResult(ex, toolRecall, i); ok {
		var hits struct {
			Hits []memory.Hit `json:"hits"`
		}
		if json.Unmarshal([]byte(res), &hits) == nil {
			for _, h := range hits.Hits {
				if h.Entry.Label == f.Label && h.Entry.Store == args["store"] {
					args["overwrite"] = true
				}
			}
		}
	}
	return args
}

// exchange is one tool call of a conversation with its result.
type exchange struct {
	Tool, Result string
}

// exchanges pairs the tool calls of the conversation's assistant messages
// with the tool results that follow them, in order.
func exchanges(r *fakemodel.Request) []exchange {
	var out []exchange
	var pending []string
	for _, m := range r.Messages {
		switch m.Role {
		case "assistant":
			pending = append(pending, m.ToolCalls...)
		case "tool":
			name := "?"
			if len(pending) > 0 {
				name, pending = pending[0], pending[1:]
			}
			out = append(out, exchange{Tool: name, Result: m.Text})
		}
	}
	return out
}

// findResult returns the result of the idx-th call of tool.
func findResult(ex []exchange, tool string, idx int) (string, bool) {
	for _, e := range ex {
		if e.Tool != tool {
			continue
		}
		if idx == 0 {
			return e.Result, true
		}
		idx--
	}
	return "", false
}

// skillFile returns the installed SKILL.md's description and body.
func skillFile(w *World) (description, body string) {
	b, err := os.ReadFile(filepath.Join(w.ConfigHome, "opencode", "skills", install.SkillName, "SKILL.md"))
	Expect(err).NotTo(HaveOccurred(), "thatch install wrote no skill")
	parts := strings.SplitN(string(b), "---", 3)
	Expect(parts).To(HaveLen(3), "SKILL.md has no front matter")
	for _, line := range strings.Split(parts[1], "\n") {
		if d, ok := strings.CutPrefix(line, "description:"); ok {
			description = strings.TrimSpace(d)
		}
	}
	Expect(description).NotTo(BeEmpty(), "SKILL.md has no description")
	return description, strings.TrimSpace(parts[2])
}

// storedFact is what the protocol test compares of a memory.
type storedFact struct {
	Store, Label, Content, Branch string
	Confidence                    int
}

func (c protocolCase) expectedMemories() []storedFact {
	byLabel := map[string]storedFact{}
	var order []string
	for _, f := range append(append([]protocolFact(nil), c.Seed...), c.Facts...) {
		if _, ok := byLabel[f.Label]; !ok {
			order = append(order, f.Label)
		}
		byLabel[f.Label] = storedFact{Store: c.ProjectStore, Label: f.Label, Content: f.Content, Branch: f.Branch, Confidence: f.Confidence}
	}
	out := []storedFact{}
	for _, l := range order {
		out = append(out, byLabel[l])
	}
	return out
}

func runProtocolCase(c protocolCase) {
	s := startProtocolStack(c)
	for _, f := range c.Seed {
		Expect(s.D.Post("/v1/memory/remember", map[string]any{"label": f.Label, "content": f.Content,
			"store": c.ProjectStore, "branch": f.Branch, "confidence": f.Confidence}, nil)).To(Succeed(), "seeding %q", f.Label)
	}
	extractor, final := protocolExtractor(c)
	s.Model.On(protocolParent(c, s.W.Project))
	s.Model.On(extractor)

	By("the parent turn replays the recorded tool calls through the real tools")
	parent := s.OC.NewParent()
	s.OC.Prompt(parent.ID, c.marker()+" "+c.Prompt)
	Eventually(func() int { return s.Model.Served("parent:"+c.Name, len(c.Interactions)) }).Should(Equal(1))

	By("its idle starts one extraction child, which runs the protocol to its last line and is deleted")
	Eventually(s.OC.ExtractionChildren(parent.ID)).Should(HaveLen(1))
	child := s.OC.ExtractionChildren(parent.ID)()[0]
	Eventually(func() int { return s.Model.Served(ExtractorName, final) }).Should(Equal(1))
	Eventually(s.OC.Deleted(child)).Should(BeTrue())

	var first, last *fakemodel.Request
	for _, r := range s.Model.Requests() {
		if r.Rule != ExtractorName {
			continue
		}
		r := r
		if first == nil {
			first = &r
		}
		if r.Step == final {
			last = &r
		}
	}
	Expect(first).NotTo(BeNil())
	Expect(last).NotTo(BeNil())
	Expect(s.Model.Served(ExtractorName, -1)).To(Equal(final+1), "the child asked the model once per step, no more")

	By("the child's first request offers the skill: listed in its system prompt, loadable with the skill tool")
	description, body := skillFile(s.W)
	Expect(first.Step).To(Equal(0))
	Expect(first.FirstUser()).To(ContainSubstring(fmt.Sprintf("session_id %q", parent.ID)), "the prompt names the parent")
	Expect(first.System()).To(ContainSubstring("<name>"+install.SkillName+"</name>"), "the skill is listed to the child")
	Expect(first.System()).To(ContainSubstring(description), "with the description of the installed SKILL.md")
	for _, t := range []string{toolSkill, toolPayload, toolRecall, toolRemember, toolDone} {
		Expect(first.HasTool(t)).To(BeTrue(), "the child is offered %s; tools: %v", t, first.Tools)
	}

	By("the protocol ran in order: skill, payload, recall, write, ack")
	ex := exchanges(last)
	var tools []string
	for _, e := range ex {
		tools = append(tools, e.Tool)
	}
	want := []string{toolSkill, toolPayload}
	for range c.Facts {
		want = append(want, toolRecall)
	}
	for range c.Facts {
		want = append(want, toolRemember)
	}
	want = append(want, toolDone)
	Expect(tools).To(Equal(want))

	By("the skill tool returned the installed SKILL.md")
	skillOut, _ := findResult(ex, toolSkill, 0)
	Expect(skillOut).To(ContainSubstring(`<skill_content name="` + install.SkillName + `">`))
	Expect(skillOut).To(ContainSubstring(body))

	By("the payload holds the recorded interactions, in order, with their arguments and output")
	payloadOut, _ := findResult(ex, toolPayload, 0)
	var payload struct {
		Interactions []struct {
			Tool   string          `json:"tool"`
			Args   json.RawMessage `json:"args"`
			Output string          `json:"output"`
		} `json:"interactions"`
		ProjectStore string `json:"projectStore"`
		GlobalStore  string `json:"globalStore"`
	}
	Expect(json.Unmarshal([]byte(payloadOut), &payload)).To(Succeed(), "payload: %s", payloadOut)
	Expect(payload.ProjectStore).To(Equal(c.ProjectStore))
	Expect(payload.GlobalStore).To(Equal(memory.GlobalStore))
	Expect(payload.Interactions).To(HaveLen(len(c.Interactions)), "payload: %s", payloadOut)
	for i, rec := range c.Interactions {
		got := payload.Interactions[i]
		Expect(got.Tool).To(Equal(rec.Tool), "interaction %d", i)
		var args map[string]any
		Expect(json.Unmarshal(got.Args, &args)).To(Succeed(), "interaction %d args: %s", i, got.Args)
		for k, v := range withProject(rec.Args, s.W.Project).(map[string]any) {
			Expect(args).To(HaveKeyWithValue(k, v), "interaction %d (%s)", i, rec.Tool)
		}
		Expect(got.Output).To(ContainSubstring(rec.Output), "interaction %d (%s) output", i, rec.Tool)
	}

	By("every recall answered, every write landed in the project store, updating only what recall found")
	created, updated := 0, 0
	for i, f := range c.Facts {
		res, _ := findResult(ex, toolRecall, i)
		Expect(res).To(HavePrefix(`{"hits":`), "recall %q", f.query())
		res, _ = findResult(ex, toolRemember, i)
		var wrote struct {
			Slug  string `json:"slug"`
			Store string `json:"store"`
			Op    string `json:"op"`
		}
		Expect(json.Unmarshal([]byte(res), &wrote)).To(Succeed(), "memory_remember %q: %s", f.Label, res)
		Expect(wrote.Store).To(Equal(c.ProjectStore), "memory_remember %q", f.Label)
		if c.seeded(f.Label) {
			Expect(wrote.Op).To(Equal(memory.OpUpdated), "%q existed: recall found it and the child overwrote it", f.Label)
			updated++
		} else {
			Expect(wrote.Op).To(Equal(memory.OpNew), "memory_remember %q", f.Label)
			created++
		}
	}
	// A child's first memory write already completes its claim; with no
	// write, the ack is what completes the recorded interactions.
	acked := len(c.Interactions)
	if len(c.Facts) > 0 {
		acked = 0
	}
	doneOut, _ := findResult(ex, toolDone, 0)
	Expect(doneOut).To(Equal(fmt.Sprintf("Acknowledged: %d interaction(s) completed.", acked)))

	By("the daemon holds exactly the case's facts, and the parent's buffer is empty")
	var entries []memory.Entry
	listed := MemoryListCLI(s.W)
	Expect(json.Unmarshal([]byte(listed), &entries)).To(Succeed(), "memory list: %s", listed)
	got := []storedFact{}
	for _, e := range entries {
		got = append(got, storedFact{Store: e.Store, Label: e.Label, Content: e.Content, Branch: e.Branch, Confidence: e.Confidence})
		if c.seeded(e.Label) {
			Expect(e.RecallCount).To(BeNumerically(">=", 1), "the seeded %q was recalled before it was overwritten", e.Label)
		}
	}
	Expect(got).To(ConsistOf(c.expectedMemories()))
	Eventually(func() Family { return StatusCLI(s.W)[parent.ID] }).Should(Satisfy(drained))

	if created+updated > 0 {
		Eventually(s.OC.Toasts).Should(ContainElement(fmt.Sprintf("memories saved: %d new, %d updated, 0 deleted", created, updated)))
	} else {
		Expect(s.OC.Toasts()).NotTo(ContainElement(ContainSubstring("memories saved")), "nothing saved, nothing to toast")
	}
}
