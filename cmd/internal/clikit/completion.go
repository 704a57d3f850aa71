package clikit

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"
)

// The completion scripts ask the binary itself for the candidates, through urfave/cli's
// protocol: the words typed so far followed by --generate-bash-completion print the
// subcommands, or the flags when the last word starts with "-". So they never go stale.
const bashCompletion = `# bash completion for NAME: source <(NAME completion bash)
_NAME_complete() {
  local cur opts
  COMPREPLY=()
  cur="${COMP_WORDS[COMP_CWORD]}"
  if [[ "$cur" == -* ]]; then
    opts=$("${COMP_WORDS[@]:0:COMP_CWORD}" "$cur" --generate-bash-completion 2>/dev/null)
  else
    opts=$("${COMP_WORDS[@]:0:COMP_CWORD}" --generate-bash-completion 2>/dev/null)
  fi
  COMPREPLY=($(compgen -W "$opts" -- "$cur"))
}
complete -o bashdefault -o default -F _NAME_complete NAME
`

const zshCompletion = `#compdef NAME
# zsh completion for NAME: NAME completion zsh > "${fpath[1]}/_NAME"
_NAME() {
  local -a opts
  local cur=${words[CURRENT]}
  if [[ "$cur" == -* ]]; then
    opts=("${(@f)$(${words[1,CURRENT-1]} "$cur" --generate-bash-completion 2>/dev/null)}")
  else
    opts=("${(@f)$(${words[1,CURRENT-1]} --generate-bash-completion 2>/dev/null)}")
  fi
  if [[ -n "${opts[1]}" ]]; then
    _describe 'values' opts
  else
    _files
  fi
}
if [[ "$funcstack[1]" == "_NAME" ]]; then
  _NAME "$@"
else
  compdef _NAME NAME
fi
`

// completionCommand is "<name> completion bash|zsh|fish": it prints the shell's completion
// script for the app.
func completionCommand(name string) *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print the shell completion script (bash, zsh or fish)",
		UsageText: name + " completion bash|zsh|fish",
		Description: fmt.Sprintf(`completion prints a script that completes the subcommands and flags of %[1]s.
  bash:  source <(%[1]s completion bash)          (or save it in /etc/bash_completion.d/%[1]s)
  zsh:   %[1]s completion zsh > "${fpath[1]}/_%[1]s"   (then restart zsh)
  fish:  %[1]s completion fish > ~/.config/fish/completions/%[1]s.fish`, name),
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return Failf("completion: name one shell: bash, zsh or fish")
			}
			var script string
			switch sh := c.Args().First(); sh {
			case "bash":
				script = strings.ReplaceAll(bashCompletion, "NAME", name)
			case "zsh":
				script = strings.ReplaceAll(zshCompletion, "NAME", name)
			case "fish":
				s, err := c.App.ToFishCompletion()
				if err != nil {
					return Failf("completion fish: %w", err)
				}
				script = s
			default:
				return Failf("completion: unknown shell %q: use bash, zsh or fish", sh)
			}
			_, err := fmt.Fprint(c.App.Writer, script)
			return err
		},
	}
}
