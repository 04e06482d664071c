package chat

import (
	"strings"
	"unicode"
)

// Command is a command a user gave at the start of a message: "/history
// 3" is {Name: "history", Args: "3"}.
type Command struct {
	Name string
	Args string
}

// CommandHelp is a command as a platform's client offers it (Telegram's
// setMyCommands): its name and a short description.
type CommandHelp struct {
	Name        string
	Description string
}

// Commands are thatch's own commands, in the order clients offer them.
// Any other "/word" is the agent's (claude's /clear, /compact) and is
// typed to it as it is.
var Commands = []CommandHelp{
	{"esc", "send Escape to the agent"},
	{"interrupt", "send Ctrl-C to the agent"},
	{"enter", "press Enter in the agent's window"},
	{"screenshot", "show the agent's window as a picture"},
	{"history", "the last exchanges with the agent (/history N)"},
	{"usage", "tokens, context in use and estimated cost of the session"},
	{"mode", "the agent's permission mode (/mode plan); buttons without a name"},
	{"recall", "search thatch's memory (/recall how to deploy); no agent is asked"},
	{"remember", "keep a fact in thatch's memory (/remember staging deploys with make ship)"},
	{"sessions", "your bound threads"},
	{"board", "pin a board of every thread of this chat and its state"},
	{"kill", "kill this thread's window and end its binding"},
	{"unbind", "end this thread's binding, keeping the window"},
}

// IsCommand reports whether name is one of Commands (or "start").
func IsCommand(name string) bool {
	if name == "start" {
		return true
	}
	for _, c := range Commands {
		if c.Name == name {
			return true
		}
	}
	return false
}

// ParseCommand reads a command at the start of text: "/name", "/name
// args", and on Telegram "/name@bot args". mine is false for a command
// addressed to another bot ("/name@otherbot"; botName "" takes any bot's
// name as this one's). ok is false when text is no command at all; the
// name is lower-cased, the arguments trimmed.
func ParseCommand(text, botName string) (c Command, mine, ok bool) {
	rest, found := strings.CutPrefix(text, "/")
	if !found {
		return Command{}, false, false
	}
	word, args, _ := strings.Cut(rest, " ")
	if nl := strings.IndexByte(word, '\n'); nl >= 0 {
		word, args = word[:nl], rest[nl+1:]
	}
	name, bot, addressed := strings.Cut(word, "@")
	if name == "" || len(name) > 32 {
		return Command{}, false, false
	}
	for _, r := range name {
		if r != '_' && !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			return Command{}, false, false
		}
	}
	mine = !addressed || botName == "" || strings.EqualFold(bot, botName)
	return Command{Name: strings.ToLower(name), Args: strings.TrimSpace(args)}, mine, true
}
