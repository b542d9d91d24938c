package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/simtrain/simtrain/sim/output"
)

// setAsideDamaged prepares a resumed shard whose own summary file is
// damaged: the file is renamed to FILE.damaged-N (kept, never deleted) and
// the shard starts over, with a warning naming both. Other errors (a
// missing file is fine) are returned.
func setAsideDamaged(file, sweepFile, dir string, si, sn int, warn func(string)) error {
	err := output.VerifyFile(file)
	if err == nil || errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if !errors.Is(err, output.ErrDamaged) {
		return err
	}
	aside := ""
	for n := 1; ; n++ {
		aside = file + ".damaged-" + strconv.Itoa(n)
		if _, err := os.Lstat(aside); errors.Is(err, os.ErrNotExist) {
			break
		}
	}
	if err := os.Rename(file, aside); err != nil {
		return err
	}
	warn(fmt.Sprintf("%s is damaged (%s); moved it to %s and running shard %d/%d's points again", file, damageReason(err), filepath.Base(aside), si, sn))
	return nil
}

// damageReason is what is wrong with a damaged file, without the path and
// wrapping that its error repeats.
func damageReason(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, output.ErrDamaged.Error()+": "); i >= 0 {
		return msg[i+len(output.ErrDamaged.Error())+2:]
	}
	return msg
}

// rebuildCommand is the command that rebuilds summary file f of a sweep:
// its shard, resumed (which sets the damaged file aside).
func rebuildCommand(f, sweepFile, dir string) string {
	shard := "0/1"
	var i, n int
	if _, err := fmt.Sscanf(filepath.Base(f), "summary.shard-%d-of-%d.arrow", &i, &n); err == nil {
		shard = fmt.Sprintf("%d/%d", i, n)
	}
	return fmt.Sprintf("simtrain sweep %s --out %s --shard %s --resume", sweepFile, dir, shard)
}
