package ui

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"sync"
	"time"
)

const (
	// CodeTTL is how long a login code printed by `thatch ui` works.
	CodeTTL = 5 * time.Minute
	// SessionTTL is how long a logged-in browser stays logged in.
	SessionTTL = 12 * time.Hour
	// maxCodes and maxSessions bound the tables; the oldest entry goes
	// first when one is full.
	maxCodes    = 32
	maxSessions = 64
	// CookieName is the session cookie (Path=/ui, HttpOnly,
	// SameSite=Strict).
	CookieName = "thatch_ui"
)

// session is one logged-in browser.
type session struct {
	csrf    string
	expires time.Time
}

// auth holds the unused login codes and the sessions. It lives in memory
// only: a restart of the daemon logs every browser out.
type auth struct {
	now      func() time.Time
	mu       sync.Mutex
	codes    map[string]time.Time // code -> expiry
	sessions map[string]*session  // id -> session
}

func newAuth(now func() time.Time) *auth {
	return &auth{now: now, codes: map[string]time.Time{}, sessions: map[string]*session{}}
}

// randomHex returns n random bytes, hex encoded.
func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic("ui: crypto/rand failed: " + err.Error()) // never on Linux
	}
	return hex.EncodeToString(b)
}

// mint makes a login code that expires after CodeTTL.
func (a *auth) mint() (string, time.Time) {
	code := randomHex(24)
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now()
	pruneTimes(a.codes, now, maxCodes)
	exp := now.Add(CodeTTL)
	a.codes[code] = exp
	return code, exp
}

// redeem consumes code and returns a new session id and its form token, or
// ok false for a code that is unknown, used or expired.
func (a *auth) redeem(code string) (id, csrf string, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now()
	var exp time.Time
	for c, e := range a.codes {
		if subtle.ConstantTimeCompare([]byte(c), []byte(code)) == 1 {
			exp, ok = e, true
			delete(a.codes, c)
			break
		}
	}
	if !ok || !now.Before(exp) {
		return "", "", false
	}
	if len(a.sessions) >= maxSessions {
		var oldest string
		for k, s := range a.sessions {
			if oldest == "" || s.expires.Before(a.sessions[oldest].expires) {
				oldest = k
			}
		}
		delete(a.sessions, oldest)
	}
	id, csrf = randomHex(32), randomHex(32)
	a.sessions[id] = &session{csrf: csrf, expires: now.Add(SessionTTL)}
	return id, csrf, true
}

// lookup returns the form token of a live session.
func (a *auth) lookup(id string) (string, bool) {
	if id == "" {
		return "", false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	s, ok := a.sessions[id]
	if !ok {
		return "", false
	}
	if !a.now().Before(s.expires) {
		delete(a.sessions, id)
		return "", false
	}
	return s.csrf, true
}

// logout ends a session.
func (a *auth) logout(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.sessions, id)
}

// pruneTimes drops expired entries of m, then the soonest to expire until
// there is room for one more below max.
func pruneTimes(m map[string]time.Time, now time.Time, max int) {
	for k, e := range m {
		if !now.Before(e) {
			delete(m, k)
		}
	}
	for len(m) >= max {
		var first string
		for k, e := range m {
			if first == "" || e.Before(m[first]) {
				first = k
			}
		}
		delete(m, first)
	}
}
