package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-telegram/bot/models"

	"github.com/thatch-run/thatch/internal/retry"
)

// Backoff after a failed handle or a failed getUpdates: it starts at
// minBackoff and doubles up to maxBackoff; after a refusal (401, 404),
// from refusedBackoff up to maxRefusedBackoff. Each wait is drawn from the
// upper half of its step (retry.Backoff); a 429's retry_after is waited
// exactly.
const (
	minBackoff        = 100 * time.Millisecond
	maxBackoff        = 5 * time.Second
	refusedBackoff    = 5 * time.Second
	maxRefusedBackoff = 5 * time.Minute
)

var (
	failedBackoff  = retry.Backoff{Base: minBackoff, Max: maxBackoff}
	refusalBackoff = retry.Backoff{Base: refusedBackoff, Max: maxRefusedBackoff}
)

// pollLimit is the most updates one getUpdates asks for (Telegram's maximum).
const pollLimit = 100

// Run long-polls getUpdates until ctx ends and calls handle for each
// update. Updates of one conversation (a chat, or a forum topic: ChatID
// and ThreadID) are handed over one at a time in update-id order; those
// of different conversations at once, each conversation in a lane of its
// own, so that a conversation whose handler is slow or failing holds up
// no other. An update is confirmed to Telegram (a getUpdates offset
// passes it) only after handle returned nil for it and for every update
// before it, or parked (Options.Parking: a conversation whose handler
// runs ParkAfter or longer has its updates parked, so that the others'
// next updates need not wait for it; Run hands parked updates over again
// at its next start, first). When handle fails, its lane logs, waits
// (backoff) and calls handle again with the same update: nothing is
// skipped. While an update is neither handled nor parked, Run asks
// Telegram again every stallRepoll for updates of the other
// conversations (confirming what was handled so far); and when ctx ends,
// it waits for every lane to return and confirms what was handled or
// parked, so that Telegram drops those and only those.
//
// Run returns nil when ctx ends, and ErrRunning when another Run is
// polling. A getUpdates failure is logged and retried; a refusal of the
// token (401) or the method (404) too, more slowly (a token revoked and
// given back, a proxy that answered 404 for a while), logged at ERROR
// once. Health says how polling goes.
func (b *Bot) Run(ctx context.Context, handle func(ctx context.Context, in Inbound) error) error {
	if !b.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	defer b.running.Store(false)
	defer b.confirmOnExit(ctx)

	b.confirmed = b.next // nothing handled yet in this Run
	if b.lastAt.IsZero() {
		b.lastAt = b.now()
	}
	l := newLanes(ctx, b, handle)
	l.unpark()
	defer func() {
		l.wait()
		b.next = l.prefix(b.next)
	}()
	failures := 0 // getUpdates failures in a row
	var polled time.Time
	for ctx.Err() == nil {
		wait := b.nextWait(ctx, l, polled)
		if ctx.Err() != nil {
			return nil
		}
		polled = b.now()
		ups, err := b.getUpdates(ctx, b.next, pollLimit, wait)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			failures++
			b.pollFailed(ctx, err, failures)
			continue
		}
		if b.setHealth(nil) {
			b.log.Info("polling Telegram for updates")
		}
		failures = 0
		b.confirmed = b.next
		if len(ups) > 0 {
			b.lastAt = b.now()
		}
		for _, u := range ups {
			// Telegram answers in order from the offset; anything older
			// was handled already, and what is taken is not taken twice.
			if u.ID >= b.next {
				l.add(b.inbound(&u))
			}
		}
	}
	return nil
}

// nextWait readies the next poll: while updates are still being handled
// it waits until they are done or stallRepoll after the last poll
// (polled), whichever comes first, and asks at once then (not a long
// poll, which Telegram answers at once anyway with what is unconfirmed);
// b.next then passes whatever the lanes handled or parked. It returns the
// poll's wait.
func (b *Bot) nextWait(ctx context.Context, l *lanes, polled time.Time) time.Duration {
	wait := b.poll
	if l.busy() {
		l.waitIdle(ctx, polled.Add(stallRepoll))
		if l.busy() {
			wait = 0
		}
	}
	// All of it perhaps done before busy was asked.
	b.next = l.prefix(b.next)
	if wait > 0 && b.next > 0 && b.now().Sub(b.lastAt) >= IDReset {
		// Telegram may number the next update anew, below b.next: ask
		// from the earliest unconfirmed one.
		b.log.Debug("no update for a while; asking from the earliest unconfirmed update", "since", b.lastAt)
		b.next, b.confirmed = 0, 0
		l.renumbered()
	}
	return wait
}

