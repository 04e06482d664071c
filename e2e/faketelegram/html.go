package faketelegram

import (
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"
)

// tags Telegram's HTML parse mode accepts.
var tags = map[string]bool{
	"b": true, "strong": true, "i": true, "em": true, "u": true, "ins": true,
	"s": true, "strike": true, "del": true, "code": true, "pre": true, "a": true,
	"tg-spoiler": true, "span": true, "blockquote": true, "tg-emoji": true,
}

var entities = map[string]string{"lt": "<", "gt": ">", "amp": "&", "quot": `"`}

// parseHTML checks text as Telegram's HTML parse mode would, strictly: only
// the supported tags, properly nested, nothing inside <code> and only
// <code> inside <pre>, and no <, > or & outside tags and entities. It
// returns the text as shown.
func parseHTML(text string) (string, error) {
	var shown strings.Builder
	var stack []string
	for i := 0; i < len(text); {
		switch text[i] {
		case '<':
			j := strings.IndexByte(text[i:], '>')
			if j < 0 {
				return "", errors.New("unclosed start tag at byte offset " + itoa(i))
			}
			var err error
			if stack, err = tag(stack, text[i+1:i+j]); err != nil {
				return "", err
			}
			i += j + 1
		case '&':
			j := strings.IndexByte(text[i:], ';')
			if j < 0 {
				return "", errors.New("bare & at byte offset " + itoa(i))
			}
			ch, err := entity(text[i+1 : i+j])
			if err != nil {
				return "", err
			}
			shown.WriteString(ch)
			i += j + 1
		case '>':
			return "", errors.New("bare > at byte offset " + itoa(i))
		default:
			shown.WriteByte(text[i])
			i++
		}
	}
	if len(stack) > 0 {
		return "", errors.New("can't find end tag corresponding to start tag \"" + stack[len(stack)-1] + "\"")
	}
	return shown.String(), nil
}

// tag applies one tag's text (between < and >) to the stack of open tags.
func tag(stack []string, body string) ([]string, error) {
	if name, ok := strings.CutPrefix(body, "/"); ok {
		name = strings.ToLower(strings.TrimSpace(name))
		if len(stack) == 0 || stack[len(stack)-1] != name {
			return nil, errors.New("unmatched end tag \"" + name + "\"")
		}
		return stack[:len(stack)-1], nil
	}
	fields := strings.Fields(body)
	if len(fields) == 0 {
		return nil, errors.New("empty tag")
	}
	name := strings.ToLower(fields[0])
	if !tags[name] {
		return nil, errors.New("unsupported start tag \"" + name + "\"")
	}
	if len(stack) > 0 {
		top := stack[len(stack)-1]
		if top == "code" || (top == "pre" && name != "code") {
			return nil, errors.New("tag \"" + name + "\" inside \"" + top + "\"")
		}
	}
	if name == "a" && !strings.Contains(body, "href=") {
		return nil, errors.New("tag \"a\" without href")
	}
	return append(stack, name), nil
}

func entity(name string) (string, error) {
	if ch, ok := entities[name]; ok {
		return ch, nil
	}
	if num, ok := strings.CutPrefix(name, "#"); ok {
		base := 10
		if hex, ok := strings.CutPrefix(strings.ToLower(num), "x"); ok {
			num, base = hex, 16
		}
		n, err := strconv.ParseInt(num, base, 32)
		if err == nil && utf8.ValidRune(rune(n)) {
			return string(rune(n)), nil
		}
	}
	return "", errors.New("unsupported entity \"&" + name + ";\"")
}

// utf16Len counts s in UTF-16 code units, as Telegram counts its limits.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}

func itoa(n int) string { return strconv.Itoa(n) }
