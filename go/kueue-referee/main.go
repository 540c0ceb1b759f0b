// Command kueue-referee runs Kueue's own topology-aware scheduling (TAS) algorithm, from the
// sigs.k8s.io/kueue release that go.mod pins, on cases read as JSON, and prints Kueue's answer:
// the referee of tjap's re-implementation (methods kueue-bestfit and kueue-leastfree,
// heuristics/tree/kueue.py; the Python side is tjap/k8s/referee.py). Built by
// .ci/build-kueue-referee.
//
// Input: JSON Lines on stdin, one case per line (blank lines are skipped):
//
//	{"name": "c0",
//	 "levels": ["block", "rack", "kubernetes.io/hostname"],
//	 "nodes": [{"name": "n1", "labels": {"block": "b1", "rack": "r1"},
//	            "allocatable": {"nvidia.com/gpu": "8", "pods": "110"},
//	            "usage": {"nvidia.com/gpu": "8"}}],
//	 "pod_sets": [{"name": "j0", "count": 4, "requests": {"nvidia.com/gpu": "8"},
//	               "required": "rack", "slice_size": 2, "slice_required": "rack"}],
//	 "feature_gates": {"TASProfileMixed": false}}
//
// levels are node-label keys from the top; the last is normally kubernetes.io/hostname. A node
// without a kubernetes.io/hostname label gets its name as that label. Every node is Ready and
// schedulable; allocatable must name "pods" (Kueue counts one of it per pod). usage, when given,
// is a running pod outside TAS bound to that node (Kueue's non-TAS usage). A pod set has at most
// one of required / preferred (a level key) or unconstrained (true); none of them is Kueue's
// implied request (a TAS flavor and no annotation). slice_size with slice_required are
// Kueue's podset-slice-size and podset-slice-required-topology. feature_gates are Kueue's
// (TASProfileMixed off: BestFit everywhere; on, Kueue's default: LeastFreeCapacity for
// unconstrained requests); every gate a case does not name is at Kueue's default.
//
// Pod sets are admitted one after another, each in a FindTopologyAssignmentsForFlavor call of
// its own on one snapshot, as Kueue's scheduler admits one workload after another: after a
// success the assignment's usage is added to the snapshot (ClusterQueueSnapshot.AddUsage with
// the assignment's TAS usage, what Snapshot.AddWorkload does for an admitted workload), so
// the next pod set sees those nodes taken; a failure adds nothing and the next pod set is
// still tried.
//
// Output: one JSON line per case, in input order:
//
//	{"name": "c0", "pod_sets": [
//	   {"name": "j0", "assignment": {"levels": ["kubernetes.io/hostname"],
//	                                 "domains": [{"values": ["n1"], "count": 1}]}},
//	   {"name": "j1", "failure": "topology \"default\" allows to fit only 2 out of 3 pod(s)"}]}
//
// A case that cannot be run (bad JSON, an unknown gate, an invalid quantity) gives
// {"name": ..., "error": "..."} on its line and the program goes on; the exit code is 1 when
// stdin cannot be read, 0 otherwise.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
	"k8s.io/utils/ptr"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	schdcache "sigs.k8s.io/kueue/pkg/cache/scheduler"
	tasindexer "sigs.k8s.io/kueue/pkg/controller/tas/indexer"
	"sigs.k8s.io/kueue/pkg/resources"
	utiltesting "sigs.k8s.io/kueue/pkg/util/testing"
	"sigs.k8s.io/kueue/pkg/workload"
)

const (
	flavorName   = "tas"
	topologyName = "default"
	queueName    = "cq"
)

type nodeIn struct {
	Name        string            `json:"name"`
	Labels      map[string]string `json:"labels"`
	Allocatable map[string]string `json:"allocatable"`
	Usage       map[string]string `json:"usage"`
}

type podSetIn struct {
	Name          string            `json:"name"`
	Count         int32             `json:"count"`
	Requests      map[string]string `json:"requests"`
	Required      *string           `json:"required"`
	Preferred     *string           `json:"preferred"`
	Unconstrained *bool             `json:"unconstrained"`
	SliceSize     *int32            `json:"slice_size"`
	SliceRequired *string           `json:"slice_required"`
}

type caseIn struct {
	Name         string          `json:"name"`
	Levels       []string        `json:"levels"`
	Nodes        []nodeIn        `json:"nodes"`
	PodSets      []podSetIn      `json:"pod_sets"`
	FeatureGates map[string]bool `json:"feature_gates"`
}

type domainOut struct {
	Values []string `json:"values"`
	Count  int32    `json:"count"`
}

type assignmentOut struct {
	Levels  []string    `json:"levels"`
	Domains []domainOut `json:"domains"`
}

type podSetOut struct {
	Name       string         `json:"name"`
	Assignment *assignmentOut `json:"assignment,omitempty"`
	Failure    string         `json:"failure,omitempty"`
}

