package supervisor

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/hashicorp/go-hclog"
)

// NewActorSystem builds a protoactor system whose own log output (slog) goes
// through logger instead of protoactor's default colour writer on stdout.
// protoactor logs routine restarts at info level; they are demoted to debug
// because the tree logs every failure itself, with more context.
func NewActorSystem(logger hclog.Logger) *actor.ActorSystem {
	h := &slogToHclog{log: logger.Named("protoactor")}
	return actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(h)
	}))
}

// slogToHclog is a slog.Handler that writes to an hclog.Logger.
type slogToHclog struct {
	log   hclog.Logger
	attrs []any
	group string
}

func (h *slogToHclog) Enabled(_ context.Context, l slog.Level) bool {
	return h.log.IsDebug() || l > slog.LevelInfo
}

func (h *slogToHclog) Handle(_ context.Context, r slog.Record) error {
	args := append([]any(nil), h.attrs...)
	r.Attrs(func(a slog.Attr) bool {
		args = append(args, h.key(a.Key), fmt.Sprint(a.Value.Any()))
		return true
	})
	switch {
	case r.Level >= slog.LevelError:
		h.log.Error(r.Message, args...)
	case r.Level >= slog.LevelWarn:
		h.log.Warn(r.Message, args...)
	default:
		h.log.Debug(r.Message, args...)
	}
	return nil
}

func (h *slogToHclog) key(k string) string {
	if h.group == "" {
		return k
	}
	return h.group + "." + k
}

func (h *slogToHclog) WithAttrs(as []slog.Attr) slog.Handler {
	n := *h
	n.attrs = append([]any(nil), h.attrs...)
	for _, a := range as {
		n.attrs = append(n.attrs, h.key(a.Key), fmt.Sprint(a.Value.Any()))
	}
	return &n
}

func (h *slogToHclog) WithGroup(name string) slog.Handler {
	n := *h
	n.group = h.key(name)
	return &n
}
