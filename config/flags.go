package config

import (
	"reflect"
	"time"

	"github.com/spf13/pflag"
)

// RegisterFlags adds one flag per config key to fs, named after the key with
// dots and underscores turned into dashes: control.token_file is
// --control-token-file. Each flag shows the built-in default in its help,
// but Load only applies the flags the user set, so an untouched flag never
// overrides the file or the environment. opencode.servers has no flag.
// Calling it twice on the same FlagSet panics, as pflag does for any
// redefined flag.
func RegisterFlags(fs *pflag.FlagSet) {
	def := reflect.ValueOf(Defaults()).Elem()
	for _, l := range keys().leaves {
		name, usage := flagName(l.key), l.usage+" ["+l.key+"]"
		v := l.field(def)
		switch l.kind {
		case kindString:
			fs.String(name, v.String(), usage)
		case kindSecret:
			// The default of a secret is empty; never show a real one.
			fs.String(name, "", usage)
		case kindInt:
			fs.Int(name, int(v.Int()), usage)
		case kindFloat:
			fs.Float64(name, v.Float(), usage)
		case kindDuration:
			fs.Duration(name, time.Duration(v.Int()), usage)
		case kindBool:
			fs.Bool(name, v.Bool(), usage)
		case kindStrings:
			fs.StringSlice(name, v.Interface().([]string), usage)
		}
	}
}
