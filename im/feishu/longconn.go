package feishu

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"github.com/hashicorp/go-hclog"
	larkws "github.com/larksuite/oapi-sdk-go/v3/ws"

	"github.com/thatch-run/thatch/internal/retry"
)

// ErrAppRefused says Feishu refused the app's long connection as asked:
// the endpoint call answered a client error (a wrong app id or secret, an
// app not set to receive over the long connection) or the handshake was
// forbidden. Trying again at once cannot help: the receiver waits
// longer between tries (refusedBackoff) and reports it in Health.
var ErrAppRefused = errors.New("feishu: Feishu refused the app's long connection")

// The long connection's bounds.
const (
	// wsDialTimeout bounds the websocket dial and its handshake.
	wsDialTimeout = 10 * time.Second
	// wsWriteTimeout bounds each frame written.
	wsWriteTimeout = 10 * time.Second
	// wsPing is the ping interval until Feishu names one (its client
	// config; Feishu's default is 120 s).
	wsPing = 2 * time.Minute
	// wsReadLimit bounds one websocket message (a frame, one part of a
	// split payload).
	wsReadLimit = 4 << 20
	// wsMaxParts bounds the parts of a split payload.
	wsMaxParts = 64
	// wsPartsKeep is how long the parts of a payload wait for the rest
	// (the SDK keeps them 5 s).
	wsPartsKeep = 30 * time.Second
	// wsQueue is how many whole data frames wait for the handler; the
	// reader stops reading while it is full.
	wsQueue = 16
	// wsInFlight is how many data frames are handled at once (threads go
	// at once, each in its order); the worker waits while it is reached.
	wsInFlight = 64
)

// stateReceiving is Health's state while the long connection is up.
const stateReceiving = "receiving Feishu events over the long connection"

// Backoffs of the long connection: after a dropped connection or a failed
// endpoint call or dial (dropBackoff), and after Feishu refused the app
// (refusedBackoff, slow: someone has to fix the config).
var (
	dropBackoff    = retry.Backoff{Base: time.Second, Max: 2 * time.Minute}
	refusedBackoff = retry.Backoff{Base: time.Minute, Max: 10 * time.Minute}
)

// Endpoint codes that say Feishu is busy, not that the app is wrong.
const codeWSBusy = 1000040345

// longConn is the receiver of mode "ws": it asks Feishu's endpoint for a
// websocket URL, dials it, pings, reads data frames and hands each event
// to handle, answering the frame once handle returned. It runs until its
// context ends, and connects again after every failure.
type longConn struct {
	appID, appSecret, base string
	botOpenID              string
	admit                  admitFunc
	logger                 hclog.Logger
	// report is Adapter.setHealth.
	report func(up bool, state, lastErr string)
	httpc  *http.Client
	dialer *websocket.Dialer
	drop   retry.Backoff
	refuse retry.Backoff
}

// newLongConn builds the receiver; the endpoint call is bounded by
// opts.SendTimeout.
func newLongConn(opts Options, botOpenID string, admit admitFunc, logger hclog.Logger,
	report func(up bool, state, lastErr string)) *longConn {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	// The endpoint is asked once a connection: no idle connection (nor
	// its goroutines) is kept between.
	tr.DisableKeepAlives = true
	return &longConn{appID: opts.AppID, appSecret: opts.AppSecret, base: opts.BaseURL, botOpenID: botOpenID,
		admit: admit, logger: logger, report: report,
		httpc:  &http.Client{Timeout: opts.SendTimeout, Transport: tr},
		dialer: &websocket.Dialer{HandshakeTimeout: wsDialTimeout, Proxy: http.ProxyFromEnvironment},
		drop:   dropBackoff, refuse: refusedBackoff}
}

