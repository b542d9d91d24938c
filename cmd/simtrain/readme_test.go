package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// readmeSkips are the README commands the README test does not run, each
// with the reason. A skip that no longer matches a README line fails the
// test, so the list cannot go stale.
var readmeSkips = map[string]string{
	"go install github.com/simtrain/simtrain/cmd/simtrain@latest": "fetches the published module over the network; .ci/run installs from the clone into an empty GOPATH instead",
}

// readmeCommand is one command of a ```sh block of README.md and the
// output README shows for it (the unlabelled ``` block right after its
// sh block shows the output of that block's first command).
type readmeCommand struct {
	line int // 1-based line in README.md
	cmd  string
	want []string // lines of the shown output; "..." lines left out
}

// readmeCommands parses README.md: every non-empty line of a ```sh block is
// a command (a trailing backslash continues it); the lines of an unlabelled
// ``` block are the output of the first command of the sh block before it.
func readmeCommands(t *testing.T, path string) []readmeCommand {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cmds []readmeCommand
	block, lastSh, cont := "", -1, ""
	for i, line := range strings.Split(string(data), "\n") {
		switch {
		case block == "" && strings.HasPrefix(line, "```"):
			block = strings.TrimPrefix(line, "```")
			if block == "" {
				block = "output"
			} else if block == "sh" {
				lastSh = len(cmds)
			}
		case block != "" && line == "```":
			if block == "output" {
				lastSh = -1 // one output block per sh block
			}
			block = ""
		case block == "sh" && strings.TrimSpace(line) != "":
			if strings.HasSuffix(line, `\`) {
				cont += strings.TrimSuffix(line, `\`) + " "
				continue
			}
			cmds = append(cmds, readmeCommand{line: i + 1, cmd: cont + line})
			cont = ""
		case block == "output" && lastSh >= 0 && lastSh < len(cmds) && strings.TrimSpace(line) != "...":
			cmds[lastSh].want = append(cmds[lastSh].want, line)
		}
	}
	return cmds
}

// TestReadmeCommands runs every command in README.md's ```sh blocks with
// the simtrain binary built from this tree on PATH (`go run ./cmd/simtrain`
// stands for the same program), in a scratch directory that links the
// repository's scenarios/, and checks that each exits 0 and, where README
// shows output, that those lines are what it prints. The lines it skips are
// listed in readmeSkips with their reasons.
func TestReadmeCommands(t *testing.T) {
	bin := buildBinary(t)
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	if err := os.Symlink(filepath.Join(root, "scenarios"), filepath.Join(work, "scenarios")); err != nil {
		t.Fatal(err)
	}
	path := filepath.Dir(bin) + string(os.PathListSeparator) + os.Getenv("PATH")
	cmds := readmeCommands(t, filepath.Join(root, "README.md"))
	if len(cmds) < 10 {
		t.Fatalf("found %d commands in README.md; the parser is broken", len(cmds))
	}
	used := map[string]bool{}
	for _, c := range cmds {
		key := strings.TrimSpace(strings.SplitN(c.cmd, " #", 2)[0])
		if reason, ok := readmeSkips[key]; ok {
			used[key] = true
			t.Logf("README.md:%d skipped: %s (%s)", c.line, key, reason)
			continue
		}
		if !strings.HasPrefix(key, "simtrain ") && !strings.HasPrefix(key, "go run ./cmd/simtrain ") {
			t.Errorf("README.md:%d: %q is neither a simtrain command nor in readmeSkips", c.line, key)
			continue
		}
		shell := strings.Replace(c.cmd, "go run ./cmd/simtrain ", "simtrain ", 1)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		cmd := exec.CommandContext(ctx, "bash", "-c", shell)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "PATH="+path)
		start := time.Now()
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Errorf("README.md:%d: %s: %v\n%s", c.line, key, err, tail(string(out), 2000))
			continue
		}
		t.Logf("README.md:%d ok in %.1f s: %s", c.line, time.Since(start).Seconds(), key)
		for _, w := range c.want {
			if !strings.Contains(string(out), strings.TrimRight(w, " ")) {
				t.Errorf("README.md:%d: README shows %q, the command printed:\n%s", c.line, w, tail(string(out), 2000))
			}
		}
	}
	for k := range readmeSkips {
		if !used[k] {
			t.Errorf("readmeSkips lists %q, which README.md no longer has", k)
		}
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
