package fakefeishu

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	larkws "github.com/larksuite/oapi-sdk-go/v3/ws"
)

// The long connection's paths: the endpoint is Feishu's, the websocket's
// is the fake's (Feishu answers a URL on another host).
const (
	wsEndpointPath = larkws.GenEndpointUri
	wsPath         = "/ws/v2"
)

// CodeWSBadApp is the endpoint's answer to a wrong app id or secret: a
// client error (the fake's choice of code, the one its token call gives;
// Feishu's codes vary).
const CodeWSBadApp = 10014

// DefaultPingInterval is the PingInterval (seconds) the endpoint and the
// pongs give until SetPingInterval: Feishu's 120.
const DefaultPingInterval = 120

// PushTimeout bounds a push: the wait for a connection and for its answer.
const PushTimeout = 30 * time.Second

// ErrDropped says the connection a frame went out on closed before the
// client answered it.
var ErrDropped = errors.New("fakefeishu: the long connection closed before the answer")

// WSAnswer is the client's answer to one data frame (a ws.Response in the
// frame's payload).
type WSAnswer struct {
	// Status is the answer's code: 200 handled, 500 not (Feishu delivers
	// the event again).
	Status int
	// Data is a card callback's answer (JSON); empty for an event.
	Data []byte
	// BizRT is the biz_rt header: the handler's time, in ms.
	BizRT string
}

// wsSide is the fake's long-connection state; its zero value is ready.
type wsSide struct {
	mu        sync.Mutex
	ping      int // seconds; 0 is DefaultPingInterval
	endpoints int
	accepted  int
	pings     int
	nextID    int
	conns     []*wsConn     // open, oldest first
	changed   chan struct{} // closed (and replaced) when a connection opens
}

// wsConn is one client's websocket.
type wsConn struct {
	conn    *websocket.Conn
	service int32
	writeMu sync.Mutex
	done    chan struct{} // closed once its reader ended
	waiting map[string]chan WSAnswer
}

// SetPingInterval sets the PingInterval (seconds) the endpoint answers
// and every pong carries from now.
func (s *Server) SetPingInterval(seconds int) {
	s.ws.mu.Lock()
	defer s.ws.mu.Unlock()
	s.ws.ping = seconds
}

// WSEndpointCalls counts the calls of the endpoint, refused ones too.
func (s *Server) WSEndpointCalls() int {
	s.ws.mu.Lock()
	defer s.ws.mu.Unlock()
	return s.ws.endpoints
}

// WSConnections counts the long connections accepted so far.
func (s *Server) WSConnections() int {
	s.ws.mu.Lock()
	defer s.ws.mu.Unlock()
	return s.ws.accepted
}

// WSOpen counts the long connections open now.
func (s *Server) WSOpen() int {
	s.ws.mu.Lock()
	defer s.ws.mu.Unlock()
	return len(s.ws.conns)
}

// WSPings counts the pings answered: control frames of type ping that
// carried the connection's service id.
func (s *Server) WSPings() int {
	s.ws.mu.Lock()
	defer s.ws.mu.Unlock()
	return s.ws.pings
}

// DropConnections closes every open long connection, as Feishu does when
// it moves a client; a push waiting for an answer on one gets ErrDropped.
func (s *Server) DropConnections() {
	s.ws.mu.Lock()
	conns := s.ws.conns
	s.ws.conns = nil
	s.ws.mu.Unlock()
	for _, c := range conns {
		_ = c.conn.Close()
	}
}

// serveWS serves the long connection's paths; false for any other.
func (s *Server) serveWS(w http.ResponseWriter, r *http.Request) bool {
	switch {
	case r.URL.Path == wsEndpointPath && r.Method == http.MethodPost:
		s.wsEndpoint(w, r)
	case r.URL.Path == wsPath:
		s.wsAccept(w, r)
	default:
		return false
	}
	return true
}