// run connects, serves and connects again until ctx ends; every goroutine
// it started has ended when it returns.
func (c *longConn) run(ctx context.Context) {
	failures, lastErr := 0, ""
	for ctx.Err() == nil {
		c.report(false, "connecting", lastErr)
		s, err := c.connect(ctx)
		if err == nil {
			c.report(true, stateReceiving, "")
			var heard bool
			heard, err = s.serve(ctx)
			if heard {
				failures = 0
			}
		}
		if ctx.Err() != nil {
			break
		}
		failures++
		wait := c.drop.Delay(failures)
		if errors.Is(err, ErrAppRefused) {
			wait = c.refuse.Delay(failures)
			c.logger.Error("Feishu refused the long connection; check im.feishu.app_id and app_secret", "error", err, "retry_in", wait)
		} else {
			c.logger.Warn("the long connection failed; connecting again", "error", err, "retry_in", wait)
		}
		lastErr = err.Error()
		c.report(false, fmt.Sprintf("connecting again in %s", wait.Round(time.Second)), lastErr)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
	c.report(false, "stopped", lastErr)
}

// connect asks the endpoint for a URL and dials it.
func (c *longConn) connect(ctx context.Context) (*wsSession, error) {
	ep, err := c.endpoint(ctx)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(ep.Url)
	if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") {
		return nil, fmt.Errorf("feishu: long connection: the endpoint answered %q, not a websocket URL", ep.Url)
	}
	service, err := strconv.ParseInt(u.Query().Get(larkws.ServiceID), 10, 32)
	if err != nil {
		return nil, fmt.Errorf("feishu: long connection: the endpoint's URL has no service_id: %w", err)
	}
	dctx, cancel := context.WithTimeout(ctx, wsDialTimeout)
	defer cancel()
	conn, resp, err := c.dialer.DialContext(dctx, u.String(), nil)
	if err != nil {
		return nil, dialError(resp, err)
	}
	conn.SetReadLimit(wsReadLimit)
	s := &wsSession{c: c, conn: conn, service: int32(service), parts: map[string]*partial{}}
	s.ping.Store(int64(wsPing))
	if ep.ClientConfig != nil {
		s.configure(ep.ClientConfig)
	}
	c.logger.Info("long connection up", "device_id", u.Query().Get(larkws.DeviceID))
	return s, nil
}

// endpoint asks Feishu where to connect; the call is bounded by the HTTP
// client's timeout.
func (c *longConn) endpoint(ctx context.Context) (*larkws.Endpoint, error) {
	body, err := json.Marshal(map[string]string{"AppID": c.appID, "AppSecret": c.appSecret})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+larkws.GenEndpointUri, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("feishu: long connection: endpoint: %w", err)
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("locale", "zh")
	resp, err := c.httpc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("feishu: long connection: endpoint: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("feishu: long connection: endpoint: read the answer: %w", err)
	}
	var er larkws.EndpointResp
	if jerr := json.Unmarshal(raw, &er); jerr != nil || (resp.StatusCode != http.StatusOK && er.Code == larkws.OK) {
		return nil, fmt.Errorf("feishu: long connection: endpoint answered HTTP %d: %.200q", resp.StatusCode, raw)
	}
	switch er.Code {
	case larkws.OK:
	case larkws.SystemBusy, larkws.InternalError, codeWSBusy:
		return nil, fmt.Errorf("feishu: long connection: endpoint busy (code %d: %s)", er.Code, er.Msg)
	default:
		return nil, fmt.Errorf("%w: the endpoint answered code %d: %s; check im.feishu.app_id and app_secret, and that the app receives events over the long connection",
			ErrAppRefused, er.Code, er.Msg)
	}
	if er.Data == nil || er.Data.Url == "" {
		return nil, errors.New("feishu: long connection: the endpoint answered no URL")
	}
	return er.Data, nil
}

// dialError reads a failed handshake as the SDK does: Forbidden, or an
// auth failure for too many connections, is the app's (ErrAppRefused);
// anything else is worth trying again soon.
func dialError(resp *http.Response, err error) error {
	if resp == nil {
		return fmt.Errorf("feishu: long connection: dial: %w", err)
	}
	code, _ := strconv.Atoi(resp.Header.Get(larkws.HeaderHandshakeStatus))
	msg := resp.Header.Get(larkws.HeaderHandshakeMsg)
	auth, _ := strconv.Atoi(resp.Header.Get(larkws.HeaderHandshakeAuthErrCode))
	if code == larkws.Forbidden || (code == larkws.AuthFailed && auth == larkws.ExceedConnLimit) {
		return fmt.Errorf("%w: the handshake answered %d: %s", ErrAppRefused, code, msg)
	}
	return fmt.Errorf("feishu: long connection: dial: HTTP %d (handshake status %d: %s): %w", resp.StatusCode, code, msg, err)
}

// wsSession is one websocket connection. Its reader, pinger and worker
// goroutines are serve's: they end before serve returns.
type wsSession struct {
	c       *longConn
	conn    *websocket.Conn
	service int32
	ping    atomic.Int64 // the ping interval, ns; Feishu's pongs may change it
	heard   atomic.Bool  // a frame came from Feishu
	writeMu sync.Mutex   // one writer at a time (gorilla's rule)
	parts   map[string]*partial
}

// dataFrame is a whole data frame: the last part's frame and the payload
// put together.
type dataFrame struct {
	frame   *larkws.Frame
	payload []byte
}

