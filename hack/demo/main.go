// Command demo runs batch-scheduler's event-handler framework — the real
// SchedulerCache, informers, dispatcher and default handler — against an
// in-memory API server (client-go's fake clientset), seeds a small cluster,
// changes it the way a live cluster changes, and prints what the cache
// sees after each step. It needs nothing but Go.
package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers"
	defaulthandler "github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers/default"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

type res = map[v1.ResourceName]string

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := fake.NewClientset()

	c, err := cache.New(cache.Options{Client: client})
	if err != nil {
		return err
	}
	h, err := eventhandlers.GetEventHandler(ctx, defaulthandler.Name, c, nil, nil)
	if err != nil {
		return err
	}
	if err := c.Run(ctx, h); err != nil {
		return err
	}
	if err := c.WaitForHandlersSync(ctx); err != nil {
		return err
	}
	fmt.Println("batch-scheduler demo: event handler", defaulthandler.Name, "over an in-memory API server")

	nodes := client.CoreV1().Nodes()
	pods := func(ns string) podClient { return client.CoreV1().Pods(ns) }

	step(ctx, c, "1. Three nodes of different sizes; a GPU node is tainted", func() error {
		for _, n := range []*v1.Node{
			st.MakeNode().Name("small").Capacity(res{"cpu": "2", "memory": "4Gi", "pods": "10"}).Label("pool", "batch").Obj(),
			st.MakeNode().Name("large").Capacity(res{"cpu": "16", "memory": "64Gi", "pods": "110"}).Label("pool", "batch").Obj(),
			st.MakeNode().Name("gpu").Capacity(res{"cpu": "8", "memory": "32Gi", "pods": "110", "nvidia.com/gpu": "4"}).
				Taint("nvidia.com/gpu", "true", v1.TaintEffectNoSchedule).Obj(),
		} {
			if _, err := nodes.Create(ctx, n, metav1.CreateOptions{}); err != nil {
				return err
			}
		}
		return nil
	})
	step(ctx, c, "2. Pods bound by another scheduler are counted; a pod on a node not seen yet waits on a placeholder", func() error {
		for _, p := range []*v1.Pod{
			st.MakePod().Namespace("web").Name("frontend-1").Scheduler("default-scheduler").Node("large").Phase(v1.PodRunning).Req(res{"cpu": "4", "memory": "8Gi"}).Obj(),
			st.MakePod().Namespace("web").Name("frontend-2").Scheduler("default-scheduler").Node("small").Phase(v1.PodRunning).
				Req(res{"cpu": "500m", "memory": "1Gi"}).SidecarReq(res{"cpu": "250m", "memory": "256Mi"}).Obj(),
			st.MakePod().Namespace("web").Name("cache-1").Scheduler("default-scheduler").Node("edge").Phase(v1.PodRunning).Req(res{"cpu": "1"}).Obj(),
		} {
			if _, err := pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
				return err
			}
		}
		return nil
	})
	step(ctx, c, "3. Pending work for batch-scheduler: a gang of 4 (min-available 3), a gang with a bad annotation, a single pod; another scheduler's pending pod is ignored", func() error {
		var all []*v1.Pod
		for i := 0; i < 4; i++ {
			all = append(all, st.MakePod().Namespace("ml").Name(fmt.Sprintf("train-%d", i)).Group("train").MinAvailable("3").Req(res{"cpu": "2", "memory": "4Gi"}).Obj())
		}
		all = append(all,
			st.MakePod().Namespace("ml").Name("eval-0").Group("eval").MinAvailable("three").Req(res{"cpu": "1"}).Obj(),
			st.MakePod().Namespace("etl").Name("nightly").Priority(100).Req(res{"cpu": "500m"}).Obj(),
			st.MakePod().Namespace("web").Name("frontend-3").Scheduler("default-scheduler").Req(res{"cpu": "1"}).Obj(),
		)
		for _, p := range all {
			if _, err := pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
				return err
			}
		}
		return nil
	})
	step(ctx, c, "4. Node edge appears and fills its placeholder; frontend-1 finishes (freed); node small is deleted while a pod still runs on it", func() error {
		if _, err := nodes.Create(ctx, st.MakeNode().Name("edge").Capacity(res{"cpu": "4", "memory": "8Gi", "pods": "20"}).Obj(), metav1.CreateOptions{}); err != nil {
			return err
		}
		p, err := pods("web").Get(ctx, "frontend-1", metav1.GetOptions{})
		if err != nil {
			return err
		}
		p.Status.Phase = v1.PodSucceeded
		p.ResourceVersion = "2"
		if _, err := pods("web").UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			return err
		}
		return nodes.Delete(ctx, "small", metav1.DeleteOptions{})
	})
	return nil
}

type podClient interface {
	Create(context.Context, *v1.Pod, metav1.CreateOptions) (*v1.Pod, error)
	Get(context.Context, string, metav1.GetOptions) (*v1.Pod, error)
	UpdateStatus(context.Context, *v1.Pod, metav1.UpdateOptions) (*v1.Pod, error)
}

// step applies change, waits until the cache has seen every resulting
// event, and prints the cache.
func step(ctx context.Context, c *cache.SchedulerCache, title string, change func() error) {
	before := handled(c.Dump())
	if err := change(); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", title+":", err)
		os.Exit(1)
	}
	// Settle: wait until no event has arrived for 200ms.
	last, since := before, time.Now()
	_ = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		if n := handled(c.Dump()); n != last {
			last, since = n, time.Now()
		}
		return last > before && time.Since(since) > 200*time.Millisecond, nil
	})
	fmt.Printf("\n== %s\n", title)
	printDump(c.Dump())
}

func handled(d *cache.CacheDump) int64 {
	var n int64
	for _, e := range d.Events {
		n += e.Handled
	}
	return n
}

func printDump(d *cache.CacheDump) {
	w := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NODE\tSCHEDULABLE\tREQUESTED\tIDLE\tPODS")
	for _, n := range d.Nodes {
		name := n.Name
		if n.Placeholder {
			name += " (placeholder)"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", name, brief(n.Schedulable), brief(n.Requested), brief(n.Idle), strings.Join(n.Pods, ","))
	}
	w.Flush()
	fmt.Println()
	w = tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(w, "JOB\tMIN-AVAILABLE\tTASKS\tNOTE")
	for _, j := range d.Jobs {
		var tasks []string
		for _, t := range j.Tasks {
			state := string(t.Status)
			if t.Node != "" && !t.Counted {
				state = string(t.Phase) + ", not counted"
			}
			s := fmt.Sprintf("%s[%s]", t.Pod, state)
			if t.Node != "" {
				s = fmt.Sprintf("%s[%s on %s]", t.Pod, state, t.Node)
			}
			tasks = append(tasks, s)
		}
		fmt.Fprintf(w, "%s\t%d\t%s\t%s\n", j.ID, j.MinAvailable, strings.Join(tasks, " "), j.ValidationError)
	}
	w.Flush()
	l := d.Queue.Lengths
	fmt.Printf("\nqueue: %d active, %d backoff, %d unschedulable\n", l.Active, l.Backoff, l.Unschedulable)
}

func brief(r interface{ String() string }) string {
	return strings.ReplaceAll(r.String(), " ", ",")
}
