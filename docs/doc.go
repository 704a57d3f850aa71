// Package docs holds kmigrate's documentation pages (README.md's index lists them). It has no
// Go code; its test keeps what the pages show true of the binaries:
//
//   - TestDocCommands builds kverify, kreconcile and kmirror and checks every command line
//     that README.md and docs/*.md show (in fenced code blocks and inline code): its
//     subcommand exists and every flag it passes is one the subcommand's --help lists. Blocks
//     marked ```text are output and are not read.
//
// Transcripts in the pages come from scripts: make demo (scripts/demo), make demo-real and
// scripts/cutover-walkthrough.sh.
package docs
