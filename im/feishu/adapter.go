package feishu

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/thatch-run/thatch/im/chat"
)

// Scheme is the prefix of Feishu's thread keys ("fs:<chat_id>",
// "fs:<chat_id>:<thread_id>").
const Scheme = "fs"

// Limits are Feishu's as the adapter uses them: a text message's part
// (bytes, Split), a button's press data (bytes, carried in the card
// value), a group's name.
var Limits = chat.Limits{MaxMessage: MaxTextBytes, MaxButtonData: 1024, MaxName: 60}

// EventKeep is how long a handled event id is remembered: Feishu
// redelivers an event for a few hours at most, the issue asks for 7 days.
const EventKeep = 7 * 24 * time.Hour

// ThreadKey is the key of a chat ("fs:<chat_id>"), or of a topic of a
// topic group ("fs:<chat_id>:<thread_id>") when threadID is set.
func ThreadKey(chatID, threadID string) string {
	if threadID == "" {
		return Scheme + ":" + chatID
	}
	return Scheme + ":" + chatID + ":" + threadID
}

// parseThread reads a ThreadKey back.
func parseThread(key string) (chatID, threadID string, err error) {
	rest, ok := strings.CutPrefix(key, Scheme+":")
	if ok {
		chatID, threadID, _ = strings.Cut(rest, ":")
		if chatID != "" && !strings.Contains(threadID, ":") {
			return chatID, threadID, nil
		}
	}
	return "", "", fmt.Errorf("%w: %q is not a Feishu thread", chat.ErrNoThread, key)
}

// EventRecord is what the EventStore keeps of one event id.
type EventRecord struct {
	// Update is the chat.Update.ID the event was handed over with: a
	// redelivery before Done gets the same one, so that the binding drops
	// it if it journaled it.
	Update int64
	// Done: the handler returned nil for it; a redelivery is answered 200
	// and dropped.
	Done bool
}

// EventStore keeps the event ids the adapter took, durably, so that an
// event Feishu delivers again (after a restart too) is handled once. The
// front end gives one backed by its row table; Put must be durable when it
// returns.
type EventStore interface {
	Get(eventID string) (EventRecord, bool, error)
	Put(eventID string, r EventRecord) error
	// Prune forgets the ids last written before cutoff.
	Prune(cutoff time.Time) error
	// MaxUpdate is the largest Update of the records kept (0 for none):
	// the floor of the ids given out after a restart.
	MaxUpdate() (int64, error)
}

// Adapter is Feishu behind the chat interface (chat.Adapter), receiving
// over the long connection (mode "ws") or through the webhook (mode
// "webhook"). See the package doc.
type Adapter struct {
	opts    Options
	client  *Client
	store   EventStore
	logger  hclog.Logger
	allowed map[string]bool
	ln      net.Listener // the webhook's; nil in mode "ws"

	gates gates // one event of a thread handed over at a time

	mu     sync.Mutex
	lastID int64               // the largest Update.ID given out (from the store at Open)
	anchor map[string]string   // thread key -> a message of that topic
	cards  map[string]string   // card message id -> its text
	chats  map[string]ChatInfo // chat id -> its name and mode
	health chat.Health
}

// The adapter has none of chat's abilities: Feishu offers a bot no
// command menu (commands are typed as text, addressed to no bot by name),
// no sign that a bot is writing, and a card callback is answered by the
// webhook's response (an empty object once the press was handled), with
// no later call.
var _ chat.Adapter = (*Adapter)(nil)