type caseOut struct {
	Name    string      `json:"name"`
	PodSets []podSetOut `json:"pod_sets,omitempty"`
	Error   string      `json:"error,omitempty"`
}

func resourceList(where string, in map[string]string) (corev1.ResourceList, error) {
	out := corev1.ResourceList{}
	for name, value := range in {
		q, err := resource.ParseQuantity(value)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %q is no quantity: %v", where, name, value, err)
		}
		out[corev1.ResourceName(name)] = q
	}
	return out, nil
}

// knownGates are Kueue's feature gates, as the process started (each case sets the ones it
// names and resets the others to these values).
var knownGates map[string]bool

func setGates(wanted map[string]bool) error {
	for name := range wanted {
		if _, ok := knownGates[name]; !ok {
			return fmt.Errorf("feature_gates: unknown gate %q", name)
		}
	}
	changed := map[string]bool{}
	for name, value := range knownGates {
		if w, ok := wanted[name]; ok {
			value = w
		}
		if utilfeature.DefaultFeatureGate.Enabled(featuregate.Feature(name)) != value {
			changed[name] = value
		}
	}
	if len(changed) == 0 {
		return nil
	}
	return utilfeature.DefaultMutableFeatureGate.SetFromMap(changed)
}

func run(ctx context.Context, log logr.Logger, c *caseIn) ([]podSetOut, error) {
	if len(c.Levels) == 0 {
		return nil, fmt.Errorf("levels: give at least one node-label key")
	}
	if err := setGates(c.FeatureGates); err != nil {
		return nil, err
	}
	nodes := make([]corev1.Node, 0, len(c.Nodes))
	pods := make([]corev1.Pod, 0)
	for i, n := range c.Nodes {
		where := fmt.Sprintf("nodes[%d]", i)
		if n.Name == "" {
			return nil, fmt.Errorf("%s: name is empty", where)
		}
		allocatable, err := resourceList(where+".allocatable", n.Allocatable)
		if err != nil {
			return nil, err
		}
		labels := map[string]string{}
		for k, v := range n.Labels {
			labels[k] = v
		}
		if _, ok := labels[corev1.LabelHostname]; !ok {
			labels[corev1.LabelHostname] = n.Name
		}
		nodes = append(nodes, corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: labels},
			Status: corev1.NodeStatus{
				Capacity:    allocatable,
				Allocatable: allocatable,
				Conditions: []corev1.NodeCondition{{
					Type: corev1.NodeReady, Status: corev1.ConditionTrue,
				}},
			},
		})
		if len(n.Usage) > 0 {
			usage, err := resourceList(where+".usage", n.Usage)
			if err != nil {
				return nil, err
			}
			pods = append(pods, corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "usage-" + n.Name},
				Spec: corev1.PodSpec{
					NodeName: n.Name,
					Containers: []corev1.Container{{
						Name: "c", Resources: corev1.ResourceRequirements{Requests: usage},
					}},
				},
				Status: corev1.PodStatus{Phase: corev1.PodRunning},
			})
		}
	}

	builder := utiltesting.NewClientBuilder()
	if err := tasindexer.SetupIndexes(ctx, utiltesting.AsIndexer(builder)); err != nil {
		return nil, fmt.Errorf("indexes: %v", err)
	}
	cl := builder.Build()
	cache := schdcache.New(cl)
	for i := range nodes {
		cache.TASCache().SyncNode(&nodes[i])
	}
	for i := range pods {
		cache.TASCache().Update(&pods[i], log)
	}

	// The quota covers every resource the pod sets request, far above what they need: the
	// referee asks for the topology assignment only.
	covered := map[corev1.ResourceName]bool{}
	requests := make([]resources.Requests, len(c.PodSets))
	for i, ps := range c.PodSets {
		rl, err := resourceList(fmt.Sprintf("pod_sets[%d].requests", i), ps.Requests)
		if err != nil {
			return nil, err
		}
		requests[i] = resources.NewRequests(rl)
		for name := range rl {
			covered[name] = true
		}
	}
	if len(covered) == 0 {
		covered[corev1.ResourceCPU] = true
	}
	names := make([]corev1.ResourceName, 0, len(covered))
	for name := range covered {
		names = append(names, name)
	}
	sort.Slice(names, func(a, b int) bool { return names[a] < names[b] })
	quotas := make([]kueue.ResourceQuota, 0, len(names))
	for _, name := range names {
		quotas = append(quotas, kueue.ResourceQuota{Name: name, NominalQuota: resource.MustParse("1000000000")})
	}

	levels := make([]kueue.TopologyLevel, 0, len(c.Levels))
	for _, key := range c.Levels {
		levels = append(levels, kueue.TopologyLevel{NodeLabel: key})
	}
	cache.AddOrUpdateTopology(log, &kueue.Topology{
		ObjectMeta: metav1.ObjectMeta{Name: topologyName},
		Spec:       kueue.TopologySpec{Levels: levels},
	})
	cache.AddOrUpdateResourceFlavor(log, &kueue.ResourceFlavor{
		ObjectMeta: metav1.ObjectMeta{Name: flavorName},
		Spec:       kueue.ResourceFlavorSpec{TopologyName: ptr.To(kueue.TopologyReference(topologyName))},
	})
	if err := cache.AddClusterQueue(ctx, &kueue.ClusterQueue{
		ObjectMeta: metav1.ObjectMeta{Name: queueName},
		Spec: kueue.ClusterQueueSpec{
			ResourceGroups: []kueue.ResourceGroup{{
				CoveredResources: names,
				Flavors: []kueue.FlavorQuotas{{
					Name: flavorName, Resources: quotas,
				}},
			}},
		},
	}); err != nil {
		return nil, fmt.Errorf("AddClusterQueue: %v", err)
	}
	snap, err := cache.Snapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("Snapshot: %v", err)
	}
	cq := snap.ClusterQueue(queueName)
	if cq == nil {
		return nil, fmt.Errorf("the ClusterQueue %q is not in the snapshot (inactive)", queueName)
	}
	tas := cq.TASFlavors[flavorName]
	if tas == nil {
		return nil, fmt.Errorf("the flavor %q has no TAS snapshot", flavorName)
	}

	out := make([]podSetOut, 0, len(c.PodSets))
	for i, ps := range c.PodSets {
		name := ps.Name
		if name == "" {
			name = fmt.Sprintf("ps%d", i)
		}
		var request *kueue.PodSetTopologyRequest
		if ps.Required != nil || ps.Preferred != nil || ps.Unconstrained != nil || ps.SliceRequired != nil {
			request = &kueue.PodSetTopologyRequest{
				Required:                    ps.Required,
				Preferred:                   ps.Preferred,
				Unconstrained:               ps.Unconstrained,
				PodSetSliceRequiredTopology: ps.SliceRequired,
				PodSetSliceSize:             ps.SliceSize,
			}
		}
		tr := schdcache.TASPodSetRequests{
			PodSet: &kueue.PodSet{
				Name:            kueue.NewPodSetReference(name),
				Count:           ps.Count,
				TopologyRequest: request,
			},
			SinglePodRequests: requests[i],
			Count:             ps.Count,
			Flavor:            flavorName,
			Implied:           request == nil,
		}
		result := tas.FindTopologyAssignmentsForFlavor(schdcache.FlavorTASRequests{tr})
		got, ok := result[kueue.NewPodSetReference(name)]
		switch {
		case !ok:
			out = append(out, podSetOut{Name: name, Failure: "no result for the pod set"})
		case got.FailureReason != "":
			out = append(out, podSetOut{Name: name, Failure: got.FailureReason})
		case got.TopologyAssignment == nil:
			out = append(out, podSetOut{Name: name, Failure: "no assignment and no reason"})
		default:
			ta := got.TopologyAssignment
			a := &assignmentOut{Levels: append([]string{}, ta.Levels...), Domains: []domainOut{}}
			usage := make(workload.TASFlavorUsage, 0, len(ta.Domains))
			for _, d := range ta.Domains {
				a.Domains = append(a.Domains, domainOut{Values: append([]string{}, d.Values...), Count: d.Count})
				usage = append(usage, workload.TopologyDomainRequests{
					Values: d.Values, SinglePodRequests: requests[i].Clone(), Count: d.Count,
				})
			}
			out = append(out, podSetOut{Name: name, Assignment: a})
			cq.AddUsage(workload.Usage{TAS: workload.TASUsage{flavorName: usage}})
		}
	}
	return out, nil
}

