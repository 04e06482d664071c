package install

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/thatch-run/thatch/hosts/opencode/plugin"
)

// fakeNPM records its calls and writes what `npm install` leaves behind.
type fakeNPM struct {
	calls []string // dirs
	fail  error
}

func (f *fakeNPM) run(_ context.Context, dir, name string, args ...string) ([]byte, error) {
	f.calls = append(f.calls, dir)
	if f.fail != nil {
		return []byte("npm ERR! network"), f.fail
	}
	spec := args[len(args)-1]
	if name != "npm" || args[0] != "install" || !strings.HasPrefix(spec, PluginPackage+"@") {
		return nil, errors.New("unexpected npm call " + name + " " + strings.Join(args, " "))
	}
	version := strings.TrimPrefix(spec, PluginPackage+"@")
	pkg := filepath.Join(dir, "node_modules", "@opencode-ai", "plugin")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		return nil, err
	}
	deps := `{"dependencies":{"` + PluginPackage + `":"` + version + `"}}`
	for path, content := range map[string]string{
		filepath.Join(pkg, "package.json"):         `{"name":"@opencode-ai/plugin","version":"` + version + `"}`,
		filepath.Join(dir, "package.json"):         deps,
		filepath.Join(dir, "package-lock.json"):    `{"lockfileVersion":3,"packages":{"":` + deps + `}}`,
		filepath.Join(dir, "node_modules", ".pkg"): "",
	} {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

var paths = plugin.Paths{StateFile: "/d/control.json", TokenFile: "/d/control.token"}

func actions(r *Report) map[string]Action {
	out := map[string]Action{}
	for _, c := range r.Changes {
		out[c.What+" "+c.Path] = c.Action
	}
	return out
}

func TestInstall(t *testing.T) {
	for _, tc := range []struct {
		name    string
		scope   Scope
		target  func(root string) string // where files go
		npmDirs func(root string) []string
	}{
		{"global", Global,
			func(root string) string { return filepath.Join(root, "xdg", "opencode") },
			func(root string) []string { return []string{filepath.Join(root, "xdg", "opencode")} }},
		{"project", Project,
			func(root string) string { return filepath.Join(root, "proj", ".opencode") },
			func(root string) []string {
				return []string{filepath.Join(root, "proj", ".opencode"), filepath.Join(root, "xdg", "opencode")}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			if err := os.MkdirAll(filepath.Join(root, "proj"), 0o755); err != nil {
				t.Fatal(err)
			}
			npm := &fakeNPM{}
			o := Options{Scope: tc.scope, ProjectDir: filepath.Join(root, "proj"), Environ: []string{"XDG_CONFIG_HOME=" + filepath.Join(root, "xdg")},
				HomeDir: filepath.Join(root, "home"), Paths: paths, OpenCodeVersion: "1.2.3", Run: npm.run}

			rep, err := Install(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			target := tc.target(root)
			if rep.ConfigDir != target {
				t.Errorf("config dir %s, want %s", rep.ConfigDir, target)
			}
			want, _ := Files(paths)
			for rel, content := range want {
				got, err := os.ReadFile(filepath.Join(target, rel))
				if err != nil || string(got) != string(content) {
					t.Errorf("%s: %v (content matches: %v)", rel, err, string(got) == string(content))
				}
			}
			if !rep.Changed() {
				t.Error("first install reports no change")
			}
			if strings.Join(npm.calls, "|") != strings.Join(tc.npmDirs(root), "|") {
				t.Errorf("npm ran in %v, want %v", npm.calls, tc.npmDirs(root))
			}
			for _, c := range rep.Changes {
				if c.What != "dependencies" && c.Action != Created {
					t.Errorf("%s: %s on first install", c.Path, c.Action)
				}
			}

			t.Run("a second install changes nothing", func(t *testing.T) {
				npm.calls = nil
				rep, err := Install(context.Background(), o)
				if err != nil {
					t.Fatal(err)
				}
				if rep.Changed() || len(npm.calls) != 0 {
					t.Errorf("second install changed %v, npm ran in %v", actions(rep), npm.calls)
				}
			})
			t.Run("only a file that differs is rewritten", func(t *testing.T) {
				exit := filepath.Join(target, "command", "thatch", "exit.md")
				if err := os.WriteFile(exit, []byte("edited"), 0o644); err != nil {
					t.Fatal(err)
				}
				rep, err := Install(context.Background(), o)
				if err != nil {
					t.Fatal(err)
				}
				for _, c := range rep.Changes {
					want := Unchanged
					if c.What == "dependencies" {
						want = Present
					}
					if c.Path == exit {
						want = Updated
					}
					if c.Action != want {
						t.Errorf("%s: %s, want %s", c.Path, c.Action, want)
					}
				}
			})
		})
	}
}

func TestInstallNPM(t *testing.T) {
	root := t.TempDir()
	base := Options{Environ: []string{"XDG_CONFIG_HOME=" + root}, Paths: paths}
	t.Run("a failure says what to do", func(t *testing.T) {
		o := base
		o.Run = (&fakeNPM{fail: errors.New("exit status 1")}).run
		_, err := Install(context.Background(), o)
		if !errors.Is(err, ErrNPM) || !strings.Contains(err.Error(), "--skip-npm") || !strings.Contains(err.Error(), "npm ERR! network") {
			t.Errorf("error %v", err)
		}
	})
	t.Run("skip-npm leaves it to opencode", func(t *testing.T) {
		o := base
		npm := &fakeNPM{}
		o.Run, o.SkipNPM = npm.run, true
		rep, err := Install(context.Background(), o)
		if err != nil || len(npm.calls) != 0 {
			t.Fatalf("err %v, npm calls %v", err, npm.calls)
		}
		if a := rep.Changes[len(rep.Changes)-1].Action; a != Skipped {
			t.Errorf("dependencies %s", a)
		}
	})
	t.Run("the default version is the tested opencode's", func(t *testing.T) {
		o := base
		var spec string
		o.Run = func(_ context.Context, dir, name string, args ...string) ([]byte, error) {
			spec = args[len(args)-1]
			return (&fakeNPM{}).run(context.Background(), dir, name, args...)
		}
		if _, err := Install(context.Background(), o); err != nil {
			t.Fatal(err)
		}
		if spec != PluginPackage+"@"+DefaultOpenCodeVersion {
			t.Errorf("installed %s", spec)
		}
	})
}

func TestPackagePresentFollowsOpenCodesCheck(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "node_modules", "@opencode-ai", "plugin"), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("node_modules/@opencode-ai/plugin/package.json", `{}`)
	write("package.json", `{"dependencies":{"@opencode-ai/plugin":"1.18.33"}}`)
	if PackagePresent(dir) {
		t.Error("present without package-lock.json: opencode would run npm")
	}
	write("package-lock.json", `{"packages":{"":{"dependencies":{"other":"1"}}}}`)
	if PackagePresent(dir) {
		t.Error("present with a lock that lacks the package")
	}
	write("package-lock.json", `{"packages":{"":{"dependencies":{"@opencode-ai/plugin":"1.18.33"}}}}`)
	if !PackagePresent(dir) {
		t.Error("not present with node_modules, package.json and lock in place")
	}
}

func TestProjectInstallNeedsAnExistingDirectory(t *testing.T) {
	_, err := Install(context.Background(), Options{Scope: Project, ProjectDir: filepath.Join(t.TempDir(), "missing"), Paths: paths, SkipNPM: true})
	if err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("error %v", err)
	}
}

