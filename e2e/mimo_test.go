package e2e

import (
	"database/sql"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"
	_ "modernc.org/sqlite"
)

// mimo (MiMo Code) cannot run here: e2e/fakemimo stands in for it, keeping
// its sessions in SQLite as the real one does. These prove that thatch
// lists mimo's sessions from that database, resumes the one picked, and
// relays replies from the database's messages.
var _ = Describe("IM with mimo's database", Label("im", "mimo"), func() {
	var iw *IMWorld
	var d *Daemon

	BeforeEach(func() {
		iw = NewIMWorld()
		useFakeMimo(iw)
		d = StartDaemon(iw.World)
	})

	AfterEach(func() {
		if CurrentSpecReport().Failed() && d != nil {
			GinkgoWriter.Println(d.Log())
			out, _ := iw.Tmux("list-windows", "-a", "-F", "#{window_id} #{window_name} #{pane_current_command}")
			GinkgoWriter.Println("tmux windows:", out)
		}
	})

	It("lists mimo's sessions from its SQLite database, resumes the one picked, and relays its replies from the database", func() {
		dir := filepath.Join(iw.Projects, "api")
		earlier := exec.Command(filepath.Join(iw.Root, "bin", "mimo"))
		earlier.Dir, earlier.Env, earlier.Stdin = dir, iw.Env, strings.NewReader("an earlier task\n")
		out, err := earlier.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "the fake mimo: %s", out)
		sessions := mimoSessions(iw)
		Expect(sessions).To(HaveLen(1))

		thread := iw.BeginSetup("mimo resume", "mimo", "continue")
		iw.Press(thread, imUser, iw.Prompt(thread, "Working directory: "+iw.Projects), "api")
		iw.Press(thread, imUser, iw.Prompt(thread, "Working directory: "+dir), "Use this directory")
		iw.Press(thread, imUser, iw.Prompt(thread, "Resume one?"), "an earlier task")

		By("the reply comes from the database: without the frame the pane shows, once")
		Eventually(iw.Said(thread)).Should(ContainElement("echo: continue"))
		Expect(iw.Said(thread)()).NotTo(ContainElement(ContainSubstring("┃")), "nothing was read off the pane")
		Expect(mimoPrompts(iw, sessions[0])).To(Equal([]string{"an earlier task", "continue"}), "the picked session, resumed")
		Expect(mimoSessions(iw)).To(HaveLen(1), "no new session")
		Expect(iw.BindingSession(d, thread)).To(Equal(sessions[0]))

		iw.TG.Message(imChat, thread, imUser, "and more")
		Eventually(iw.Said(thread)).Should(ContainElement("echo: and more"))
		Expect(iw.Echoes(thread)).To(Equal([]string{"echo: continue", "echo: and more"}), "the earlier reply is history, not relayed")

		By("/history reads the session's exchanges from the database")
		iw.TG.Message(imChat, thread, imUser, "/history 2")
		Eventually(iw.Said(thread)).Should(ContainElement(And(ContainSubstring("▶ continue\necho: continue"), ContainSubstring("▶ and more\necho: and more"))))
	})

	It("relays a new mimo session's replies from the database once mimo has made it", func() {
		thread := iw.Setup("mimo new", "mimo", "web", "hello mimo")
		Eventually(iw.Said(thread)).Should(ContainElement("echo: hello mimo"))
		iw.TG.Message(imChat, thread, imUser, "second")
		Eventually(iw.Said(thread)).Should(ContainElement("echo: second"))
		Expect(iw.Echoes(thread)).To(Equal([]string{"echo: hello mimo", "echo: second"}))
		Expect(iw.Said(thread)()).NotTo(ContainElement(ContainSubstring("┃")), "nothing was read off the pane")
		sessions := mimoSessions(iw)
		Expect(sessions).To(HaveLen(1))
		Expect(iw.BindingSession(d, thread)).To(Equal(sessions[0]))
	})
})

var fakeMimo struct {
	once sync.Once
	path string
	err  error
}

// useFakeMimo makes the world's mimo the fake that keeps a database, and
// gives it its resume line (the suite's fakeagent mimo keeps none); call
// it before the daemon starts.
func useFakeMimo(iw *IMWorld) {
	GinkgoHelper()
	fakeMimo.once.Do(func() {
		fakeMimo.path, fakeMimo.err = gexec.Build("github.com/thatch-run/thatch/e2e/fakemimo")
	})
	Expect(fakeMimo.err).NotTo(HaveOccurred())
	exe := filepath.Join(iw.Root, "bin", "mimo")
	Expect(os.Remove(exe)).To(Succeed())
	Expect(os.Symlink(fakeMimo.path, exe)).To(Succeed())
	cfg, err := os.ReadFile(iw.ThatchConfig)
	Expect(err).NotTo(HaveOccurred())
	lines := strings.Split(string(cfg), "\n")
	for i := 0; i+2 < len(lines); i++ {
		if lines[i] == "[im.agents.mimo]" && strings.HasPrefix(lines[i+2], "resume = ") {
			lines[i+2] = "resume = " + quote(exe+" --resume {session_id}")
			Expect(os.WriteFile(iw.ThatchConfig, []byte(strings.Join(lines, "\n")), 0o644)).To(Succeed())
			return
		}
	}
	Fail("the config has no resume line for mimo")
}

// mimoDB opens the fake mimo's database read only.
func mimoDB(iw *IMWorld) *sql.DB {
	GinkgoHelper()
	path := filepath.Join(iw.Home, ".local", "share", "mimocode", "mimocode.db")
	db, err := sql.Open("sqlite", (&url.URL{Scheme: "file", Path: path, RawQuery: "mode=ro&_pragma=busy_timeout(5000)"}).String())
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(db.Close)
	return db
}

// mimoSessions returns the ids of the sessions in mimo's database, oldest
// first.
func mimoSessions(iw *IMWorld) []string {
	GinkgoHelper()
	rows, err := mimoDB(iw).Query(`SELECT id FROM session ORDER BY time_created`)
	Expect(err).NotTo(HaveOccurred())
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		Expect(rows.Scan(&id)).To(Succeed())
		out = append(out, id)
	}
	Expect(rows.Err()).NotTo(HaveOccurred())
	return out
}

// mimoPrompts returns the text the user's messages of session hold, in
// order.
func mimoPrompts(iw *IMWorld, session string) []string {
	GinkgoHelper()
	rows, err := mimoDB(iw).Query(`SELECT json_extract(p.data, '$.text') FROM part p JOIN message m ON m.id = p.message_id
		WHERE m.session_id = ? AND json_extract(m.data, '$.role') = 'user' ORDER BY m.time_created, p.id`, session)
	Expect(err).NotTo(HaveOccurred())
	defer rows.Close()
	var out []string
	for rows.Next() {
		var t string
		Expect(rows.Scan(&t)).To(Succeed())
		out = append(out, t)
	}
	Expect(rows.Err()).NotTo(HaveOccurred())
	return out
}