// pollFailed records the failures-th getUpdates failure in a row, logs it
// (a refusal at ERROR once per change), and waits its backoff.
func (b *Bot) pollFailed(ctx context.Context, err error, failures int) {
	changed := b.setHealth(err)
	wait := nextBackoff(failures, err)
	if errors.Is(err, ErrRefused) {
		if changed {
			b.log.Error("Telegram refuses the bot's token or the method; no message is received until it accepts it again (asking again, slowly)", "error", err, "wait", wait)
		}
	} else {
		b.log.Warn("getUpdates failed; retrying", "error", err, "wait", wait)
	}
	retry.Sleep(ctx, wait)
}

// confirm tells Telegram that every update below b.next is handled, when
// the last getUpdates did not: an offset with limit 1 and no wait.
func (b *Bot) confirm(ctx context.Context) {
	if b.confirmed == b.next {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, b.reqTO)
	defer cancel()
	if _, err := b.getUpdates(ctx, b.next, 1, 0); err != nil {
		b.log.Warn("confirming handled updates failed; Telegram will redeliver them", "offset", b.next, "error", err)
		return
	}
	b.confirmed = b.next
}

// confirmOnExit confirms what was handled once ctx has ended, with a
// context of its own bounded by RequestTimeout.
func (b *Bot) confirmOnExit(ctx context.Context) {
	b.confirm(context.WithoutCancel(ctx))
}

// nextBackoff is the wait after the failures-th failure in a row, err
// being the last one (nil for a failed handle): the retry_after of a 429
// exactly, the refusal backoff after a refusal, the failure backoff
// otherwise.
func nextBackoff(failures int, err error) time.Duration {
	var api *apiError
	if errors.As(err, &api) && api.RetryAfter > 0 {
		return time.Duration(api.RetryAfter) * time.Second
	}
	if errors.Is(err, ErrRefused) {
		return refusalBackoff.Delay(failures)
	}
	return failedBackoff.Delay(failures)
}

// apiError is an answer of Telegram's with ok=false.
type apiError struct {
	Method      string
	Code        int
	Description string
	RetryAfter  int
}

func (e *apiError) Error() string {
	return fmt.Sprintf("telegram: %s: %d %s", e.Method, e.Code, e.Description)
}

// Unwrap lets errors.Is(err, ErrRefused) see a 401 or 404.
func (e *apiError) Unwrap() error {
	if e.Code == http.StatusUnauthorized || e.Code == http.StatusNotFound {
		return ErrRefused
	}
	return nil
}

// getUpdates makes one getUpdates request itself rather than through the
// library, whose polling loop confirms updates before they are handled
// (see doc.go). wait 0 answers at once.
func (b *Bot) getUpdates(ctx context.Context, offset int64, limit int, wait time.Duration) ([]models.Update, error) {
	secs := int((wait + time.Second/2) / time.Second)
	if wait > 0 && secs == 0 {
		secs = 1
	}
	body, _ := json.Marshal(map[string]int64{"offset": offset, "limit": int64(limit), "timeout": int64(secs)}) // numbers always marshal
	ctx, cancel := context.WithTimeout(ctx, wait+b.reqTO)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.url+"/bot"+b.token+"/getUpdates", bytes.NewReader(body))
	if err != nil {
		return nil, b.redact(fmt.Errorf("telegram: getUpdates: %w", err))
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := b.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			ue.URL = strings.ReplaceAll(ue.URL, b.token, "<token>")
		}
		return nil, b.redact(fmt.Errorf("telegram: getUpdates: %w", err))
	}
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, b.redact(fmt.Errorf("telegram: getUpdates: reading the answer: %w", err))
	}
	var ans struct {
		OK          bool            `json:"ok"`
		Result      []models.Update `json:"result"`
		ErrorCode   int             `json:"error_code"`
		Description string          `json:"description"`
		Parameters  struct {
			RetryAfter int `json:"retry_after"`
		} `json:"parameters"`
	}
	if err := json.Unmarshal(raw, &ans); err != nil {
		return nil, fmt.Errorf("telegram: getUpdates: HTTP %d, undecodable answer: %w", resp.StatusCode, err)
	}
	if !ans.OK {
		return nil, &apiError{Method: "getUpdates", Code: ans.ErrorCode, Description: ans.Description, RetryAfter: ans.Parameters.RetryAfter}
	}
	return ans.Result, nil
}

// Resume makes the next Run start after r.Cursor (the last update handled
// + 1, as Update's Cursor carries it), as Open does: a node of a cluster
// that takes the polling over from another starts where that one
// confirmed. It returns ErrRunning while Run polls, changing nothing.
func (b *Bot) Resume(offset int64, saved time.Time) error {
	if !b.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	defer b.running.Store(false)
	if offset > b.next {
		b.next, b.lastAt = offset, saved
	}
	return nil
}