func TestGlobalConfigDir(t *testing.T) {
	for _, tc := range []struct {
		env  []string
		home string
		want string
	}{
		{[]string{"XDG_CONFIG_HOME=/x"}, "/h", "/x/opencode"},
		{[]string{"XDG_CONFIG_HOME=relative"}, "/h", "/h/.config/opencode"},
		{nil, "/h", "/h/.config/opencode"},
		{[]string{"XDG_CONFIG_HOME=/a", "XDG_CONFIG_HOME=/b"}, "", "/b/opencode"},
		{nil, "", ""},
	} {
		if got := GlobalConfigDir(tc.env, tc.home); got != tc.want {
			t.Errorf("GlobalConfigDir(%v, %q) = %q, want %q", tc.env, tc.home, got, tc.want)
		}
	}
}

func TestCommandTemplates(t *testing.T) {
	files, err := Files(paths)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ file, heading, token, other string }{
		{"command/thatch/compact.md", "# Pre-compact wrap-up", TokenCompact, TokenExit},
		{"command/thatch/exit.md", "# Pre-exit wrap-up", TokenExit, TokenCompact},
	} {
		t.Run(tc.file, func(t *testing.T) {
			s := string(files[filepath.FromSlash(tc.file)])
			if !strings.HasPrefix(s, "---\ndescription: ") {
				t.Error("no front matter with a description")
			}
			user := strings.Index(s, "# User Message\n\n$ARGUMENTS\n")
			wrap := strings.Index(s, "\n"+tc.heading+"\n")
			if user < 0 || wrap < 0 || user > wrap {
				t.Fatalf("want a # User Message section with $ARGUMENTS, then %s", tc.heading)
			}
			if !strings.Contains(s[user:wrap], "n/a") {
				t.Error("the user message section has no fallback for empty arguments")
			}
			steps := regexp.MustCompile(`(?m)^(\d)\. \*\*`).FindAllStringSubmatch(s[wrap:], -1)
			if len(steps) != 4 {
				t.Fatalf("%d checklist steps, want 4", len(steps))
			}
			for _, want := range []string{"thatch_get_extraction_payload", "memory_remember", "thatch_extraction_done", "todo", "alone on the last line", tc.token} {
				if !strings.Contains(s[wrap:], want) {
					t.Errorf("checklist lacks %q", want)
				}
			}
			if strings.Contains(s, tc.other) {
				t.Errorf("mentions the other command's token %s", tc.other)
			}
			if strings.Count(s, "$ARGUMENTS") != 1 {
				t.Error("$ARGUMENTS must appear once, in the user message")
			}
		})
	}
}

func TestSkill(t *testing.T) {
	files, err := Files(paths)
	if err != nil {
		t.Fatal(err)
	}
	s := string(files[filepath.Join("skills", SkillName, "SKILL.md")])
	front := regexp.MustCompile(`(?s)^---\nname: ` + SkillName + `\ndescription: \S[^\n]+\n---\n`)
	if !front.MatchString(s) {
		t.Errorf("front matter: %.200q", s)
	}
	// The four steps of the extraction protocol, in order.
	last := 0
	for _, want := range []string{"Recall first", "durability test", "One fact per memory", "Always ack", "Extraction complete."} {
		i := strings.Index(s, want)
		if i < last {
			t.Errorf("%q missing or out of order", want)
		}
		last = i
	}
	for _, tool := range []string{"thatch_get_extraction_payload", "memory_recall", "memory_remember", "thatch_extraction_done", "overwrite", "confidence", "branch"} {
		if !strings.Contains(s, tool) {
			t.Errorf("skill does not mention %s", tool)
		}
	}
}
