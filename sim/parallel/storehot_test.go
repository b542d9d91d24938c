package parallel

import (
	"testing"

	"github.com/simtrain/simtrain/sim/collectives"
	"github.com/simtrain/simtrain/sim/engine"
)

// storeHot writes hotOf's record with the issue time and host wait it is
// given and no queue wait: on hand-made tasks with every combination of the two flags
// and every field set, into a slot holding another record (every field
// of which it must overwrite), and on the tasks of built steps with a
// host thread, each with an issue time and a host wait.
func TestStoreHotIsHotOf(t *testing.T) {
	var tasks []Task
	for _, ce := range []bool{false, true} {
		for _, sm := range []bool{false, true} {
			tasks = append(tasks, Task{Kind: KindAllReduce, Stream: StreamTP, Group: GroupTP, Op: collectives.AllReduce,
				GEMMShare: 40000, CopyEngine: ce, SMSized: sm, Dur: 123456789})
		}
	}
	tasks = append(tasks, Task{}, Task{Kind: KindBackward, Stream: StreamCompute, Dur: -1})
	for _, h := range []HostModel{{}, {On: true, KernelFwd: engine.Microsecond, KernelBwd: 2 * engine.Microsecond, Call: 7 * engine.Microsecond}} {
		cfg := steadyConfig(t, 12, h)
		progs, err := Build(cfg, unitPricer{unit: engine.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range progs {
			tasks = append(tasks, p.Tasks...)
		}
	}
	junk := hotTask{dur: 5, issue: 6, hostAfter: 7, queueAfter: 8, share: 9, kind: KindSend, group: GroupDP, stream: StreamDP, flags: 0xff}
	for i := range tasks {
		h := junk
		w := int32(i%5) - 1 // (-1: not a build's, but stored as given)
		issue := []engine.Time{98765, 1 << 40, 0, -1}[i%4]
		storeHot(&h, &tasks[i], issue, w)
		want := hotOf(&tasks[i])
		want.issue, want.hostAfter = issue, w
		if h != want {
			t.Fatalf("task %d %+v: storeHot %+v, hotOf %+v", i, tasks[i], h, want)
		}
	}
	t.Logf("%d tasks", len(tasks))
}