// serve runs the connection until it fails or ctx ends, then closes it
// and waits for its goroutines. heard says Feishu sent anything (a pong
// at least): a connection that never answered does not reset the backoff.
func (s *wsSession) serve(ctx context.Context) (heard bool, err error) {
	queue := make(chan dataFrame, wsQueue)
	stop := make(chan struct{})
	readErr := make(chan error, 1)
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { defer wg.Done(); readErr <- s.read(queue, stop) }()
	go func() { defer wg.Done(); s.pinger(stop) }()
	go func() { defer wg.Done(); s.work(ctx, queue, stop) }()
	select {
	case <-ctx.Done():
		err = ctx.Err()
		_ = s.conn.WriteControl(websocket.CloseMessage,
			websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
	case err = <-readErr:
		err = fmt.Errorf("feishu: long connection: %w", err)
	}
	close(stop)
	_ = s.conn.Close()
	wg.Wait()
	return s.heard.Load(), err
}

// read reads frames until the connection fails: control frames are
// handled here, whole data frames queued for the worker.
func (s *wsSession) read(queue chan<- dataFrame, stop <-chan struct{}) error {
	for {
		// A live connection hears a pong every ping interval.
		_ = s.conn.SetReadDeadline(time.Now().Add(3*time.Duration(s.ping.Load()) + 10*time.Second))
		kind, msg, err := s.conn.ReadMessage()
		if err != nil {
			return err
		}
		if kind != websocket.BinaryMessage {
			s.c.logger.Warn("a websocket message that is not binary; ignored", "type", kind)
			continue
		}
		var f larkws.Frame
		if err := f.Unmarshal(msg); err != nil {
			s.c.logger.Warn("a websocket message that is not a frame; ignored", "error", err)
			continue
		}
		s.heard.Store(true)
		switch larkws.FrameType(f.Method) {
		case larkws.FrameTypeControl:
			s.control(&f)
		case larkws.FrameTypeData:
			payload, whole := s.assemble(&f, time.Now())
			if !whole {
				continue
			}
			select {
			case queue <- dataFrame{frame: &f, payload: payload}:
			case <-stop:
				return nil
			}
		default:
			s.c.logger.Debug("a frame of an unknown method; ignored", "method", f.Method)
		}
	}
}

// control takes a pong, which may carry Feishu's client config.
func (s *wsSession) control(f *larkws.Frame) {
	if larkws.MessageType(larkws.Headers(f.Headers).GetString(larkws.HeaderType)) != larkws.MessageTypePong ||
		len(f.Payload) == 0 {
		return
	}
	var conf larkws.ClientConfig
	if err := json.Unmarshal(f.Payload, &conf); err != nil {
		s.c.logger.Warn("a pong whose client config is not JSON; ignored", "error", err)
		return
	}
	s.configure(&conf)
}

// configure takes Feishu's ping interval. Its reconnect settings are not
// taken: the receiver's own backoff (jittered, bounded) decides.
func (s *wsSession) configure(conf *larkws.ClientConfig) {
	if conf.PingInterval > 0 {
		s.ping.Store(int64(time.Duration(conf.PingInterval) * time.Second))
	}
}

// pinger pings at once and then every ping interval, until stop. A ping
// that cannot be written closes the connection, so that the reader ends.
func (s *wsSession) pinger(stop <-chan struct{}) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		ping := &larkws.Frame{Method: int32(larkws.FrameTypeControl), Service: s.service,
			Headers: []larkws.Header{{Key: larkws.HeaderType, Value: string(larkws.MessageTypePing)}}}
		if err := s.write(ping); err != nil {
			select {
			case <-stop: // closing anyway
			default:
				s.c.logger.Debug("ping not sent; closing the connection", "error", err)
				_ = s.conn.Close()
			}
			return
		}
		t.Reset(time.Duration(s.ping.Load()))
	}
}

// work takes the queued data frames in the order they came until stop:
// each is admitted to its thread's order here, then handled and answered
// in a goroutine of its own (at most wsInFlight at once), so that a slow
// thread holds up no other. A frame queued but not taken is not answered,
// and Feishu delivers it again. work returns once every frame it took is
// answered (or its answer failed).
func (s *wsSession) work(ctx context.Context, queue <-chan dataFrame, stop <-chan struct{}) {
	var wg sync.WaitGroup
	defer wg.Wait()
	slots := make(chan struct{}, wsInFlight)
	for {
		select {
		case <-stop:
			return
		case d := <-queue:
			select {
			case <-stop:
				return
			case slots <- struct{}{}:
			}
			hs := larkws.Headers(d.frame.Headers)
			finish := s.c.take(ctx, hs.GetString(larkws.HeaderType), d.payload)
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-slots }()
				s.answer(d, finish)
			}()
		}
	}
}

