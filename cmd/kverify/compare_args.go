package main

import (
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/kmigrate/kmigrate/cmd/internal/clikit"
)

// positional returns the command's file arguments, accepting flags after them too: the flag
// parser stops at the first argument, so "kverify compare A B --drill ..." would leave
// "--drill ..." as arguments. Those are set here as if given first; a name the command does
// not have is an error naming it.
func positional(c *cli.Context) ([]string, error) {
	args := c.Args().Slice()
	var files []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			files = append(files, args[i+1:]...)
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			files = append(files, a)
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		f := lookupFlag(c.Command, name)
		if f == nil {
			return nil, clikit.Failf("flag provided but not defined: %s (see kverify %s --help)", a, c.Command.Name)
		}
		if _, isBool := f.(*cli.BoolFlag); isBool && !hasValue {
			value, hasValue = "true", true
		}
		if !hasValue {
			if i+1 >= len(args) {
				return nil, clikit.Failf("flag %s needs a value", a)
			}
			i++
			value = args[i]
		}
		if err := c.Set(name, value); err != nil {
			return nil, clikit.Failf("%s %s: %w", a, value, err)
		}
	}
	return files, nil
}

func lookupFlag(cmd *cli.Command, name string) cli.Flag {
	for _, f := range cmd.Flags {
		for _, n := range f.Names() {
			if n == name {
				return f
			}
		}
	}
	return nil
}
