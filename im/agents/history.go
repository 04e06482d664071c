package agents

import "math"

// Exchange is one turn of a session: what the user typed and the replies
// the agent wrote to it, in order.
type Exchange struct {
	Prompt  string
	Replies []string
}

// History reads the last n exchanges of the transcript at path (oldest
// first). Replies before the first prompt the transcript records (a
// resumed session's tail) make an exchange with no prompt. A prompt the
// CLI records twice in a row (codex writes it as an event and as a
// message) counts once.
func (a *Agent) History(path string, n int) ([]Exchange, error) {
	if n <= 0 {
		return nil, nil
	}
	var all []Exchange
	err := readLines(path, math.MaxInt, func(line []byte) error {
		if p, ok := a.userPrompt(line); ok {
			if k := len(all); k > 0 && all[k-1].Prompt == p && len(all[k-1].Replies) == 0 {
				return nil
			}
			all = append(all, Exchange{Prompt: p})
			if len(all) > 2*n {
				all = append(all[:0], all[len(all)-n:]...)
			}
			return nil
		}
		if rs := a.Replies(line); len(rs) > 0 {
			if len(all) == 0 {
				all = append(all, Exchange{})
			}
			last := &all[len(all)-1]
			last.Replies = append(last.Replies, rs...)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(all) > n {
		all = all[len(all)-n:]
	}
	return all, nil
}