// Open builds the Adapter; in mode "webhook" it binds the webhook's
// address (Addr), so that Feishu's settings can name it before Run. Mode
// "ws" binds nothing: Run connects out. store keeps the event ids
// handled.
func Open(opts Options, store EventStore, logger hclog.Logger) (*Adapter, error) {
	opts = opts.WithDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if store == nil {
		return nil, errors.New("feishu: the adapter needs an event store")
	}
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	client, err := NewClient(opts, logger)
	if err != nil {
		return nil, err
	}
	var ln net.Listener
	if opts.Mode == ModeWebhook {
		if ln, err = net.Listen("tcp", opts.Listen); err != nil {
			return nil, fmt.Errorf("feishu: webhook: listen on %s: %w", opts.Listen, err)
		}
	}
	last, err := store.MaxUpdate()
	if err != nil {
		return nil, fmt.Errorf("feishu: read the last update id: %w", err)
	}
	a := &Adapter{opts: opts, lastID: last, client: client, store: store, logger: logger, allowed: map[string]bool{}, ln: ln,
		gates: gates{tail: map[string]chan struct{}{}}, anchor: map[string]string{}, cards: map[string]string{}, chats: map[string]ChatInfo{},
		health: chat.Health{State: "starting", Since: time.Now()}}
	for _, u := range opts.AllowedUsers {
		a.allowed[u] = true
	}
	a.prune()
	return a, nil
}

// Addr is the webhook's address (the port chosen when Listen's is 0);
// nil in mode "ws", which listens on nothing.
func (a *Adapter) Addr() net.Addr {
	if a.ln == nil {
		return nil
	}
	return a.ln.Addr()
}

// URL is the webhook's URL on its own address; "" in mode "ws", which
// has none.
func (a *Adapter) URL() string {
	if a.ln == nil {
		return ""
	}
	return "http://" + a.ln.Addr().String() + a.opts.Path
}

// Client is the Open API client behind the Adapter.
func (a *Adapter) Client() *Client { return a.client }

// Name returns "feishu".
func (*Adapter) Name() string { return "feishu" }

// Scheme returns Scheme.
func (*Adapter) Scheme() string { return Scheme }

// Limits returns Limits.
func (*Adapter) Limits() chat.Limits { return Limits }

// Allows reports whether user (an open id) is on the allow-list.
func (a *Adapter) Allows(user string) bool { return a.allowed[user] }

// Close closes the webhook's listener (Run closes it too when it ends);
// in mode "ws" it does nothing: the long connection ends with Run's
// context.
func (a *Adapter) Close() {
	if a.ln != nil {
		_ = a.ln.Close()
	}
}

// Health says whether the webhook serves, or whether the long connection
// is up (State "connecting" while it is not; LastError the last failure,
// Feishu's refusal of the app among them).
func (a *Adapter) Health() chat.Health {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.health
}

func (a *Adapter) setHealth(up bool, state, lastErr string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.health.Up != up || a.health.Since.IsZero() {
		a.health.Since = time.Now()
	}
	a.health.Up, a.health.State, a.health.LastError = up, state, lastErr
}

// Run receives until ctx ends: over the long connection in mode "ws"
// (connecting again after every failure), through the webhook on Addr in
// mode "webhook". It hands each event over as a chat.Update (a thread's
// one at a time in the order they came, threads at once), and answers
// Feishu 200 only after handle returned nil (500 otherwise, so that
// Feishu delivers it again). An event id handled
// before is answered 200 and dropped. Every goroutine Run started has
// ended when it returns.
func (a *Adapter) Run(ctx context.Context, handle chat.Handler) error {
	bctx, cancel := context.WithTimeout(ctx, a.opts.SendTimeout)
	bot, err := a.client.BotOpenID(bctx)
	cancel()
	if err != nil {
		// Mentions of the bot then stay in the text as @name; events are
		// taken all the same.
		a.logger.Warn("cannot read the bot's open id; its @-mentions are not cut", "error", err)
	}
	admit := func(ctx context.Context, h EventHeader, ev Event) (func() error, error) {
		return a.admit(ctx, h, ev, handle)
	}
	if a.opts.Mode == ModeWS {
		return a.runLongConn(ctx, bot, admit)
	}
	// Each webhook request is its own goroutine: admitted and handled at
	// once, in its thread's order.
	take := func(ctx context.Context, h EventHeader, ev Event) error {
		finish, err := admit(ctx, h, ev)
		if err != nil {
			return err
		}
		return finish()
	}
	return a.serveWebhook(ctx, bot, take)
}

