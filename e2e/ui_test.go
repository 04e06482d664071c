package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/chromedp/chromedp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"
)

// chromiumPath is where Debian's chromium package puts the browser
// (.ci/run installs it).
const chromiumPath = "/usr/bin/chromium"

// artifacts is a folder for pictures a spec keeps for a person to look
// at (name-TIME-pPROC): under $THATCH_E2E_ARTIFACTS, else under a folder
// in the system temp dir that outlives the spec's world.
func artifacts(name string) string {
	root := os.Getenv("THATCH_E2E_ARTIFACTS")
	if root == "" {
		root = filepath.Join(os.TempDir(), "thatch-e2e-artifacts")
	}
	dir := filepath.Join(root, fmt.Sprintf("%s-%s-p%d", name, time.Now().UTC().Format("20060102T150405"), GinkgoParallelProcess()))
	Expect(os.MkdirAll(dir, 0o755)).To(Succeed())
	return dir
}

// UICodeCLI runs `thatch ui` and returns the login URL it prints.
func UICodeCLI(w *World) string {
	GinkgoHelper()
	cmd := exec.Command(bins.Thatch, "ui", "--config", w.ThatchConfig)
	cmd.Env = w.Env
	sess, err := gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
	Expect(err).NotTo(HaveOccurred())
	Eventually(sess, 30*time.Second).Should(gexec.Exit(0), "thatch ui failed:\n%s", sess.Err.Contents())
	u := strings.TrimSpace(string(sess.Out.Contents()))
	Expect(u).To(MatchRegexp(`^http://127\.0\.0\.1:\d+/ui/login\?code=[0-9a-f]+$`))
	return u
}

