package install

// SkillName is the opencode skill the extraction prompt tells the child to
// load.
const SkillName = "thatch-fact-extractor"

// Wrap-up tokens; the daemon greenlights a wrap-up only when the reply's
// last line is exactly the token.
const (
	TokenCompact = "THATCH_COMPACT_READY"
	TokenExit    = "THATCH_EXIT_READY"
)

// userMessageSection opens both command templates. opencode replaces
// $ARGUMENTS with what the user typed after the command, possibly nothing.
const userMessageSection = `# User Message

$ARGUMENTS

(If nothing appears above this line, the user added no message: treat the User Message as n/a.)
`

const wrapUpSteps = `1. **Flush pending extraction.** Call ` + "`thatch_get_extraction_payload`" + ` with no arguments. If it returns interactions, save each durable fact in them with ` + "`memory_remember`" + ` (one fact per memory, a specific label, a confidence), then call ` + "`thatch_extraction_done`" + `. If it returns null, there is nothing to flush.
2. **Finish promised memory writes.** Anything you said in this session that you would remember and have not saved yet: save it now with ` + "`memory_remember`" + `.
3. **Surface todos never addressed.** List every task the user asked for, or that you promised, that is still open, with one line on where it stands, so that nothing is silently dropped.
`

const compactCommand = `---
description: Wrap up with thatch, then compact this session (flush extraction, finish memory writes, list open todos)
---
` + userMessageSection + `
# Pre-compact wrap-up

This session is about to be compacted: older messages will be replaced by a summary. Before that happens, work through this checklist in order.

` + wrapUpSteps + `4. **Give the go-ahead, only when it is safe.** When steps 1 to 3 are done and nothing blocks the compaction, end your reply with ` + TokenCompact + ` alone on the last line. If something blocks it (a failed save, a question the user must answer first), explain the blocker instead and do not write the token: thatch compacts only after a reply that ends with it.
`

const exitCommand = `---
description: Wrap up with thatch, then close this session (flush extraction, finish memory writes, list open todos)
---
` + userMessageSection + `
# Pre-exit wrap-up

This session is about to close. Anything not saved now is lost to later sessions. Work through this checklist in order.

` + wrapUpSteps + `4. **Give the go-ahead, only when it is safe.** When steps 1 to 3 are done and nothing blocks closing, end your reply with ` + TokenExit + ` alone on the last line. If something blocks it (a failed save, a question the user must answer first), explain the blocker instead and do not write the token: thatch closes the session only after a reply that ends with it.
`

const skill = `---
name: ` + SkillName + `
description: Turn the tool calls thatch buffered from a coding session into durable memories. Use it when asked to extract facts with thatch_get_extraction_payload.
---
# thatch fact extractor

You review what an agent did in another session (its tool calls and their results) and keep only the facts worth knowing next time. You write memories; you do not continue that session's work.

## Fetch

Call ` + "`thatch_get_extraction_payload`" + ` once, with the session_id you were given. It returns JSON ` + "`{interactions, projectStore, globalStore}`" + `, or null when nothing is queued (then skip to the last step). Each interaction has the tool, a summary of its arguments, its title and its output (cut short).

## Steps

1. **Recall first, and update instead of duplicating.** For each candidate fact, call ` + "`memory_recall`" + ` with a few words about it. If a memory already says it, leave it. If one says it differently or is out of date, update that memory: ` + "`memory_remember`" + ` with the same label and ` + "`overwrite: true`" + `. Only write a new memory for a new fact.
2. **Keep only what passes the durability test.** A fact is worth keeping if it will still be true and useful weeks from now: how to build, test or run the project; where things live; conventions; decisions and their reasons; pitfalls that cost time. Skip the step-by-step log of what happened, one-off values, and anything you are guessing at.
3. **One fact per memory.** Give each a specific label (` + "`build: make test needs CGO_ENABLED=1`" + `, not ` + "`notes`" + `), self-contained content, and a confidence from 1 (guess) to 10 (verified in the output). Save project facts in the projectStore and facts that hold for every project in the globalStore. Set ` + "`branch`" + ` only when the fact is true on one git branch only.
4. **Always ack.** Call ` + "`thatch_extraction_done`" + ` when you are finished, even if you saved nothing, so thatch knows the payload was handled. Then end with the line "Extraction complete."
`
