package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/thatch-run/thatch/e2e/fakefeishu"
	"github.com/thatch-run/thatch/e2e/faketelegram"
)

// Files, photos and voice notes from the phone: each is saved in the
// inbox of the binding's directory (<dir>/.thatch/inbox, kept out of git
// by its own .gitignore) and its path typed to the agent, the caption
// after it, so that the agent can open it. A file too large for the
// platform is refused with a clear answer and nothing is typed.
var _ = Describe("Files from the chat", Label("im", "files"), func() {
	// stamped matches a saved file's path in dir's inbox: a time stamp,
	// then name.
	stamped := func(dir, name string) string {
		return regexp.QuoteMeta(filepath.Join(dir, ".thatch", "inbox")+"/") + `\d{8}-\d{6}-` + regexp.QuoteMeta(name)
	}
	// savedPath is the path a typed file line names.
	savedPath := func(line string) string {
		path, _, _ := strings.Cut(strings.TrimPrefix(line, "[file: "), "]")
		return path
	}
	// inboxFiles lists an inbox's files but its .gitignore.
	inboxFiles := func(dir string) []string {
		entries, _ := os.ReadDir(filepath.Join(dir, ".thatch", "inbox"))
		var out []string
		for _, e := range entries {
			if e.Name() != ".gitignore" {
				out = append(out, e.Name())
			}
		}
		return out
	}

	Context("on Telegram", func() {
		var iw *IMWorld
		var d *Daemon
		BeforeEach(func() {
			iw = NewIMWorld()
			d = StartDaemon(iw.World)
		})

		It("saves a photo and a document under the inbox and types their paths", func() {
			thread := iw.Setup("files", "claude", "api", "first")
			dir := filepath.Join(iw.Projects, "api")
			Eventually(iw.Said(thread)).Should(ContainElement("echo: first"))

			By("a photo, at its largest size, with its caption")
			photo := []byte("\xff\xd8 the largest photo \xff\xd9")
			iw.TG.PhotoFile(imChat, thread, imUser, photo, "the failing screen")
			Eventually(iw.UserLines("claude")).Should(HaveLen(2))
			line := iw.UserLines("claude")()[1]
			Expect(line).To(MatchRegexp(`^\[file: ` + stamped(dir, "photo.jpg") + `\] the failing screen$`))
			Expect(os.ReadFile(savedPath(line))).To(Equal(photo))
			Expect(os.ReadFile(filepath.Join(dir, ".thatch", "inbox", ".gitignore"))).To(ContainSubstring("\n*\n"))

			By("a document keeps its name")
			doc := []byte("# design\n")
			iw.TG.Document(imChat, thread, imUser, "design.md", doc, "")
			Eventually(iw.UserLines("claude")).Should(HaveLen(3))
			line = iw.UserLines("claude")()[2]
			Expect(line).To(MatchRegexp(`^\[file: ` + stamped(dir, "design.md") + `\]$`))
			Expect(os.ReadFile(savedPath(line))).To(Equal(doc))
		})

		It("keeps a file named ../../etc/passwd inside the inbox", func() {
			thread := iw.Setup("climb", "claude", "web", "first")
			dir := filepath.Join(iw.Projects, "web")
			Eventually(iw.Said(thread)).Should(ContainElement("echo: first"))
			data := []byte("not the real one\n")
			iw.TG.Document(imChat, thread, imUser, "../../etc/passwd", data, "what is this?")
			Eventually(iw.UserLines("claude")).Should(HaveLen(2))
			line := iw.UserLines("claude")()[1]
			Expect(line).To(MatchRegexp(`^\[file: ` + stamped(dir, "passwd") + `\] what is this\?$`))
			Expect(os.ReadFile(savedPath(line))).To(Equal(data))
			Expect(inboxFiles(dir)).To(HaveLen(1))
			Expect(filepath.Join(iw.Projects, "etc")).NotTo(BeAnExistingFile())
		})

		It("refuses a file over the 20 MB a bot may download, and types nothing", func() {
			thread := iw.Setup("big", "claude", "docs", "first")
			dir := filepath.Join(iw.Projects, "docs")
			Eventually(iw.Said(thread)).Should(ContainElement("echo: first"))
			iw.TG.BigDocument(imChat, thread, imUser, "huge.iso", faketelegram.MaxDownload+1, "look")
			Eventually(iw.Said(thread)).Should(ContainElement(And(
				HavePrefix("The document huge.iso is too large to take"), ContainSubstring("nothing was given to the agent"))))
			iw.TG.Message(imChat, thread, imUser, "second")
			Eventually(iw.Said(thread)).Should(ContainElement("echo: second"))
			iw.Settled(d, thread)
			Expect(iw.UserLines("claude")()).To(Equal([]string{"first", "second"}))
			Expect(inboxFiles(dir)).To(BeEmpty())
		})

		It("types a text, a file and a text in the order they were sent", func() {
			thread := iw.Setup("order", "claude", "api", "first")
			dir := filepath.Join(iw.Projects, "api")
			Eventually(iw.Said(thread)).Should(ContainElement("echo: first"))
			release := iw.TG.HoldDownloads()
			DeferCleanup(release)
			iw.TG.Message(imChat, thread, imUser, "before")
			iw.TG.Document(imChat, thread, imUser, "notes.md", []byte("notes"), "read this")
			Eventually(iw.TG.HeldDownloads).Should(Equal(1))
			iw.TG.Message(imChat, thread, imUser, "after")
			Eventually(iw.Said(thread)).Should(ContainElement("echo: before"))
			release()
			Eventually(iw.UserLines("claude")).Should(HaveLen(4))
			lines := iw.UserLines("claude")()
			Expect(lines[0:2]).To(Equal([]string{"first", "before"}))
			Expect(lines[2]).To(MatchRegexp(`^\[file: ` + stamped(dir, "notes.md") + `\] read this$`))
			Expect(lines[3]).To(Equal("after"))
		})
	})

	Context("on Feishu", func() {
		var fw *FeishuWorld
		var d *Daemon
		BeforeEach(func() {
			fw = NewFeishuWorld()
			d = fw.Start()
		})

		// fileEvent delivers a message of msgType with content from the
		// user.
		fileEvent := func(messageID, msgType string, content map[string]any) {
			fw.FS.Received(fsChat, messageID)
			fw.Deliver(fw.Event("im.message.receive_v1",
				fakefeishu.FileMessage(messageID, fsChat, "group", "", fsUser, msgType, content)))
		}

		It("saves an image and a file under the inbox, keeps ../../etc/passwd inside it, and types their paths", func() {
			fw.Setup(fsChat, fsName, "claude", "api", "first")
			dir := filepath.Join(fw.Projects, "api")
			Eventually(fw.Said(fsChat)).Should(ContainElement("echo: first"))

			By("an image")
			img := []byte("\x89PNG a picture")
			fw.FS.AddResource("om_e2e_img", "img_v2_e2e", "image", img)
			fileEvent("om_e2e_img", "image", map[string]any{"image_key": "img_v2_e2e"})
			Eventually(fw.UserLines("claude")).Should(HaveLen(2))
			line := fw.UserLines("claude")()[1]
			Expect(line).To(MatchRegexp(`^\[file: ` + stamped(dir, "photo.jpg") + `\]$`))
			Expect(os.ReadFile(savedPath(line))).To(Equal(img))

			By("a file named to climb out of the inbox")
			doc := []byte("a log\n")
			fw.FS.AddResource("om_e2e_file", "file_v2_e2e", "file", doc)
			fileEvent("om_e2e_file", "file", map[string]any{"file_key": "file_v2_e2e", "file_name": "../../etc/passwd"})
			Eventually(fw.UserLines("claude")).Should(HaveLen(3))
			line = fw.UserLines("claude")()[2]
			Expect(line).To(MatchRegexp(`^\[file: ` + stamped(dir, "passwd") + `\]$`))
			Expect(os.ReadFile(savedPath(line))).To(Equal(doc))
			Expect(inboxFiles(dir)).To(HaveLen(2))
		})

		It("refuses a file over Feishu's limit, and types nothing", func() {
			fw.Setup(fsChat, fsName, "claude", "docs", "first")
			dir := filepath.Join(fw.Projects, "docs")
			Eventually(fw.Said(fsChat)).Should(ContainElement("echo: first"))
			fw.FS.AddBigResource("om_e2e_big", "file_v2_big", "file", fakefeishu.MaxResource+1)
			fileEvent("om_e2e_big", "file", map[string]any{"file_key": "file_v2_big", "file_name": "huge.iso"})
			Eventually(fw.Said(fsChat)).Should(ContainElement(HavePrefix("The document huge.iso is too large to take")))
			fw.Settled(d, fsChat)
			Expect(fw.UserLines("claude")()).To(Equal([]string{"first"}))
			Expect(inboxFiles(dir)).To(BeEmpty())
		})
	})
})
