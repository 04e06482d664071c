package e2e

import (
	"path/filepath"
	"regexp"

	"github.com/thatch-run/thatch/e2e/fakemodel"
)

// extractionMarker is a phrase of the prompt thatch sends an extraction
// child; the child's script matches on it.
const extractionMarker = "thatch-fact-extractor skill"

var parentInPrompt = regexp.MustCompile(`session_id "([^"]+)"`)

// promptedParent returns the parent id the extraction prompt names.
func promptedParent(r *fakemodel.Request) string {
	if m := parentInPrompt.FindStringSubmatch(r.FirstUser()); m != nil {
		return m[1]
	}
	return ""
}

// ParentTurn scripts a parent turn started by a prompt containing marker:
// the model reads the project's README, lists the markdown files, then
// answers. That is two buffered interactions.
func ParentTurn(w *World, marker string) fakemodel.Rule {
	return fakemodel.Rule{
		Name:  "parent:" + marker,
		Match: fakemodel.LastUserContains(marker),
		Steps: []fakemodel.Step{
			{ToolCalls: []fakemodel.ToolCall{{Name: "read", Args: map[string]any{"filePath": filepath.Join(w.Project, "README.md")}}}},
			{ToolCalls: []fakemodel.ToolCall{{Name: "glob", Args: map[string]any{"pattern": "*.md", "path": w.Project}}}},
			{Text: "The project builds with make; the tests need CGO."},
		},
	}
}

// ExtractorName is the rule name of the extraction child script.
const ExtractorName = "extractor"

// Extractor scripts an extraction child that follows the skill: load the
// skill, fetch the payload for the parent the prompt names, save one
// memory, ack, and end with "Extraction complete.". gates, when given,
// hold the answers at the same steps (nil entries do not hold).
func Extractor(gates ...<-chan struct{}) fakemodel.Rule {
	steps := []fakemodel.Step{
		{ToolCalls: []fakemodel.ToolCall{{Name: "skill", Args: map[string]any{"name": "thatch-fact-extractor"}}}},
		{ToolCalls: []fakemodel.ToolCall{{Name: "thatch_get_extraction_payload", ArgsFrom: func(r *fakemodel.Request) any {
			return map[string]any{"session_id": promptedParent(r)}
		}}}},
		{ToolCalls: []fakemodel.ToolCall{{Name: "memory_remember", ArgsFrom: func(r *fakemodel.Request) any {
			// One label per parent: projects without a git remote share
			// the global store, and a repeated label is an error.
			return map[string]any{"label": "build: make build (" + promptedParent(r) + ")",
				"content": "The project builds with `make build`; its tests need CGO_ENABLED=1.", "confidence": 8}
		}}}},
		{ToolCalls: []fakemodel.ToolCall{{Name: "thatch_extraction_done", Args: map[string]any{}}}},
		{Text: "Extraction complete."},
	}
	for i, g := range gates {
		if i < len(steps) && g != nil {
			steps[i].Gate = g
		}
	}
	return fakemodel.Rule{Name: ExtractorName, Match: fakemodel.FirstUserContains(extractionMarker), Steps: steps}
}

// Step numbers of the Extractor script.
const (
	stepSkill = iota
	stepFetch
	stepRemember
	stepDone
	stepFinal
)
