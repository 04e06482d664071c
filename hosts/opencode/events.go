package opencode

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/thatch-run/thatch/messages"
)

// ErrMalformedEvent is returned by Decoder.Decode for a frame that is not an
// opencode event: not JSON, no "type", or properties that do not fit the
// event's documented shape. Decode never panics on such input.
var ErrMalformedEvent = errors.New("opencode: malformed event")

// Connected is opencode's server.connected, the first frame of every /event
// connection. It tells the stream owner that the server has subscribed this
// connection to its bus, so anything that happens from now on will arrive.
// It is not journaled: it is about the connection, not about a session.
type Connected struct {
	Host string
}

// Heartbeat is opencode's server.heartbeat (every 10 s on 1.18). It carries
// nothing but the fact that the stream is alive, for the owner's watchdog.
type Heartbeat struct {
	Host string
}

// Decoder turns /event frames into thatch messages. It is stateless apart
// from the host name, so one Decoder may serve many connections in turn.
type Decoder struct {
	host string
}

// NewDecoder returns a Decoder that stamps host into the Host field of every
// message it produces.
func NewDecoder(host string) *Decoder {
	return &Decoder{host: host}
}

// envelope is the outer shape of every /event frame. The event's own "id"
// is ignored: the server offers no replay by id.
type envelope struct {
	Type       string          `json:"type"`
	Properties json.RawMessage `json:"properties"`
}

// sessionInfo is the part of opencode's Session schema that thatch reads.
type sessionInfo struct {
	ID        string `json:"id"`
	ParentID  string `json:"parentID"`
	Title     string `json:"title"`
	Directory string `json:"directory"`
}

type sessionProps struct {
	SessionID string       `json:"sessionID"`
	Info      *sessionInfo `json:"info"`
}

type statusProps struct {
	SessionID string `json:"sessionID"`
	Status    *struct {
		Type string `json:"type"`
	} `json:"status"`
}

type errorProps struct {
	SessionID string          `json:"sessionID"`
	Error     json.RawMessage `json:"error"`
}

// Decode returns the thatch message for one frame's data, or (nil, nil) for
// an event that thatch does not follow. The result is one of
// *messages.SessionCreated, *messages.SessionIdle (from session.idle, and
// from session.status whose type is idle: a turn usually yields both),
// *messages.SessionErrored, *messages.SessionDeleted,
// *messages.SessionCompacted, *Connected or *Heartbeat. A session.error
// without a sessionID (a failure outside any session) yields (nil, nil).
func (d *Decoder) Decode(frame []byte) (any, error) {
	var env envelope
	if err := json.Unmarshal(frame, &env); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformedEvent, err)
	}
	if env.Type == "" {
		return nil, fmt.Errorf("%w: no type", ErrMalformedEvent)
	}
	switch env.Type {
	case "server.connected":
		return &Connected{Host: d.host}, nil
	case "server.heartbeat":
		return &Heartbeat{Host: d.host}, nil
	case "session.created":
		p, id, err := d.session(env)
		if err != nil {
			return nil, err
		}
		m := &messages.SessionCreated{Host: d.host, SessionID: id}
		if p.Info != nil {
			m.ParentID, m.Title, m.Directory = p.Info.ParentID, p.Info.Title, p.Info.Directory
		}
		return m, nil
	case "session.deleted":
		_, id, err := d.session(env)
		if err != nil {
			return nil, err
		}
		return &messages.SessionDeleted{Host: d.host, SessionID: id}, nil
	case "session.idle":
		id, err := d.sessionIDOnly(env)
		if err != nil {
			return nil, err
		}
		return &messages.SessionIdle{Host: d.host, SessionID: id}, nil
	case "session.compacted":
		id, err := d.sessionIDOnly(env)
		if err != nil {
			return nil, err
		}
		return &messages.SessionCompacted{Host: d.host, SessionID: id}, nil
	case "session.status":
		var p statusProps
		if err := d.props(env, &p); err != nil {
			return nil, err
		}
		if p.SessionID == "" || p.Status == nil || p.Status.Type == "" {
			return nil, fmt.Errorf("%w: session.status needs sessionID and status.type", ErrMalformedEvent)
		}
		if p.Status.Type != "idle" {
			return nil, nil // busy and retry: the session is working
		}
		return &messages.SessionIdle{Host: d.host, SessionID: p.SessionID}, nil
	case "session.error":
		var p errorProps
		if err := d.props(env, &p); err != nil {
			return nil, err
		}
		if p.SessionID == "" {
			return nil, nil
		}
		return &messages.SessionErrored{Host: d.host, SessionID: p.SessionID, Error: errorText(p.Error)}, nil
	default:
		return nil, nil
	}
}

// props decodes the properties object of an event thatch follows.
func (d *Decoder) props(env envelope, into any) error {
	if len(env.Properties) == 0 || string(env.Properties) == "null" {
		return fmt.Errorf("%w: %s without properties", ErrMalformedEvent, env.Type)
	}
	if err := json.Unmarshal(env.Properties, into); err != nil {
		return fmt.Errorf("%w: %s properties: %v", ErrMalformedEvent, env.Type, err)
	}
	return nil
}

func (d *Decoder) sessionIDOnly(env envelope) (string, error) {
	var p struct {
		SessionID string `json:"sessionID"`
	}
	if err := d.props(env, &p); err != nil {
		return "", err
	}
	if p.SessionID == "" {
		return "", fmt.Errorf("%w: %s without sessionID", ErrMalformedEvent, env.Type)
	}
	return p.SessionID, nil
}

// session reads the properties of a session.created or session.deleted
// event and its session id: properties.sessionID (1.18), or else
// properties.info.id, which is all that older servers sent.
func (d *Decoder) session(env envelope) (sessionProps, string, error) {
	var p sessionProps
	if err := d.props(env, &p); err != nil {
		return p, "", err
	}
	if p.SessionID != "" {
		return p, p.SessionID, nil
	}
	if p.Info != nil && p.Info.ID != "" {
		return p, p.Info.ID, nil
	}
	return p, "", fmt.Errorf("%w: %s without sessionID or info.id", ErrMalformedEvent, env.Type)
}

// maxErrorText bounds the error text carried into a journaled message.
const maxErrorText = 2000

// errorText renders opencode's error union ({name, data:{message}}) as
// "Name: message". Shapes it does not know are kept as compact JSON, so an
// operator still sees them.
func errorText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var e struct {
		Name string `json:"name"`
		Data struct {
			Message string `json:"message"`
		} `json:"data"`
		Message string `json:"message"`
	}
	var text string
	if err := json.Unmarshal(raw, &e); err == nil && (e.Name != "" || e.Data.Message != "" || e.Message != "") {
		msg := e.Data.Message
		if msg == "" {
			msg = e.Message
		}
		switch {
		case e.Name != "" && msg != "":
			text = e.Name + ": " + msg
		case e.Name != "":
			text = e.Name
		default:
			text = msg
		}
	} else {
		// Raw JSON keeps bytes that JSON strings would not: the journal
		// must replay the text as it was received.
		text = strings.ToValidUTF8(strings.TrimSpace(string(raw)), "\uFFFD")
	}
	return truncate(text, maxErrorText)
}

// truncate cuts s to at most n bytes on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