// runLongConn receives over the long connection until ctx ends.
func (a *Adapter) runLongConn(ctx context.Context, bot string, admit admitFunc) error {
	lc := newLongConn(a.opts, bot, admit, a.logger.Named("ws"), a.setHealth)
	done := make(chan struct{})
	go func() {
		defer close(done)
		lc.run(ctx)
	}()
	prune := time.NewTicker(time.Hour)
	defer prune.Stop()
	for {
		select {
		case <-done:
			return nil
		case <-prune.C:
			a.prune()
		}
	}
}

func (a *Adapter) prune() {
	if err := a.store.Prune(time.Now().Add(-EventKeep)); err != nil {
		a.logger.Warn("cannot forget old event ids", "error", err)
	}
}

// serveWebhook serves the webhook on Addr until ctx ends.
func (a *Adapter) serveWebhook(ctx context.Context, bot string, take HandlerFunc) error {
	wh, err := NewWebhook(a.opts, bot, take, a.logger.Named("webhook"), nil)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle(a.opts.Path, wh)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 60 * time.Second, IdleTimeout: 2 * time.Minute,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(a.ln) }()
	a.setHealth(true, "receiving Feishu events on "+a.URL(), "")
	prune := time.NewTicker(time.Hour)
	defer prune.Stop()
	for {
		select {
		case err := <-done:
			a.setHealth(false, "the webhook stopped", fmt.Sprint(err))
			if errors.Is(err, http.ErrServerClosed) || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("feishu: webhook: %w", err)
		case <-prune.C:
			a.prune()
		case <-ctx.Done():
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = srv.Shutdown(sctx)
			cancel()
			<-done
			a.setHealth(false, "stopped", "")
			return nil
		}
	}
}

// admitFunc takes an event in two steps: the call admits it to its
// thread's order (the long connection makes it in the order events
// arrive), and the finish it returns hands it over once every event of
// the thread admitted before it is done, returning what a HandlerFunc
// would. finish must be called once for each admitted event.
type admitFunc func(ctx context.Context, h EventHeader, ev Event) (finish func() error, err error)

// admit makes the event's update and takes its place in its thread's
// order; the finish it returns hands it over, deduplicated by event id
// through the store (see the package doc, "Deduplication"). Events of
// different threads are handed over at once; of one thread, one at a
// time in the order admitted.
func (a *Adapter) admit(ctx context.Context, h EventHeader, ev Event, handle chat.Handler) (func() error, error) {
	u := a.update(ev)
	if m, ok := ev.(*MessageReceived); ok {
		if err := a.describe(ctx, &u, m); err != nil {
			return nil, err
		}
	}
	turn, leave := a.gates.enter(u.Thread)
	return func() error {
		defer leave()
		select {
		case <-turn:
		case <-ctx.Done():
			return ctx.Err()
		}
		return a.take(ctx, h, u, handle)
	}, nil
}

// take hands one admitted event over, on its thread's turn.
func (a *Adapter) take(ctx context.Context, h EventHeader, u chat.Update, handle chat.Handler) error {
	eventID := h.ID
	rec, found, err := a.store.Get(eventID)
	if err != nil {
		return fmt.Errorf("feishu: read event %s: %w", eventID, err)
	}
	if found && rec.Done {
		a.logger.Debug("event delivered again; dropped", "event_id", eventID)
		return nil
	}
	if !found {
		rec = EventRecord{Update: a.nextID(h.Created)}
		if err := a.store.Put(eventID, rec); err != nil {
			return fmt.Errorf("feishu: record event %s: %w", eventID, err)
		}
	}
	u.ID = rec.Update
	if u.Press != nil {
		u.Press.ID = eventID
	}
	if err := handle(ctx, u); err != nil {
		return err
	}
	rec.Done = true
	if err := a.store.Put(eventID, rec); err != nil {
		// Handled: a redelivery has the same Update.ID, which the binding
		// drops; so the 200 goes out all the same.
		a.logger.Warn("cannot mark an event handled", "event_id", eventID, "error", err)
	}
	return nil
}

// gates keeps the events of each thread in line: each waits for the one
// admitted before it in its thread to be done.
type gates struct {
	mu   sync.Mutex
	tail map[string]chan struct{} // thread -> closed when its last admitted event is done
}

