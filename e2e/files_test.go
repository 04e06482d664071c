package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/thatch-run/thatch/e2e/fakefeishu"
)

// Files, photos and voice notes from the phone: each is saved in the
// inbox of the binding's directory (<dir>/.thatch/inbox, kept out of git
// by its own .gitignore) and its path typed to the agent, the caption
// after it, so that the agent can open it. This is the journey through
// the built daemon on each platform; the edges of it (a name that climbs
// out of the inbox, a file too large for the platform, a text sent behind
// a file that still downloads, a caption) are proved in process with the
// same fakes, tmux and agent in im/front/scenarios_files_test.go.
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
		BeforeEach(func() {
			iw = NewIMWorld()
			StartDaemon(iw.World)
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
	})

	Context("on Feishu", func() {
		var fw *FeishuWorld
		BeforeEach(func() {
			fw = NewFeishuWorld()
			fw.Start()
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
	})
})