func main() {
	knownGates = map[string]bool{}
	for gate := range utilfeature.DefaultMutableFeatureGate.GetAll() {
		knownGates[string(gate)] = utilfeature.DefaultFeatureGate.Enabled(gate)
	}
	ctx := context.Background()
	log := logr.Discard()
	reader := bufio.NewReaderSize(os.Stdin, 1<<20)
	writer := bufio.NewWriter(os.Stdout)
	defer writer.Flush()
	encoder := json.NewEncoder(writer)
	for {
		line, err := reader.ReadBytes('\n')
		if len(strings.TrimSpace(string(line))) > 0 {
			var c caseIn
			var out caseOut
			if jerr := json.Unmarshal(line, &c); jerr != nil {
				out = caseOut{Error: fmt.Sprintf("bad JSON: %v", jerr)}
			} else {
				podSets, rerr := run(ctx, log, &c)
				out = caseOut{Name: c.Name, PodSets: podSets}
				if rerr != nil {
					out = caseOut{Name: c.Name, Error: rerr.Error()}
				}
			}
			if eerr := encoder.Encode(&out); eerr != nil {
				fmt.Fprintf(os.Stderr, "kueue-referee: %v\n", eerr)
				os.Exit(1)
			}
		}
		if err == io.EOF {
			return
		}
		if err != nil {
			writer.Flush()
			fmt.Fprintf(os.Stderr, "kueue-referee: reading stdin: %v\n", err)
			os.Exit(1)
		}
	}
}
