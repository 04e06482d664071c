package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"
)

func TestE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "thatch e2e")
}

// cacheDir is where the suite keeps what it downloads between runs.
func cacheDir() string {
	if d := os.Getenv("THATCH_E2E_CACHE"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	Expect(err).NotTo(HaveOccurred())
	return filepath.Join(home, ".cache", "thatch-e2e")
}

var _ = SynchronizedBeforeSuite(func() []byte {
	var b Binaries
	var err error
	b.Thatch, err = gexec.Build("github.com/thatch-run/thatch/cmd/thatch")
	Expect(err).NotTo(HaveOccurred())
	b.FakeAgent, err = gexec.Build("github.com/thatch-run/thatch/e2e/fakeagent")
	Expect(err).NotTo(HaveOccurred())
	b.NPMCache = filepath.Join(cacheDir(), "npm")

	// The pinned opencode, from npm into the cache (quick when it is there).
	script, err := filepath.Abs("install-opencode.sh")
	Expect(err).NotTo(HaveOccurred())
	cmd := exec.Command("bash", script)
	cmd.Stderr = GinkgoWriter
	out, err := cmd.Output()
	if err != nil {
		b.OpenCodeErr = "install-opencode.sh: " + err.Error()
	} else {
		b.OpenCode = strings.TrimSpace(string(out))
	}
	// The pinned real claude and codex, from npm into the cache.
	script, err = filepath.Abs("install-agents.sh")
	Expect(err).NotTo(HaveOccurred())
	// Bounded: an npm that cannot reach its registry must not hang the
	// suite (the specs that need the agents then fail with the reason).
	ictx, icancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer icancel()
	cmd = exec.CommandContext(ictx, "bash", script)
	cmd.Stderr = GinkgoWriter
	if out, err := cmd.Output(); err != nil {
		b.AgentsErr = "install-agents.sh: " + err.Error()
	} else {
		for _, line := range strings.Split(string(out), "\n") {
			if v, ok := strings.CutPrefix(line, "claude="); ok {
				b.Claude = v
			}
			if v, ok := strings.CutPrefix(line, "codex="); ok {
				b.Codex = v
			}
		}
	}

	// opencode's glob and skill tools run ripgrep; without one on PATH it
	// tries to download it from GitHub.
	if _, err := exec.LookPath("rg"); err != nil && b.OpenCode != "" {
		b.OpenCode, b.OpenCodeErr = "", "ripgrep (rg) is not on PATH; opencode's glob and skill tools need it: apt-get install ripgrep"
	}

	// One real `thatch install` fills a template config folder with the
	// plugin's npm dependency; each world hard-links it instead of running
	// npm again.
	if b.OpenCode != "" {
		bins = b
		version, err := os.ReadFile("opencode.version")
		Expect(err).NotTo(HaveOccurred())
		tpl := filepath.Join(cacheDir(), "deps-"+strings.TrimSpace(string(version)))
		if _, err := os.Stat(filepath.Join(tpl, "opencode", "node_modules", "@opencode-ai", "plugin")); err != nil {
			w := &World{ConfigHome: tpl}
			tmp := GinkgoT().TempDir()
			cmd := exec.Command(b.Thatch, "install", "opencode", "--global", "--data-dir", tmp)
			cmd.Env = []string{"PATH=" + filepath.Dir(b.OpenCode) + ":" + os.Getenv("PATH"), "HOME=" + tmp,
				"XDG_CONFIG_HOME=" + w.ConfigHome, "npm_config_cache=" + b.NPMCache, "npm_config_update_notifier=false"}
			cmd.Stdout, cmd.Stderr = GinkgoWriter, GinkgoWriter
			Expect(cmd.Run()).To(Succeed(), "thatch install into the dependency template")
			// Keep only what npm wrote.
			for _, sub := range []string{"plugin", "command", "skills"} {
				Expect(os.RemoveAll(filepath.Join(tpl, "opencode", sub))).To(Succeed())
			}
		}
		b.Deps = filepath.Join(tpl, "opencode")
	}
	js, err := json.Marshal(b)
	Expect(err).NotTo(HaveOccurred())
	return js
}, func(js []byte) {
	Expect(json.Unmarshal(js, &bins)).To(Succeed())
	SetDefaultEventuallyTimeout(90 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
})

var _ = SynchronizedAfterSuite(func() {}, func() {
	gexec.CleanupBuildArtifacts()
})
