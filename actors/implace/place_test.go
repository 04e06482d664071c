package implace

import (
	"reflect"
	"testing"
)

// Every case of one update of one thread, with what the user would see.
func TestDecidePlacesAThreadAsTheUserWouldExpect(t *testing.T) {
	three := Cluster{Self: "n1", Members: []string{"n1", "n2", "n3"}, Up: func(n string) bool { return n != "n3" }}
	alone := Cluster{Self: "n1", Members: []string{"n1"}, Up: func(string) bool { return true }}
	msg := Update{Allowed: true}
	press := func(data string) Update { return Update{Allowed: true, Pressed: true, Press: data} }
	for _, c := range []struct {
		name string
		e    Entry
		u    Update
		c    Cluster
		want Plan
	}{
		{"a placed thread's update goes to its machine", Entry{Node: "n2"}, msg, three, Plan{PublishTo: "n2"}},
		{"a stranger's message makes nothing", Entry{}, Update{}, three, Plan{}},
		{"a stranger's press is only answered", Entry{}, Update{Pressed: true, Press: "m:n2"}, three, Plan{Answer: true}},
		{"with one machine up the thread is its, at once", Entry{}, msg, alone, Plan{Node: "n1", PublishTo: "n1"}},
		{"with none known yet it is this node's", Entry{}, msg, Cluster{Self: "n1"}, Plan{Node: "n1", PublishTo: "n1"}},
		{"the first message is held and the question asked, offering the machines up", Entry{}, msg, three,
			Plan{Hold: true, Ask: true, Offer: []string{"n1", "n2", "n3"}}},
		{"the next is held, the question not asked again", Entry{Held: 1, Asked: true}, msg, three, Plan{Hold: true, Offer: []string{"n1", "n2", "n3"}}},
		{"a machine left alone while a question is open still waits for the press", Entry{Held: 1, Asked: true}, msg, alone,
			Plan{Hold: true, Offer: []string{"n1"}}},
		{"past MaxHeld a message is refused, with a word", Entry{Held: MaxHeld, Asked: true}, msg, three,
			Plan{Notice: "Pick a machine for this thread first (the buttons above); this message was not kept."}},
		{"the press picks the machine: what was held goes to it, the question closes", Entry{Held: 2, Asked: true}, press("m:n2"), three,
			Plan{Node: "n2", PublishHeld: true, Answer: true, CloseAsk: true, Notice: "This thread's agent runs on n2."}},
		{"a machine that is down cannot be picked", Entry{Held: 2, Asked: true}, press("m:n3"), three,
			Plan{Answer: true, AnswerText: "n3 is not up now; pick another machine"}},
		{"another press waits for the pick", Entry{Held: 1, Asked: true}, press("a:claude"), three,
			Plan{Answer: true, AnswerText: "Pick a machine first"}},
	} {
		if got := Decide(c.e, c.u, c.c); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, got, c.want)
		}
	}
}