// enter takes the next place of thread's line: turn is closed when every
// event before it is done, and leave (called once) ends its own turn.
func (g *gates) enter(thread string) (turn <-chan struct{}, leave func()) {
	mine := make(chan struct{})
	g.mu.Lock()
	prev, ok := g.tail[thread]
	g.tail[thread] = mine
	g.mu.Unlock()
	if !ok {
		prev = make(chan struct{})
		close(prev)
	}
	var once sync.Once
	return prev, func() {
		once.Do(func() {
			g.mu.Lock()
			if g.tail[thread] == mine {
				delete(g.tail, thread)
			}
			g.mu.Unlock()
			close(mine)
		})
	}
}

// nextID gives out Update.IDs in the platform's order: the event's
// creation time on Feishu's clock in microseconds (the same on every
// node of a cluster, whatever this machine's clock does), this machine's
// clock only for an event whose header has none, and never at or below
// the largest id given out before, across restarts too (the store's
// MaxUpdate): an id that would be is the largest + 1.
func (a *Adapter) nextID(created time.Time) int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	if created.IsZero() {
		created = a.opts.Clock()
	}
	id := created.UnixMicro()
	if id <= a.lastID {
		id = a.lastID + 1
	}
	a.lastID = id
	return id
}

// update turns an event into a chat.Update (ID and Press.ID are set by
// take).
func (a *Adapter) update(ev Event) chat.Update {
	switch e := ev.(type) {
	case *MessageReceived:
		u := chat.Update{Thread: ThreadKey(e.ChatID, e.ThreadID), Topic: e.ThreadID != "", User: e.SenderOpenID}
		if e.MessageType == "text" || e.MessageType == "post" {
			u.Text = e.Text
		} else {
			u.Media, u.File = e.MessageType, e.File
		}
		return u
	case *ChatRenamed:
		a.mu.Lock()
		if info, known := a.chats[e.ChatID]; known {
			info.Name = e.Name
			a.chats[e.ChatID] = info
		}
		a.mu.Unlock()
		return chat.Update{Thread: ThreadKey(e.ChatID, ""), User: e.OperatorOpenID, Name: e.Name, NameSrc: chat.NameEdited}
	case *ChatEnded:
		return chat.Update{Thread: ThreadKey(e.ChatID, ""), User: e.OperatorOpenID, Ended: &chat.Ended{Reason: string(e.Reason)}}
	case *CardPressed:
		thread := ThreadKey(e.ChatID, "")
		if t := e.Value[valueThread]; t != "" {
			if c, _, err := parseThread(t); err == nil && c == e.ChatID {
				thread = t
			}
		}
		_, topic, _ := parseThread(thread)
		return chat.Update{Thread: thread, Topic: topic != "", User: e.UserOpenID,
			Press: &chat.Press{Data: e.Value[valueData], Message: e.MessageID}}
	}
	return chat.Update{Other: fmt.Sprintf("%T", ev)}
}

// describe finishes a message's update with what the chat is: a
// thread id makes a thread of its own only in a topic group (in another
// group it is a reply thread of the chat, and the chat is the thread),
// and the thread's display name goes along as a seed (chat.NameSeed: it
// fills a name the binding does not know yet): a group's name (the chat
// API), a P2P chat's peer's (the contact API), a topic's the chat's and
// the message's first line. A chat is asked once while the adapter runs.
// A group the chat API cannot describe is an error (the event is offered
// again), since its thread key depends on its mode; a name that cannot be
// read is left out.
func (a *Adapter) describe(ctx context.Context, u *chat.Update, m *MessageReceived) error {
	a.mu.Lock()
	info, known := a.chats[m.ChatID]
	a.mu.Unlock()
	if !known {
		nctx, cancel := context.WithTimeout(ctx, a.opts.SendTimeout)
		defer cancel()
		if m.ChatType == "p2p" {
			name, err := a.client.UserName(nctx, m.SenderOpenID)
			if err != nil {
				a.logger.Warn("cannot read a P2P chat's peer's name", "chat", m.ChatID, "error", err)
				u.Thread, u.Topic = ThreadKey(m.ChatID, ""), false
				return nil
			}
			info = ChatInfo{Name: name, Mode: "p2p"}
		} else {
			var err error
			if info, err = a.client.Chat(nctx, m.ChatID); err != nil {
				return fmt.Errorf("feishu: describe chat %s: %w", m.ChatID, err)
			}
		}
		a.mu.Lock()
		a.chats[m.ChatID] = info
		a.mu.Unlock()
	}
	name := info.Name
	if m.ThreadID == "" || info.Mode != "topic" {
		u.Thread, u.Topic = ThreadKey(m.ChatID, ""), false
	} else {
		first, _, _ := strings.Cut(strings.TrimSpace(m.Text), "\n")
		if first == "" {
			first = m.ThreadID
		}
		name += ": " + first
		if m.MessageID != "" {
			a.mu.Lock()
			a.anchor[u.Thread] = m.MessageID
			a.mu.Unlock()
		}
	}
	if name != "" {
		u.Name, u.NameSrc = name, chat.NameSeed
	}
	return nil
}

