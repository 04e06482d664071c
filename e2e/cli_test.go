package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"
)

// thatchCLI runs the thatch binary with args in w and returns its exit
// code, stdout and stderr.
func thatchCLI(w *World, stdin string, args ...string) (int, string, string) {
	cmd := exec.Command(bins.Thatch, args...)
	cmd.Env = w.Env
	cmd.Dir = w.Root
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	sess, err := gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
	Expect(err).NotTo(HaveOccurred())
	Eventually(sess, 2*time.Minute).Should(gexec.Exit())
	return sess.ExitCode(), string(sess.Out.Contents()), string(sess.Err.Contents())
}

// withoutTimes drops the fields of an export an import cannot restore.
func withoutTimes(export string) []map[string]any {
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(export), "\n") {
		var m map[string]any
		Expect(json.Unmarshal([]byte(line), &m)).To(Succeed(), "export line %q", line)
		for _, k := range []string{"created", "updated", "recall_count", "last_recalled"} {
			delete(m, k)
		}
		out = append(out, m)
	}
	return out
}

// helpCommands reads the command names of a help's "Commands:" section.
func helpCommands(help string) []string {
	_, section, ok := strings.Cut(help, "\nCommands:\n")
	if !ok {
		return nil
	}
	var names []string
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "  ") {
			break
		}
		names = append(names, strings.Fields(line)[0])
	}
	return names
}

var _ = Describe("the command line", Label("cli"), func() {
	It("exports memories through the daemon and imports them into a fresh data directory, with and without a daemon; a second import changes nothing", func() {
		src := NewWorld()
		d := StartDaemon(src)
		seed := strings.Join([]string{
			`{"store":"global","label":"Use tabs","content":"Go code uses tabs.","confidence":8}`,
			`{"store":"acme/app","label":"Deploy","content":"make deploy","branch":"main"}`,
			`{"store":"acme/app","label":"Old build","content":"make all","archived":true}`,
			`{"store":"acme/app","label":"","content":"a line with no label"}`,
		}, "\n") + "\n"

		By("importing from stdin through the running daemon: bad lines are named, the rest lands")
		code, out, errOut := thatchCLI(src, seed, "memory", "import", "-", "--config", src.ThatchConfig)
		Expect(code).To(Equal(1), "a refused line makes the exit code 1")
		Expect(out).To(ContainSubstring("added 3, updated 0, unchanged 0, refused 1"))
		Expect(errOut).To(ContainSubstring("line 4: no label"))
		// The running daemon holds the data directory: the import went
		// through it, as the store cannot be opened beside it.

		By("exporting through the daemon")
		code, export, errOut := thatchCLI(src, "", "memory", "export", "--config", src.ThatchConfig)
		Expect(code).To(Equal(0), errOut)
		Expect(strings.Split(strings.TrimSpace(export), "\n")).To(HaveLen(3))
		file := filepath.Join(src.Root, "memories.jsonl")
		Expect(os.WriteFile(file, []byte(export), 0o600)).To(Succeed())
		d.Stop()

		By("importing into a fresh data directory with no daemon")
		dst := NewWorld()
		code, out, errOut = thatchCLI(dst, "", "memory", "import", file, "--config", dst.ThatchConfig)
		Expect(code).To(Equal(0), errOut)
		Expect(out).To(ContainSubstring("added 3, updated 0, unchanged 0, refused 0"))
		code, again, errOut := thatchCLI(dst, "", "memory", "export", "--config", dst.ThatchConfig)
		Expect(code).To(Equal(0), errOut)
		Expect(withoutTimes(again)).To(Equal(withoutTimes(export)))

		By("importing the same file again through a daemon on the new data directory")
		StartDaemon(dst)
		code, out, errOut = thatchCLI(dst, "", "memory", "import", file, "--config", dst.ThatchConfig)
		Expect(code).To(Equal(0), errOut)
		Expect(out).To(ContainSubstring("added 0, updated 0, unchanged 3, refused 0"))
		code, out, _ = thatchCLI(dst, "", "memory", "search", "deploy", "--store", "acme/app", "--branch", "main", "--config", dst.ThatchConfig)
		Expect(code).To(Equal(0))
		Expect(out).To(ContainSubstring("deploy"), "the imported memory is recalled: its embedding was computed")
	})

	It("prints every command's help, and only its own flags, with exit code 0", func() {
		w := NewWorld()
		code, top, _ := thatchCLI(w, "", "--help")
		Expect(code).To(Equal(0))
		queue := [][]string{}
		for _, name := range helpCommands(top) {
			queue = append(queue, []string{name})
		}
		Expect(queue).To(ContainElements([]string{"memory"}, []string{"completion"}, []string{"hygiene"}))
		seen := 0
		for len(queue) > 0 {
			words := queue[0]
			queue = queue[1:]
			code, help, errOut := thatchCLI(w, "", append(append([]string{}, words...), "--help")...)
			Expect(code).To(Equal(0), "thatch %s --help: %s", strings.Join(words, " "), errOut)
			Expect(help).To(HavePrefix("Usage: thatch " + strings.Join(words, " ")))
			if words[0] != "serve" {
				Expect(help).NotTo(ContainSubstring("--control-listen"), "thatch %s --help lists the daemon's flags", strings.Join(words, " "))
			}
			for _, sub := range helpCommands(help) {
				queue = append(queue, append(append([]string{}, words...), sub))
			}
			seen++
		}
		Expect(seen).To(BeNumerically(">", 15))

		code, _, errOut := thatchCLI(w, "", "hygiene", "--no-such-flag")
		Expect(code).To(Equal(2))
		Expect(errOut).To(ContainSubstring("unknown flag: --no-such-flag"))
	})
})