var _ = Describe("the web page", Label("ui"), func() {
	It("logs in with the code of thatch ui, searches, forgets a memory and judges a pair in a real Chromium", func() {
		if _, err := os.Stat(chromiumPath); err != nil {
			Fail(chromiumPath + " is missing: apt-get install chromium (.ci/run installs it)")
		}
		w := NewWorld()
		d := StartDaemon(w)
		remember := func(label, content string) {
			GinkgoHelper()
			Expect(d.Post("/v1/memory/remember", map[string]any{"label": label, "content": content, "store": "global", "confidence": 7}, nil)).To(Succeed(), "seeding %q", label)
		}
		remember("deploy checklist", "before a deploy run make check and tag the release <b>by hand</b>")
		remember("editor setup", "the team uses gofmt on save and tabs for indentation")
		remember("run tests", "run the tests with make test before every commit")
		remember("run the tests", "run the tests with make test before each commit")
		Expect(HygieneCLI(w)).To(ContainSubstring(`"A": "run-tests"`), "the two test memories are a pair to judge")

		shots := artifacts("ui")
		fmt.Fprintf(GinkgoWriter, "UI screenshots go to %s\n", shots)
		AddReportEntry("ui screenshots", shots)
		login := UICodeCLI(w)

		opts := append(chromedp.DefaultExecAllocatorOptions[:],
			chromedp.ExecPath(chromiumPath),
			chromedp.Flag("headless", "new"),
			chromedp.NoSandbox,
			chromedp.DisableGPU,
			chromedp.UserDataDir(filepath.Join(w.Root, "chromium")),
			chromedp.Flag("no-proxy-server", true),
			chromedp.Flag("disable-component-update", true),
			chromedp.Flag("disable-domain-reliability", true),
			chromedp.Flag("dns-prefetch-disable", true),
			chromedp.WindowSize(1280, 900),
		)
		actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		DeferCleanup(cancelAlloc)
		bctx, cancelBrowser := chromedp.NewContext(actx, chromedp.WithLogf(func(f string, a ...any) { fmt.Fprintf(GinkgoWriter, "[chromedp] "+f+"\n", a...) }))
		DeferCleanup(cancelBrowser)
		// The first action starts the browser; its context must not time
		// out, or the browser stops with it.
		Expect(chromedp.Do(bctx, chromedp.Navigate("about:blank"))).To(Succeed(), "start chromium")
		run := func(what string, steps ...chromedp.Action[chromedp.Void]) {
			GinkgoHelper()
			ctx, cancel := context.WithTimeout(bctx, 60*time.Second)
			defer cancel()
			Expect(chromedp.Do(ctx, steps...)).To(Succeed(), what)
		}
		get := func(what string, a chromedp.Action[string]) string {
			GinkgoHelper()
			ctx, cancel := context.WithTimeout(bctx, 60*time.Second)
			defer cancel()
			v, err := chromedp.Run(ctx, a)
			Expect(err).NotTo(HaveOccurred(), what)
			return v
		}
		shot := func(name string) {
			GinkgoHelper()
			ctx, cancel := context.WithTimeout(bctx, 60*time.Second)
			defer cancel()
			png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
			Expect(err).NotTo(HaveOccurred(), "screenshot "+name)
			path := filepath.Join(shots, name+".png")
			Expect(os.WriteFile(path, png, 0o644)).To(Succeed())
			fmt.Fprintf(GinkgoWriter, "screenshot: %s\n", path)
		}
		body := func() string {
			GinkgoHelper()
			return get("read the page", chromedp.Text(chromedp.CSS("body")))
		}
		base := strings.Split(login, "/ui/")[0]

		By("logging in with the one-time URL")
		run("open the login URL", chromedp.Navigate(login), chromedp.WaitVisible(chromedp.ID("count")))
		text := body()
		Expect(text).To(ContainSubstring("4 memories in global"))
		Expect(text).To(ContainSubstring("<b>by hand</b>"), "markup in a memory is shown as text")
		shot("01-memories")

		By("searching with the store's recall")
		run("search", chromedp.SetValue(chromedp.ID("q"), "deploy release"), chromedp.Click(chromedp.ID("search")),
			chromedp.WaitVisible(chromedp.Search(`//p[@id="count" and contains(., "hits for")]`)))
		first := get("first hit", chromedp.Text(chromedp.CSS(`#memories tbody tr:first-child a.label`)))
		Expect(first).To(Equal("deploy checklist"))
		shot("02-search")

		By("forgetting a memory and seeing it gone")
		run("list", chromedp.Navigate(base+"/ui/memories?store=global"), chromedp.WaitVisible(chromedp.CSS(`tr[data-slug="editor-setup"]`)))
		run("forget", chromedp.Click(chromedp.CSS(`button.forget[data-slug="editor-setup"]`)),
			chromedp.WaitVisible(chromedp.Search(`//p[@id="flash" and contains(., "forgot editor setup")]`)))
		Expect(body()).To(ContainSubstring("3 memories in global"))
		rows := get("count the rows", chromedp.Evaluate[string](`String(document.querySelectorAll('tr[data-slug="editor-setup"]').length)`))
		Expect(rows).To(Equal("0"))
		Expect(MemoryListCLI(w)).NotTo(ContainSubstring("editor-setup"), "the daemon forgot it too")
		shot("03-forgotten")

		By("judging a hygiene pair")
		run("hygiene", chromedp.Click(chromedp.Search(`//a[.="hygiene"]`)), chromedp.WaitVisible(chromedp.CSS(`tr.pair[data-a="run-tests"]`)))
		shot("04-hygiene")
		run("distinct", chromedp.Click(chromedp.CSS(`tr.pair[data-a="run-tests"] button.distinct`)),
			chromedp.WaitVisible(chromedp.Search(`//p[@id="flash" and contains(., "are distinct")]`)),
			chromedp.WaitVisible(chromedp.ID("clean")))
		Expect(HygieneCLI(w)).NotTo(ContainSubstring(`"A": "run-tests"`), "the verdict is recorded in the daemon")
		shot("05-judged")

		By("the other pages render")
		run("sessions", chromedp.Click(chromedp.Search(`//a[contains(., "sessions")]`)), chromedp.WaitVisible(chromedp.Search(`//h2[contains(., "sessions")]`)))
		shot("06-sessions")
		run("im", chromedp.Click(chromedp.Search(`//a[.="IM bindings"]`)), chromedp.WaitVisible(chromedp.Search(`//h2[contains(., "IM bindings")]`)))
		shot("07-im")

		By("the used login URL does not work again")
		run("reuse the code", chromedp.Navigate(login), chromedp.WaitVisible(chromedp.ID("message")))
		Expect(body()).To(ContainSubstring("unknown, used or expired"))
	})
})

// HygieneCLI runs `thatch hygiene --json` and returns its output.
func HygieneCLI(w *World) string {
	GinkgoHelper()
	cmd := exec.Command(bins.Thatch, "hygiene", "--json", "--config", w.ThatchConfig)
	cmd.Env = w.Env
	out, err := cmd.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "thatch hygiene: %s", out)
	return string(out)
}
