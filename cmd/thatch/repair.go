package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/thatch-run/thatch"
	"github.com/thatch-run/thatch/hosts/control"
)

const repairUsage = `thatch repair: look at and repair entities that cannot rebuild their state

  thatch repair [list]            list the quarantined entities and why
  thatch repair drop KIND/ID      delete the entity's journal; it starts afresh (what it held is lost)
  thatch repair release KIND/ID   try the entity again (after its journal or thatch was fixed)
`

// runRepair asks the running daemon about its quarantined entities.
func runRepair(args []string) int {
	action, entity := "list", ""
	var rest []string
	for _, a := range args {
		if a == "-h" || a == "--help" {
			fmt.Print(repairUsage)
			return 0
		}
		rest = append(rest, a)
	}
	if len(rest) > 0 && (rest[0] == "list" || rest[0] == "drop" || rest[0] == "release") {
		action, rest = rest[0], rest[1:]
	}
	if action != "list" {
		if len(rest) == 0 || len(rest[0]) == 0 || rest[0][0] == '-' {
			fmt.Fprintf(os.Stderr, "thatch repair %s: name the entity (KIND/ID, as thatch repair list shows it)\n\n%s", action, repairUsage)
			return 2
		}
		entity, rest = rest[0], rest[1:]
	}
	cfg, code, err := loadConfig("repair", rest, func(*pflag.FlagSet) {})
	if cfg == nil && err == nil {
		return code
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "thatch repair: %v\n", err)
		return code
	}
	c, _, err := control.Dial(cfg.Control.StateFile, cfg.Control.TokenFile, 10*time.Second)
	if err != nil {
		fmt.Fprintf(os.Stderr, "thatch repair: %v (repair needs the running daemon)\n", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if action == "list" {
		var raw json.RawMessage
		if err := c.Do(ctx, "GET", "/v1/status", nil, &raw); err != nil {
			fmt.Fprintf(os.Stderr, "thatch repair: %v\n", err)
			return 1
		}
		var st thatch.Status
		if err := json.Unmarshal(raw, &st); err != nil {
			fmt.Fprintf(os.Stderr, "thatch repair: %v\n", err)
			return 1
		}
		if len(st.Quarantined) == 0 {
			fmt.Println("no entity is quarantined")
			return 0
		}
		for _, q := range st.Quarantined {
			fmt.Printf("%s  since %s\n  %s\n", q.Entity, q.Since.Local().Format(time.DateTime), q.Error)
		}
		return 0
	}
	var out map[string]string
	if err := c.Do(ctx, "POST", "/v1/repair", map[string]string{"action": action, "entity": entity}, &out); err != nil {
		fmt.Fprintf(os.Stderr, "thatch repair %s %s: %v\n", action, entity, err)
		return 1
	}
	fmt.Printf("%s: %s done\n", entity, action)
	return 0
}
