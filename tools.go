//go:build tools

// This file pins modules that thatch's packages use so that `go mod tidy`
// keeps them while the packages that import them are being written.
package thatch

import (
	_ "github.com/asynkron/protoactor-go/actor"
	_ "github.com/hashicorp/go-hclog"
	_ "github.com/knadh/koanf/parsers/toml/v2"
	_ "github.com/knadh/koanf/parsers/yaml"
	_ "github.com/knadh/koanf/providers/confmap"
	_ "github.com/knadh/koanf/providers/env/v2"
	_ "github.com/knadh/koanf/providers/file"
	_ "github.com/knadh/koanf/providers/posflag"
	_ "github.com/knadh/koanf/v2"
	_ "github.com/onsi/ginkgo/v2"
	_ "github.com/onsi/ginkgo/v2/ginkgo"
	_ "github.com/onsi/gomega"
	_ "github.com/onsi/gomega/gexec"
	_ "github.com/spf13/pflag"
	_ "go.uber.org/goleak"
	_ "modernc.org/sqlite"
	_ "pgregory.net/rapid"
)
