package fakefeishu

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	larkws "github.com/larksuite/oapi-sdk-go/v3/ws"
	"go.uber.org/goleak"
)

// endpoint asks the fake where to connect.
func endpoint(t *testing.T, s *Server, secret string) larkws.EndpointResp {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"AppID": "cli", "AppSecret": secret})
	resp, err := http.Post(s.URL+larkws.GenEndpointUri, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var er larkws.EndpointResp
	if err := json.NewDecoder(resp.Body).Decode(&er); err != nil {
		t.Fatal(err)
	}
	return er
}

// client is a bare long-connection client: what thatch's must do, by hand.
type client struct {
	t       *testing.T
	conn    *websocket.Conn
	service int32
}

func dial(t *testing.T, s *Server) *client {
	t.Helper()
	er := endpoint(t, s, "sec")
	if er.Code != 0 || er.Data == nil || !strings.HasPrefix(er.Data.Url, "ws://127.0.0.1:") {
		t.Fatalf("endpoint answered %+v", er)
	}
	conn, _, err := websocket.DefaultDialer.Dial(er.Data.Url, nil)
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(er.Data.Url, "service_id=")
	svc, _ := strconv.Atoi(er.Data.Url[i+len("service_id="):])
	return &client{t: t, conn: conn, service: int32(svc)}
}

func (c *client) send(f *larkws.Frame) {
	c.t.Helper()
	b, _ := f.Marshal()
	if err := c.conn.WriteMessage(websocket.BinaryMessage, b); err != nil {
		c.t.Fatal(err)
	}
}

func (c *client) read() (*larkws.Frame, error) {
	_ = c.conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	_, msg, err := c.conn.ReadMessage()
	if err != nil {
		return nil, err
	}
	var f larkws.Frame
	return &f, f.Unmarshal(msg)
}

func ping(service int32) *larkws.Frame {
	return &larkws.Frame{Method: 0, Service: service, Headers: []larkws.Header{{Key: "type", Value: "ping"}}}
}

func TestTheEndpointChecksTheAppAndPingsGetPongsWithTheConfig(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	s := New("cli", "sec")
	defer s.Close()
	if er := endpoint(t, s, "wrong"); er.Code != CodeWSBadApp || er.Data != nil {
		t.Fatalf("a wrong secret got %+v", er)
	}
	if er := endpoint(t, s, "sec"); er.Data.ClientConfig.PingInterval != DefaultPingInterval {
		t.Fatalf("config %+v", er.Data.ClientConfig)
	}
	s.SetPingInterval(1)
	c := dial(t, s)
	defer c.conn.Close()
	c.send(ping(c.service + 1)) // another service's: not answered
	c.send(ping(c.service))
	f, err := c.read()
	if err != nil {
		t.Fatal(err)
	}
	var conf larkws.ClientConfig
	if larkws.Headers(f.Headers).GetString("type") != "pong" || json.Unmarshal(f.Payload, &conf) != nil || conf.PingInterval != 1 {
		t.Fatalf("answer %+v, want a pong carrying PingInterval 1", f)
	}
	if n, e, a := s.WSPings(), s.WSEndpointCalls(), s.WSConnections(); n != 1 || e != 3 || a != 1 {
		t.Fatalf("%d pings, %d endpoint calls, %d connections; want 1, 3, 1", n, e, a)
	}
}

func TestAPushIsSplitAndReturnsTheClientsAnswer(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	s := New("cli", "sec")
	defer s.Close()
	c := dial(t, s)
	defer c.conn.Close()
	type result struct {
		a   WSAnswer
		err error
	}
	done := make(chan result, 1)
	go func() {
		a, err := s.PushEvent(context.Background(), "ev-1", "im.message.receive_v1",
			TextMessage("om_1", "oc_1", "group", "", "ou_a", "hello"), 3)
		done <- result{a, err}
	}()
	var payload []byte
	var last *larkws.Frame
	for i := range 3 {
		f, err := c.read()
		if err != nil {
			t.Fatal(err)
		}
		hs := larkws.Headers(f.Headers)
		if f.Method != 1 || hs.GetString("type") != "event" || hs.GetInt("sum") != 3 || hs.GetInt("seq") != i || hs.GetString("message_id") == "" {
			t.Fatalf("part %d: %+v", i, f)
		}
		payload, last = append(payload, f.Payload...), f
	}
	var env struct {
		Schema string `json:"schema"`
		Header struct {
			EventID   string `json:"event_id"`
			EventType string `json:"event_type"`
		} `json:"header"`
	}
	if err := json.Unmarshal(payload, &env); err != nil || env.Schema != "2.0" || env.Header.EventID != "ev-1" {
		t.Fatalf("payload %s: %v", payload, err)
	}
	select {
	case r := <-done:
		t.Fatalf("the push returned %+v before an answer", r)
	default:
	}
	answer, _ := json.Marshal(larkws.Response{StatusCode: 500})
	last.Payload = answer
	last.Headers = append(last.Headers, larkws.Header{Key: "biz_rt", Value: "7"})
	c.send(last)
	if r := <-done; r.err != nil || r.a.Status != 500 || r.a.BizRT != "7" {
		t.Fatalf("push returned %+v", r)
	}
}

func TestADroppedConnectionFailsItsPushAndTheNextPushWaitsForAConnection(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	s := New("cli", "sec")
	defer s.Close()
	c := dial(t, s)
	defer c.conn.Close()
	errc := make(chan error, 1)
	go func() {
		_, err := s.PushCard(context.Background(), "ev-p", CardAction("oc_1", "om_1", "ou_a", map[string]any{"data": "x"}), 1)
		errc <- err
	}()
	f, err := c.read()
	if err != nil || larkws.Headers(f.Headers).GetString("type") != "card" {
		t.Fatalf("frame %+v, %v; want a card frame", f, err)
	}
	s.DropConnections()
	if err := <-errc; !errors.Is(err, ErrDropped) {
		t.Fatalf("push on a dropped connection: %v, want ErrDropped", err)
	}
	if _, err := c.read(); err == nil {
		t.Fatal("the client's connection is still open after the drop")
	}
	go func() {
		_, err := s.PushEvent(context.Background(), "ev-2", "im.chat.disbanded_v1", ChatEvent("oc_1", "ou_a"), 1)
		errc <- err
	}()
	c2 := dial(t, s)
	defer c2.conn.Close()
	f, err = c2.read()
	if err != nil {
		t.Fatal(err)
	}
	f.Payload, _ = json.Marshal(larkws.Response{StatusCode: 200})
	c2.send(f)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if n, open := s.WSConnections(), s.WSOpen(); n != 2 || open != 1 {
		t.Fatalf("%d connections, %d open; want 2, 1", n, open)
	}
}
