package supervisor

import (
	"fmt"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/persistence"
)

// rootActor is the top of the tree; kind supervisors are its children.
type rootActor struct{}

type spawnKind struct {
	name  string
	props *actor.Props
}

func (r *rootActor) Receive(ctx actor.Context) {
	if m, ok := ctx.Message().(*spawnKind); ok {
		pid, err := ctx.SpawnNamed(m.props, m.name)
		if err != nil {
			ctx.Respond(err)
			return
		}
		ctx.Respond(pid)
	}
}

type liveQuery struct{}

type liveAnswer struct{ ids []string }

// forgetPassive asks a kind supervisor to forget an entity's journal if it
// is not live; the answer is a *forgetAnswer.
type forgetPassive struct{ id string }

type forgetAnswer struct {
	forgotten bool
	err       error
}

// quarantinePassive asks a kind supervisor to quarantine an entity that is
// not live for cause; the answer is a *quarantineAnswer.
type quarantinePassive struct {
	id    string
	cause error
}

type quarantineAnswer struct{ quarantined bool }

type stashed struct {
	env    *envelope
	sender *actor.PID
}

// kindSupervisor routes messages to the entities of one kind, spawns them
// on demand, and runs the passivation handoff.
type kindSupervisor struct {
	tree     *Tree
	spec     Spec
	strategy *strategy
	done     chan rehydrated

	live     map[string]*actor.PID
	byPID    map[string]string
	stopping map[string][]stashed
	// forgetting holds the messages for entities whose journal the forget
	// worker is deleting; they are routed (to a fresh entity) once it is.
	forgetting map[string][]stashed
}

// forgotten reports the end of a forget the worker ran for a kind.
type forgotten struct {
	id    string
	err   error
	reply *actor.PID
}

func (k *kindSupervisor) HandleFailure(sys *actor.ActorSystem, sup actor.Supervisor, child *actor.PID, rs *actor.RestartStatistics, reason any, msg any) {
	k.strategy.HandleFailure(sys, sup, child, rs, reason, msg)
}

func (k *kindSupervisor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		k.live, k.byPID, k.stopping = map[string]*actor.PID{}, map[string]string{}, map[string][]stashed{}
		k.forgetting = map[string][]stashed{}
		n, err := k.rehydrate(ctx)
		if k.done != nil {
			k.done <- rehydrated{kind: k.spec.KindName(), count: n, err: err}
			k.done = nil
		}
	case *envelope:
		k.route(ctx, m, ctx.Sender())
	case *PassivateRequest:
		pid, ok := k.live[m.ID]
		if !ok {
			return
		}
		delete(k.live, m.ID)
		k.stopping[m.ID] = nil
		// The poison pill queues behind every message already routed, so
		// none of them is lost; later ones wait in stopping.
		ctx.Poison(pid)
	case *actor.Terminated:
		id, ok := k.byPID[m.Who.Id]
		if !ok {
			return
		}
		delete(k.byPID, m.Who.Id)
		if k.live[id] != nil && k.live[id].Id == m.Who.Id {
			delete(k.live, id)
		}
		held, wasStopping := k.stopping[id]
		delete(k.stopping, id)
		if wasStopping {
			for _, s := range held {
				k.route(ctx, s.env, s.sender)
			}
		}
	case *liveQuery:
		ids := make([]string, 0, len(k.live))
		for id := range k.live {
			ids = append(ids, id)
		}
		ctx.Respond(&liveAnswer{ids: ids})
	case *forgetPassive:
		k.forget(ctx, m.id)
	case *quarantinePassive:
		_, live := k.live[m.id]
		_, stopping := k.stopping[m.id]
		_, forgetting := k.forgetting[m.id]
		ok := !live && !stopping && !forgetting
		if ok {
			k.tree.quarantine(actors.Identity{Kind: k.spec.KindName(), ID: m.id}.String(), m.cause)
		}
		ctx.Respond(&quarantineAnswer{quarantined: ok})
	case *forgotten:
		held := k.forgetting[m.id]
		delete(k.forgetting, m.id)
		ctx.Send(m.reply, &forgetAnswer{forgotten: m.err == nil, err: m.err})
		for _, s := range held {
			k.route(ctx, s.env, s.sender)
		}
	case *actor.Stopping, *actor.Stopped, *actor.Restarting:
	default:
		k.tree.log.Warn("kind supervisor got an unexpected message", "kind", k.spec.KindName(), "message", fmt.Sprintf("%T", m))
	}
}

// forget deletes the journal of an entity that is not live. Spawns happen
// on this goroutine, so the check cannot go stale; the delete itself (a
// synced batch) runs on the tree's forget worker, not here, so that the
// kind's routing does not wait for it. Messages for the entity wait in
// forgetting until it is done, so none wakes on a journal half gone.
func (k *kindSupervisor) forget(ctx actor.Context, id string) {
	_, live := k.live[id]
	_, stopping := k.stopping[id]
	_, busy := k.forgetting[id]
	if live || stopping || busy {
		ctx.Respond(&forgetAnswer{})
		return
	}
	reply, self, root := ctx.Sender(), ctx.Self(), ctx.ActorSystem().Root
	ident := persistence.Identity{Kind: k.spec.KindName(), ID: id}
	job := func() {
		err := k.tree.forget(ident)
		root.Send(self, &forgotten{id: id, err: err, reply: reply})
	}
	if !k.tree.enqueueForget(job) {
		ctx.Respond(&forgetAnswer{err: ErrStopped})
		return
	}
	k.forgetting[id] = nil
}

func (k *kindSupervisor) route(ctx actor.Context, env *envelope, sender *actor.PID) {
	if held, ok := k.stopping[env.id]; ok {
		k.stopping[env.id] = append(held, stashed{env: env, sender: sender})
		return
	}
	if held, ok := k.forgetting[env.id]; ok {
		k.forgetting[env.id] = append(held, stashed{env: env, sender: sender})
		return
	}
	// A quarantined entity that is still live is being stopped by its
	// supervisor: nothing routed to it now would be answered.
	if q, bad := k.tree.quarantinedAs(actors.Identity{Kind: k.spec.KindName(), ID: env.id}); bad {
		rejectQuarantined(ctx, env, sender, q)
		return
	}
	pid, ok := k.live[env.id]
	if !ok {
		var err error
		pid, err = ctx.SpawnNamed(k.spec.Props(env.id, k.tree.env), env.id)
		if err != nil {
			k.tree.log.Error("cannot spawn entity", "kind", k.spec.KindName(), "id", env.id, "error", err)
			rej := &Rejected{Reason: "spawn failed: " + err.Error()}
			switch {
			case env.reply != nil:
				env.reply(rej)
			case sender != nil:
				ctx.Send(sender, rej)
			}
			return
		}
		k.live[env.id] = pid
		k.byPID[pid.Id] = env.id
	}
	if env.spawn {
		return
	}
	switch {
	case env.reply != nil:
		ctx.Send(pid, &Call{Msg: env.msg, Reply: env.reply, Ack: env.ack})
	case sender != nil:
		ctx.RequestWithCustomSender(pid, env.msg, sender)
	default:
		ctx.Send(pid, env.msg)
	}
}

func (k *kindSupervisor) rehydrate(ctx actor.Context) (int, error) {
	var ids []string
	err := k.tree.journal.Active(k.spec.KindName(), func(id persistence.Identity) error {
		ids = append(ids, id.ID)
		return nil
	})
	if err != nil {
		return 0, err
	}
	for _, id := range ids {
		k.route(ctx, &envelope{id: id, spawn: true}, nil)
	}
	return len(ids), nil
}
