package e2e

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/onsi/gomega/gexec"

	"github.com/thatch-run/thatch/hosts/control"
)

// Daemon is one `thatch serve` of a World.
type Daemon struct {
	w    *World
	Sess *gexec.Session
}

// StartDaemon runs `thatch serve` with the world's config and waits until
// its control API listens. Cleanup kills it (by its PID) if it still runs.
func StartDaemon(w *World) *Daemon {
	cmd := exec.Command(bins.Thatch, "serve", "--config", w.ThatchConfig)
	cmd.Env = w.Env
	cmd.Dir = w.Root
	sess, err := gexec.Start(cmd, gexec.NewPrefixedWriter("[thatch] ", GinkgoWriter), gexec.NewPrefixedWriter("[thatch] ", GinkgoWriter))
	Expect(err).NotTo(HaveOccurred())
	d := &Daemon{w: w, Sess: sess}
	DeferCleanup(func() {
		if sess.ExitCode() == -1 {
			sess.Terminate()
			Eventually(sess, 30*time.Second).Should(gexec.Exit())
		}
	})
	Eventually(sess.Err, 60*time.Second).Should(gbytes.Say("control API listening"))
	return d
}

// Kill sends SIGKILL to the daemon and waits for it to die.
func (d *Daemon) Kill() {
	d.Sess.Signal(syscall.SIGKILL)
	Eventually(d.Sess, 30*time.Second).Should(gexec.Exit())
}

// Stop sends SIGTERM and waits for a clean exit.
func (d *Daemon) Stop() {
	d.Sess.Terminate()
	Eventually(d.Sess, 30*time.Second).Should(gexec.Exit(0))
}

// Log returns everything the daemon wrote to stderr so far.
func (d *Daemon) Log() string { return string(d.Sess.Err.Contents()) }

// LogMatcher is a polling function for Eventually: the daemon's log
// matches re.
func (d *Daemon) LogMatches(re string) func() bool {
	rx := regexp.MustCompile(re)
	return func() bool { return rx.MatchString(d.Log()) }
}

// Install runs `thatch install opencode` with args against the world's
// daemon config and returns its stdout.
func Install(w *World, args ...string) string {
	all := append([]string{"install", "opencode", "--config", w.ThatchConfig}, args...)
	cmd := exec.Command(bins.Thatch, all...)
	cmd.Env = w.Env
	cmd.Dir = w.Root
	sess, err := gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
	Expect(err).NotTo(HaveOccurred())
	Eventually(sess, 5*time.Minute).Should(gexec.Exit(0), "thatch install failed:\n%s", sess.Err.Contents())
	return string(sess.Out.Contents())
}

// Client returns a control API client for the running daemon.
func (d *Daemon) Client() *control.Client {
	c, _, err := control.Dial(filepath.Join(d.w.DataDir, "control.json"), filepath.Join(d.w.DataDir, "control.token"), 10*time.Second)
	Expect(err).NotTo(HaveOccurred())
	return c
}

// Post sends a plugin-style call to the control API.
func (d *Daemon) Post(path string, in, out any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return d.Client().Do(ctx, "POST", path, in, out)
}

// Quiesce waits until the daemon has nothing more to do without new input
// (every effect released has run, every result was handled): what it has
// not done by then, it will not do. Specs prove a negative with it, not
// with a time window.
func (d *Daemon) Quiesce() {
	GinkgoHelper()
	Eventually(func() error { return d.Post("/v1/quiesce", map[string]any{}, nil) }).Should(Succeed(), "the daemon did not come to rest")
}

// Family is one session family as `thatch status --json` shows it.
type Family struct {
	SessionID       string         `json:"sessionID"`
	Deleted         bool           `json:"deleted"`
	Pending         int            `json:"pending"`
	Accepted        int            `json:"accepted"`
	Claims          map[string]int `json:"claims"`
	Extracting      bool           `json:"extracting"`
	ExtractionChild string         `json:"extractionChild"`
	Compacting      bool           `json:"compacting"`
	Children        []struct {
		SessionID string `json:"sessionID"`
		Kind      string `json:"kind"`
		Claimed   int    `json:"claimed"`
		Buffered  int    `json:"buffered"`
		Finishing bool   `json:"finishing"`
	} `json:"children"`
	WrapUp *struct {
		Kind     string `json:"kind"`
		Token    string `json:"token"`
		Checking bool   `json:"checking"`
	} `json:"wrapUp"`
	Error string `json:"error"`
}

// HasChild reports whether the family records child id.
func (f Family) HasChild(id string) bool {
	for _, c := range f.Children {
		if c.SessionID == id {
			return true
		}
	}
	return false
}

// ChildKind returns the recorded kind of child id, "" if not recorded.
func (f Family) ChildKind(id string) string {
	for _, c := range f.Children {
		if c.SessionID == id {
			return c.Kind
		}
	}
	return ""
}

// statusReport is the part of GET /v1/status the specs read: the
// opencode front end's families.
type statusReport struct {
	FrontEnds struct {
		OpenCode struct {
			Entities []Family `json:"entities"`
		} `json:"opencode"`
	} `json:"frontEnds"`
}

// Families reads GET /v1/status.
func (d *Daemon) Families() map[string]Family {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var st statusReport
	Expect(d.Client().Do(ctx, "GET", "/v1/status", nil, &st)).To(Succeed())
	out := map[string]Family{}
	for _, f := range st.FrontEnds.OpenCode.Entities {
		out[f.SessionID] = f
	}
	return out
}

// Family returns one family from GET /v1/status (zero when unknown).
func (d *Daemon) Family(id string) Family {
	return d.Families()[id]
}

// FamilyOf is a polling function for Eventually.
func (d *Daemon) FamilyOf(id string) func() Family {
	return func() Family { return d.Family(id) }
}

// StatusCLI runs `thatch status --json` as a person would and returns the
// families it shows.
func StatusCLI(w *World) map[string]Family {
	cmd := exec.Command(bins.Thatch, "status", "--json", "--config", w.ThatchConfig)
	cmd.Env = w.Env
	out, err := cmd.Output()
	Expect(err).NotTo(HaveOccurred(), "thatch status --json")
	var st statusReport
	Expect(json.Unmarshal(out, &st)).To(Succeed(), "status output: %s", out)
	fams := map[string]Family{}
	for _, f := range st.FrontEnds.OpenCode.Entities {
		fams[f.SessionID] = f
	}
	return fams
}

// WaitWatching waits until the daemon watches the opencode server at
// hostport and has reconciled with it (its event stream is up).
func (d *Daemon) WaitWatching(hostport string) {
	host := regexp.QuoteMeta("opencode@" + hostport)
	Eventually(d.LogMatches(`watching opencode server: host=`+host), 60*time.Second, 100*time.Millisecond).Should(BeTrue(),
		"the plugin never registered %s with the daemon", hostport)
	Eventually(d.LogMatches(`reconciled: host=`+host), 60*time.Second, 100*time.Millisecond).Should(BeTrue(),
		"the daemon never reconciled with %s", hostport)
}

// CountLog counts the lines of the daemon's log that contain s.
func (d *Daemon) CountLog(s string) int {
	return strings.Count(d.Log(), s)
}

func describeFamily(f Family) string {
	b, _ := json.Marshal(f)
	return string(b)
}

// MemoryListCLI runs `thatch memory list --json` and returns its output.
func MemoryListCLI(w *World) string {
	cmd := exec.Command(bins.Thatch, "memory", "list", "--json", "--config", w.ThatchConfig)
	cmd.Env = w.Env
	out, err := cmd.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "thatch memory list: %s", out)
	return string(out)
}