// wsEndpoint answers where to connect, to the app's id and secret.
func (s *Server) wsEndpoint(w http.ResponseWriter, r *http.Request) {
	var req struct {
		AppID     string `json:"AppID"`
		AppSecret string `json:"AppSecret"`
	}
	err := json.NewDecoder(r.Body).Decode(&req)
	s.ws.mu.Lock()
	s.ws.endpoints++
	s.ws.nextID++
	id, ping := s.ws.nextID, s.ws.pingInterval()
	s.ws.mu.Unlock()
	resp := larkws.EndpointResp{Code: CodeWSBadApp, Msg: "app id or app secret invalid"}
	if err == nil && req.AppID == s.appID && req.AppSecret == s.appSecret {
		url := fmt.Sprintf("ws://%s%s?%s=dev_%d&%s=%d", strings.TrimPrefix(s.URL, "http://"), wsPath,
			larkws.DeviceID, id, larkws.ServiceID, 1000+id)
		resp = larkws.EndpointResp{Code: larkws.OK, Msg: "ok", Data: &larkws.Endpoint{Url: url,
			ClientConfig: &larkws.ClientConfig{PingInterval: ping, ReconnectCount: -1, ReconnectInterval: 120, ReconnectNonce: 30}}}
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_ = json.NewEncoder(w).Encode(resp)
}

func (ws *wsSide) pingInterval() int {
	if ws.ping > 0 {
		return ws.ping
	}
	return DefaultPingInterval
}

// wsAccept upgrades a connection that names a device and a service, and
// reads it until it closes.
func (s *Server) wsAccept(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	service, err := strconv.ParseInt(q.Get(larkws.ServiceID), 10, 32)
	if err != nil || q.Get(larkws.DeviceID) == "" {
		w.Header().Set(larkws.HeaderHandshakeStatus, strconv.Itoa(larkws.Forbidden))
		w.Header().Set(larkws.HeaderHandshakeMsg, "no device or service")
		http.Error(w, "forbidden", http.StatusForbidden)
		return
	}
	up := websocket.Upgrader{HandshakeTimeout: 10 * time.Second}
	conn, err := up.Upgrade(w, r, nil)
	if err != nil {
		return // Upgrade has answered
	}
	c := &wsConn{conn: conn, service: int32(service), done: make(chan struct{}), waiting: map[string]chan WSAnswer{}}
	s.ws.mu.Lock()
	s.ws.accepted++
	s.ws.conns = append(s.ws.conns, c)
	if s.ws.changed != nil {
		close(s.ws.changed)
		s.ws.changed = nil
	}
	s.ws.mu.Unlock()
	defer func() {
		s.ws.mu.Lock()
		for i, o := range s.ws.conns {
			if o == c {
				s.ws.conns = append(s.ws.conns[:i], s.ws.conns[i+1:]...)
				break
			}
		}
		s.ws.mu.Unlock()
		_ = conn.Close()
		close(c.done)
	}()
	s.wsRead(c)
}

// wsRead answers pings with pongs (carrying the client config) and hands
// each data frame's answer to the push waiting for it.
func (s *Server) wsRead(c *wsConn) {
	for {
		_, msg, err := c.conn.ReadMessage()
		if err != nil {
			return
		}
		var f larkws.Frame
		if f.Unmarshal(msg) != nil {
			continue
		}
		hs := larkws.Headers(f.Headers)
		switch larkws.FrameType(f.Method) {
		case larkws.FrameTypeControl:
			if hs.GetString(larkws.HeaderType) != string(larkws.MessageTypePing) || f.Service != c.service {
				continue
			}
			s.ws.mu.Lock()
			s.ws.pings++
			conf, _ := json.Marshal(larkws.ClientConfig{PingInterval: s.ws.pingInterval(), ReconnectCount: -1,
				ReconnectInterval: 120, ReconnectNonce: 30})
			s.ws.mu.Unlock()
			pong := &larkws.Frame{Method: int32(larkws.FrameTypeControl), Service: c.service, Payload: conf,
				Headers: []larkws.Header{{Key: larkws.HeaderType, Value: string(larkws.MessageTypePong)}}}
			if c.write(pong) != nil {
				return
			}
		case larkws.FrameTypeData:
			var resp larkws.Response
			if json.Unmarshal(f.Payload, &resp) != nil {
				continue
			}
			s.ws.mu.Lock()
			ch := c.waiting[hs.GetString(larkws.HeaderMessageID)]
			delete(c.waiting, hs.GetString(larkws.HeaderMessageID))
			s.ws.mu.Unlock()
			if ch != nil {
				ch <- WSAnswer{Status: resp.StatusCode, Data: resp.Data, BizRT: hs.GetString(larkws.HeaderBizRt)}
			}
		}
	}
}

func (c *wsConn) write(f *larkws.Frame) error {
	b, err := f.Marshal()
	if err != nil {
		return err
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	_ = c.conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	return c.conn.WriteMessage(websocket.BinaryMessage, b)
}

// PushEvent sends a schema 2.0 event (Poster.Envelope's, without a token)
// in an "event" frame, split in parts (1 or less: whole), and returns the
// client's answer.
func (s *Server) PushEvent(ctx context.Context, eventID, eventType string, event any, parts int) (WSAnswer, error) {
	return s.PushFrame(ctx, string(larkws.MessageTypeEvent), s.wsEnvelope(eventID, eventType, event), parts)
}

// PushCard sends a card press (event is CardAction's) as Feishu does over
// the long connection: a card.action.trigger in a "card" frame.
func (s *Server) PushCard(ctx context.Context, eventID string, event any, parts int) (WSAnswer, error) {
	return s.PushFrame(ctx, string(larkws.MessageTypeCard), s.wsEnvelope(eventID, "card.action.trigger", event), parts)
}

func (s *Server) wsEnvelope(eventID, eventType string, event any) []byte {
	return (&Poster{AppID: s.appID}).Envelope(eventID, eventType, event)
}

// PushFrame sends payload in a data frame of type typ, split in parts,
// on the newest open connection (waiting for one), and waits for the
// client's answer. Both waits are bounded by ctx and PushTimeout. Each
// push has a message id of its own, as each delivery of Feishu's has.
func (s *Server) PushFrame(ctx context.Context, typ string, payload []byte, parts int) (WSAnswer, error) {
	ctx, cancel := context.WithTimeout(ctx, PushTimeout)
	defer cancel()
	c, err := s.liveConn(ctx)
	if err != nil {
		return WSAnswer{}, err
	}
	ch := make(chan WSAnswer, 1)
	s.ws.mu.Lock()
	s.ws.nextID++
	msgID := fmt.Sprintf("msg_%d", s.ws.nextID)
	c.waiting[msgID] = ch
	s.ws.mu.Unlock()
	defer func() {
		s.ws.mu.Lock()
		delete(c.waiting, msgID)
		s.ws.mu.Unlock()
	}()
	pieces := split(payload, parts)
	for i, p := range pieces {
		f := &larkws.Frame{Method: int32(larkws.FrameTypeData), Service: c.service, SeqID: uint64(i), Payload: p,
			Headers: []larkws.Header{{Key: larkws.HeaderType, Value: typ}, {Key: larkws.HeaderMessageID, Value: msgID},
				{Key: larkws.HeaderSum, Value: strconv.Itoa(len(pieces))}, {Key: larkws.HeaderSeq, Value: strconv.Itoa(i)},
				{Key: larkws.HeaderTraceID, Value: "trace_" + msgID},
				{Key: larkws.HeaderTimestamp, Value: strconv.FormatInt(time.Now().UnixMilli(), 10)}}}
		if err := c.write(f); err != nil {
			return WSAnswer{}, fmt.Errorf("fakefeishu: push: %w", err)
		}
	}
	select {
	case a := <-ch:
		return a, nil
	case <-c.done:
		select {
		case a := <-ch:
			return a, nil
		default:
			return WSAnswer{}, ErrDropped
		}
	case <-ctx.Done():
		return WSAnswer{}, fmt.Errorf("fakefeishu: push: no answer: %w", ctx.Err())
	}
}

// liveConn is the newest open connection, once there is one.
func (s *Server) liveConn(ctx context.Context) (*wsConn, error) {
	for {
		s.ws.mu.Lock()
		if n := len(s.ws.conns); n > 0 {
			c := s.ws.conns[n-1]
			s.ws.mu.Unlock()
			return c, nil
		}
		if s.ws.changed == nil {
			s.ws.changed = make(chan struct{})
		}
		changed := s.ws.changed
		s.ws.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, fmt.Errorf("fakefeishu: push: no long connection: %w", ctx.Err())
		}
	}
}

// split cuts payload in n parts of about equal size (none empty: n is
// at most its length).
func split(payload []byte, n int) [][]byte {
	n = max(1, min(n, len(payload)))
	out := make([][]byte, n)
	for i := range n {
		out[i] = payload[i*len(payload)/n : (i+1)*len(payload)/n]
	}
	return out
}
