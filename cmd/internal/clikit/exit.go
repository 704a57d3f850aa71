package clikit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/urfave/cli/v2"
)

// Exit codes shared by every command (documented in each command's --help).
const (
	ExitOK      = 0 // success: identical, exact, nothing to do
	ExitDiffers = 1 // the command worked and found differences
	ExitError   = 2 // usage, configuration or connection error
)

// ExitCoder is an error that carries the process exit code. Build it with Fail, Failf, Differs
// or DiffersErr; Main prints its message once (unless it is quiet) and returns its code.
type ExitCoder struct {
	Code int
	Err  error
	// quiet: Main prints nothing, the report has said it (Differs).
	quiet bool
}

func (e *ExitCoder) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}
func (e *ExitCoder) Unwrap() error { return e.Err }

// Fail makes err a failure of the command: exit 2, err printed once by Main. Fail(nil) is nil.
func Fail(err error) error {
	if err == nil {
		return nil
	}
	return &ExitCoder{Code: ExitError, Err: err}
}

// Failf is Fail(fmt.Errorf(format, args...)).
func Failf(format string, args ...any) error { return Fail(fmt.Errorf(format, args...)) }

// Differs makes main exit 1 and print nothing: the report already shows the differences; msg
// is only the error's text.
func Differs(msg string) error {
	return &ExitCoder{Code: ExitDiffers, Err: errors.New(msg), quiet: true}
}

// DiffersErr makes main exit 1 and print err once: the command worked but left something
// undone that the report alone does not explain (a rollback that refused a group).
func DiffersErr(err error) error { return &ExitCoder{Code: ExitDiffers, Err: err} }

// Main runs app with a context cancelled on the first SIGINT/SIGTERM (so work drains); a
// second signal exits at once. It returns the process exit code; only main calls os.Exit.
func Main(app *cli.App, args []string) int { return MainContext(context.Background(), app, args) }

// MainContext is Main with a parent context: the app also stops when parent ends (tests bound
// a command with a deadline this way). An error is printed once, as "<app name>: <error>", on
// the app's ErrWriter; an error that is no ExitCoder exits 2.
func MainContext(parent context.Context, app *cli.App, args []string) int {
	ctx, stop := signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop() // restore default handling: the second signal kills the process
	}()
	app.ExitErrHandler = func(*cli.Context, error) {} // we map errors to codes below
	err := app.RunContext(ctx, args)
	if err == nil {
		return ExitOK
	}
	var ec *ExitCoder
	if errors.As(err, &ec) && (ec.Code != ExitDiffers || AuthzHint(err) == "") {
		if !ec.quiet && ec.Err != nil {
			fmt.Fprintf(app.ErrWriter, "%s: %v\n", app.Name, err) // with what wraps it
			printAuthzHint(app, err)
		}
		return ec.Code
	}
	// Any other error, and a denied operation even where the command would report
	// differences: it could not check what it was asked to (exit 2).
	fmt.Fprintf(app.ErrWriter, "%s: %v\n", app.Name, err)
	printAuthzHint(app, err)
	return ExitError
}

// NewApp is a command's app: name, one-line usage, the description (which ends with the exit
// statuses) and its subcommands; output to standard output and error, no "help" subcommand.
// Every app has --version (VersionString) and a "completion" subcommand printing bash, zsh and
// fish scripts that complete subcommands and flags through --generate-bash-completion.
func NewApp(name, usage, description string, commands ...*cli.Command) *cli.App {
	return &cli.App{
		Name:                 name,
		Usage:                usage,
		Description:          description,
		Version:              VersionString(),
		Commands:             append(commands, completionCommand(name)),
		Writer:               os.Stdout,
		ErrWriter:            os.Stderr,
		HideHelpCommand:      true,
		EnableBashCompletion: true,
	}
}

// ReportCommand is a subcommand whose result Render writes: flags are its own, followed by the
// output flags (--format, --out). usage is the one-line summary, usageText the synopsis,
// description the full --help text.
func ReportCommand(name string, action cli.ActionFunc, flags []cli.Flag, usage, usageText, description string) *cli.Command {
	return &cli.Command{
		Name:        name,
		Usage:       usage,
		UsageText:   usageText,
		Description: description,
		Flags:       append(append([]cli.Flag(nil), flags...), OutputFlags()...),
		Action:      action,
	}
}

// printAuthzHint adds AuthzHint(err) on its own line when err is an authorization failure.
func printAuthzHint(app *cli.App, err error) {
	if h := AuthzHint(err); h != "" {
		fmt.Fprintf(app.ErrWriter, "%s: %s\n", app.Name, h)
	}
}
