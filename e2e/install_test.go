package e2e

import (
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/thatch-run/thatch/e2e/fakemodel"
)

var _ = Describe("thatch install opencode", Label("opencode"), func() {
	It("installs into a project with npm once; a second install changes nothing; opencode starts without npm", Label("npm"), func() {
		w := NewWorld()
		model := fakemodel.New()
		DeferCleanup(model.Close)
		WriteOpenCodeConfig(w, model)
		dot := filepath.Join(w.Project, ".opencode")
		global := filepath.Join(w.ConfigHome, "opencode")

		By("the first install writes everything and npm-installs the plugin package")
		out := Install(w, "--project", w.Project)
		Expect(out).To(ContainSubstring("npm installed"))
		Expect(out).To(ContainSubstring("takes effect at the next opencode start"))
		for _, f := range []string{"plugin/thatch.js", "command/thatch/compact.md", "command/thatch/exit.md", "skills/thatch-fact-extractor/SKILL.md"} {
			Expect(filepath.Join(dot, f)).To(BeARegularFile())
		}
		for _, dir := range []string{dot, global} {
			Expect(filepath.Join(dir, "node_modules", "@opencode-ai", "plugin", "package.json")).To(BeARegularFile())
		}
		Expect(filepath.Join(global, "plugin")).NotTo(BeADirectory(), "a project install leaves the global plugins alone")

		By("a second install changes nothing and says so")
		again := Install(w, "--project", w.Project)
		Expect(again).To(ContainSubstring("nothing changed"))
		Expect(again).NotTo(ContainSubstring("created"))
		Expect(again).NotTo(ContainSubstring("updated"))
		Expect(again).NotTo(ContainSubstring("npm installed"))

		By("opencode finds the commands and the skill, registers with the daemon, and runs no npm of its own")
		locks := map[string][]byte{}
		for _, dir := range []string{dot, global} {
			b, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
			Expect(err).NotTo(HaveOccurred())
			locks[dir] = b
		}
		d := StartDaemon(w)
		oc := StartOpenCode(w, 0)
		d.WaitWatching(oc.HostPort)
		var commands []struct {
			Name string `json:"name"`
		}
		Expect(oc.call("GET", "/command", nil, &commands)).To(Succeed())
		var names []string
		for _, c := range commands {
			names = append(names, c.Name)
		}
		Expect(names).To(ContainElements("thatch/compact", "thatch/exit"))
		var skills []struct {
			Name string `json:"name"`
		}
		Expect(oc.call("GET", "/skill", nil, &skills)).To(Succeed())
		Expect(skills).To(ContainElement(HaveField("Name", "thatch-fact-extractor")))
		for dir, b := range locks {
			now, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
			Expect(err).NotTo(HaveOccurred())
			Expect(now).To(Equal(b), "opencode rewrote %s/package-lock.json", dir)
		}
	})

	It("keeps opencode working when the daemon is down: tools say so, hooks stay quiet", func() {
		w := NewWorld()
		model := fakemodel.New()
		DeferCleanup(model.Close)
		WriteOpenCodeConfig(w, model)
		w.SeedDeps()
		Install(w)
		model.On(fakemodel.Rule{Name: "no-daemon", Match: fakemodel.LastUserContains("NO-DAEMON"), Steps: []fakemodel.Step{
			{ToolCalls: []fakemodel.ToolCall{{Name: "read", Args: map[string]any{"filePath": w.Project + "/README.md"}}}},
			{ToolCalls: []fakemodel.ToolCall{{Name: "memory_recall", Args: map[string]any{"query": "build"}}}},
			{ToolCalls: []fakemodel.ToolCall{{Name: "thatch_get_extraction_payload", Args: map[string]any{}}}},
			{Text: "Carrying on without memories."},
		}})
		oc := StartOpenCode(w, 0) // no `thatch serve` in this world
		s := oc.CreateSession("", "")
		idles := oc.Idles(s.ID)
		oc.Prompt(s.ID, "NO-DAEMON: how do I build?")
		oc.WaitIdleAfter(s.ID, idles)
		Expect(model.Served("no-daemon", 3)).To(Equal(1), "the turn ran to its end")
		recall := resultOf(model, "no-daemon", 3, 1)
		Expect(recall).To(ContainSubstring("the thatch daemon is not running"))
		Expect(recall).To(ContainSubstring("thatch serve"))
		Expect(resultOf(model, "no-daemon", 3, 2)).To(ContainSubstring("thatch: fetching the extraction payload failed"))
		Expect(oc.LastAssistantText(s.ID)).To(Equal("Carrying on without memories."))
	})
})