// The keys of a card button's value: the press data, and the thread the
// card was sent to (a card in a topic names only its chat in the press).
const (
	valueData   = "data"
	valueThread = "thread"
)

// target is where a thread's messages go: the chat, or, for a topic, a
// reply in the thread to the topic's last message seen (Feishu posts into
// a topic only that way; one the adapter has not seen since it started
// goes to the chat).
func (a *Adapter) target(thread string) (Target, error) {
	chatID, threadID, err := parseThread(thread)
	if err != nil {
		return Target{}, err
	}
	t := Target{ChatID: chatID}
	if threadID != "" {
		a.mu.Lock()
		anchor := a.anchor[thread]
		a.mu.Unlock()
		if anchor != "" {
			t.ReplyTo, t.InThread = anchor, true
		} else {
			a.logger.Warn("no message of the topic seen yet; sending to its chat", "thread", thread)
		}
	}
	return t, nil
}

// Send sends m's text as text messages, split by Split, from m.FromPart
// on; with buttons the last part goes as a card carrying them (a part too
// long for a card goes as text, and a card of buttons follows).
func (a *Adapter) Send(ctx context.Context, m chat.Message) ([]string, error) {
	to, err := a.target(m.Thread)
	if err != nil {
		return nil, err
	}
	parts := Split(m.Text)
	if len(parts) == 0 && len(m.Buttons) == 0 {
		return nil, fmt.Errorf("%w: feishu: empty message", chat.ErrRefused)
	}
	var ids []string
	last := ""
	if (len(m.Buttons) > 0 || m.Editable) && len(parts) > 0 && len(parts[len(parts)-1]) <= maxCardText {
		last, parts = parts[len(parts)-1], parts[:len(parts)-1]
	}
	for i := m.FromPart; i < len(parts); i++ {
		sent, err := a.client.Send(ctx, to, parts[i])
		if err != nil {
			return ids, chatErr(err)
		}
		ids = append(ids, sent...)
		if m.OnPart != nil && (i < len(parts)-1 || len(m.Buttons) > 0) {
			m.OnPart(i + 1)
		}
	}
	if len(m.Buttons) == 0 && (!m.Editable || last == "") {
		return ids, nil
	}
	card := Card{Text: last, Rows: a.rows(m.Thread, m.Buttons)}
	id, err := a.client.SendCard(ctx, to, card)
	if err != nil {
		return ids, chatErr(err)
	}
	a.mu.Lock()
	a.cards[id] = last
	a.mu.Unlock()
	return append(ids, id), nil
}

// rows makes card buttons: the labels as given, the value an object with
// the press data and the thread.
func (a *Adapter) rows(thread string, rows [][]chat.Button) [][]Button {
	var out [][]Button
	for _, row := range rows {
		r := make([]Button, 0, len(row))
		for _, b := range row {
			r = append(r, Button{Label: b.Text, Value: map[string]string{valueData: b.Data, valueThread: thread}})
		}
		out = append(out, r)
	}
	return out
}