// answer runs one data frame's finish and answers on the same frame, only
// once it returned.
func (s *wsSession) answer(d dataFrame, finish func() *larkws.Response) {
	hs := larkws.Headers(d.frame.Headers)
	start := time.Now()
	resp := finish()
	if resp == nil {
		return
	}
	hs.Add(larkws.HeaderBizRt, strconv.FormatInt(time.Since(start).Milliseconds(), 10))
	p, err := json.Marshal(resp)
	if err != nil {
		s.c.logger.Error("cannot encode a frame's answer", "error", err)
		return
	}
	out := *d.frame
	out.Headers, out.Payload = hs, p
	if err := s.write(&out); err != nil {
		s.c.logger.Warn("a frame's answer not sent; Feishu will deliver it again",
			"message_id", hs.GetString(larkws.HeaderMessageID), "trace_id", hs.GetString(larkws.HeaderTraceID), "error", err)
	}
}

// take decodes one data frame's payload ("event" and "card" frames alike:
// a schema 2.0 event, a card frame's a card.action.trigger) with the
// webhook's decoder and admits it to its thread's order; the finish it
// returns hands it over and says what the webhook's status would: 200
// handled (or not taken), 400 undecodable, 500 not handled (Feishu
// delivers it again). A frame of another type gets no answer (nil), as
// the SDK does.
func (c *longConn) take(ctx context.Context, typ string, payload []byte) (finish func() *larkws.Response) {
	answer := func(r *larkws.Response) func() *larkws.Response { return func() *larkws.Response { return r } }
	if t := larkws.MessageType(typ); t != larkws.MessageTypeEvent && t != larkws.MessageTypeCard {
		c.logger.Warn("a data frame of an unknown type; not answered", "type", typ)
		return answer(nil)
	}
	env, ev, err := readEvent(payload, c.botOpenID)
	if err != nil {
		c.logger.Error("undecodable event", "frame", typ, "error", err)
		return answer(larkws.NewResponseByCode(http.StatusBadRequest))
	}
	h := env.header()
	if ev == nil {
		c.logger.Debug("event not taken", "event_id", h.ID, "type", h.Type)
		return answer(larkws.NewResponseByCode(http.StatusOK))
	}
	handle, err := c.admit(ctx, h, ev)
	if err != nil {
		c.logger.Warn("event not admitted; Feishu will deliver it again", "event_id", h.ID, "type", h.Type, "error", err)
		return answer(larkws.NewResponseByCode(http.StatusInternalServerError))
	}
	return func() *larkws.Response {
		if err := handle(); err != nil {
			c.logger.Warn("event not handled; Feishu will deliver it again", "event_id", h.ID, "type", h.Type, "error", err)
			return larkws.NewResponseByCode(http.StatusInternalServerError)
		}
		resp := larkws.NewResponseByCode(http.StatusOK)
		if _, isCard := ev.(*CardPressed); isCard {
			// A card callback's answer: an empty object, no toast.
			resp.Data = []byte("{}")
		}
		return resp
	}
}

// write writes one frame, bounded by wsWriteTimeout.
func (s *wsSession) write(f *larkws.Frame) error {
	b, err := f.Marshal()
	if err != nil {
		return err
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	_ = s.conn.SetWriteDeadline(time.Now().Add(wsWriteTimeout))
	return s.conn.WriteMessage(websocket.BinaryMessage, b)
}

// partial is a payload whose parts are arriving.
type partial struct {
	parts [][]byte
	have  []bool
	left  int
	since time.Time
}

// assemble puts a split payload together by message id: whole is false
// until its last part came. Parts older than wsPartsKeep are forgotten
// (Feishu sends the event again, unanswered).
func (s *wsSession) assemble(f *larkws.Frame, now time.Time) (payload []byte, whole bool) {
	hs := larkws.Headers(f.Headers)
	sum, seq, id := hs.GetInt(larkws.HeaderSum), hs.GetInt(larkws.HeaderSeq), hs.GetString(larkws.HeaderMessageID)
	if sum <= 1 {
		return f.Payload, true
	}
	for k, p := range s.parts {
		if now.Sub(p.since) > wsPartsKeep {
			delete(s.parts, k)
		}
	}
	if sum > wsMaxParts || seq < 0 || seq >= sum || id == "" {
		s.c.logger.Warn("a split frame out of bounds; dropped", "message_id", id, "sum", sum, "seq", seq)
		return nil, false
	}
	p := s.parts[id]
	if p == nil || len(p.parts) != sum {
		p = &partial{parts: make([][]byte, sum), have: make([]bool, sum), left: sum, since: now}
		s.parts[id] = p
	}
	if !p.have[seq] {
		p.have[seq] = true
		p.left--
	}
	p.parts[seq] = f.Payload
	if p.left > 0 {
		return nil, false
	}
	delete(s.parts, id)
	return bytes.Join(p.parts, nil), true
}