// EditButtons patches a card the adapter sent (PatchCard) with new rows,
// keeping its text. The text is known for cards sent since the adapter
// started; a card of an earlier run is patched to the buttons alone.
func (a *Adapter) EditButtons(ctx context.Context, thread, messageID string, rows [][]chat.Button) error {
	chatID, _, err := parseThread(thread)
	if err != nil {
		return err
	}
	a.mu.Lock()
	text := a.cards[messageID]
	a.mu.Unlock()
	return chatErr(a.client.PatchCard(ctx, chatID, messageID, Card{Text: text, Rows: a.rows(thread, rows)}))
}

// EditText replaces the text of a card the adapter sent (a message sent
// Editable, or with buttons, which go), patching it; chat.Editor.
func (a *Adapter) EditText(ctx context.Context, thread, messageID, text string) error {
	chatID, _, err := parseThread(thread)
	if err != nil {
		return err
	}
	if len(text) > maxCardText {
		text = strings.ToValidUTF8(text[len(text)-maxCardText:], "") // the newest lines
		if i := strings.IndexByte(text, '\n'); i >= 0 {
			text = text[i+1:]
		}
	}
	if err := a.client.PatchCard(ctx, chatID, messageID, Card{Text: text}); err != nil {
		return chatErr(err)
	}
	a.mu.Lock()
	a.cards[messageID] = text
	a.mu.Unlock()
	return nil
}

// Delete recalls a message the adapter sent; one already gone counts as
// deleted.
func (a *Adapter) Delete(ctx context.Context, thread, messageID string) error {
	chatID, _, err := parseThread(thread)
	if err != nil {
		return err
	}
	err = a.client.Delete(ctx, chatID, messageID)
	var api *APIError
	if errors.As(err, &api) && api.Code == codeNotFound {
		return nil
	}
	if err == nil {
		a.mu.Lock()
		delete(a.cards, messageID)
		a.mu.Unlock()
	}
	return chatErr(err)
}

// SendPhoto uploads the picture and sends it as an image message; a
// caption (Feishu's image messages have none) follows as a text message,
// and buttons as a card after it (a card of the caption and the buttons
// when there are both). It returns the id of the last message sent.
func (a *Adapter) SendPhoto(ctx context.Context, p chat.Photo) (string, error) {
	to, err := a.target(p.Thread)
	if err != nil {
		return "", err
	}
	name := p.Name
	if name == "" {
		name = "photo.png"
	}
	id, err := a.client.SendImage(ctx, to, name, p.Data)
	if err != nil {
		return "", chatErr(err)
	}
	if len(p.Buttons) > 0 {
		ids, err := a.Send(ctx, chat.Message{Thread: p.Thread, Text: p.Caption, Buttons: p.Buttons})
		if len(ids) > 0 {
			id = ids[len(ids)-1]
		}
		return id, err
	}
	if strings.TrimSpace(p.Caption) != "" {
		if _, err := a.client.Send(ctx, to, p.Caption); err != nil {
			return id, chatErr(err)
		}
	}
	return id, nil
}

// Feishu codes that say a request can never succeed as made.
const (
	codeBadRequest = 230001
	codeTooLarge   = 230025
	codeNotFound   = 230011
	codeNotCard    = 230031
)

// chatError keeps an error's text and causes, and adds the chat sentinel
// that says what the caller may do.
type chatError struct{ err, kind error }

func (e *chatError) Error() string   { return e.err.Error() }
func (e *chatError) Unwrap() []error { return []error{e.err, e.kind} }

// chatErr marks err with chat.ErrRefused (a request Feishu refuses as
// made; the chat gone, with chat.ErrGone too), chat.ErrTimeout (no answer
// in time, a rate limit waited out past the caller's deadline) or leaves
// it as it is.
func chatErr(err error) error {
	var api *APIError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrChatGone):
		return &chatError{err, errors.Join(chat.ErrRefused, chat.ErrGone)}
	case errors.As(err, &api):
		switch api.Code {
		case codeBadRequest, codeTooLarge, codeNotFound, codeNotCard:
			return &chatError{err, chat.ErrRefused}
		}
		return err
	case errors.Is(err, context.DeadlineExceeded):
		if strings.Contains(err.Error(), "rate limit") {
			return &chatError{err, chat.ErrRateLimited}
		}
		return &chatError{err, chat.ErrTimeout}
	}
	return err
}
