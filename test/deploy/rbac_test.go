/*
Copyright The batch-scheduler Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package deploy

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
)

// The scheduler's ServiceAccount.
const (
	saNamespace = "kube-system"
	saName      = "batch-scheduler"
)

// permission is one verb on one resource (or subresource) of one API
// group, in every namespace or in one, on any object or on one name.
type permission struct {
	Group, Resource, Subresource, Verb string
	// Namespace is "" for every namespace (and for cluster-scoped
	// resources).
	Namespace string
	// Name is "" for any object, else the only one allowed
	// (resourceNames).
	Name string
}

func (p permission) String() string {
	r := p.Resource
	if p.Subresource != "" {
		r += "/" + p.Subresource
	}
	if p.Group != "" {
		r += "." + p.Group
	}
	s := p.Verb + " " + r
	if p.Name != "" {
		s += " " + p.Name
	}
	if p.Namespace != "" {
		s += " in " + p.Namespace
	}
	return s
}

func comparePermissions(a, b permission) int {
	return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Resource, b.Resource), cmp.Compare(a.Subresource, b.Subresource),
		cmp.Compare(a.Verb, b.Verb), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
}

// needed is every permission batch-scheduler uses, run as deploy/ runs it.
// deploy/rbac.yaml must grant exactly these through its own roles.
var needed = []permission{
	// pkg/cache/informers.go (SchedulerCache.Run, nativeInformers): the
	// Pod informer, always started, lists and watches every namespace.
	{Resource: "pods", Verb: "list"},
	{Resource: "pods", Verb: "watch"},
	// pkg/cache/informers.go: the Node informer, always started. The other
	// native informers start only for plugins that register for their
	// events: the volume plugins of the default profile need the storage
	// ones (priority classes: no in-tree plugin).
	{Resource: "nodes", Verb: "list"},
	{Resource: "nodes", Verb: "watch"},
	// pkg/plugins/interpodaffinity/interpodaffinity.go (New): affinity
	// terms with a namespaceSelector read namespaces' labels through an
	// informer of the cache's factory.
	{Resource: "namespaces", Verb: "list"},
	{Resource: "namespaces", Verb: "watch"},
	{Resource: "persistentvolumes", Verb: "list"},
	{Resource: "persistentvolumes", Verb: "watch"},
	{Resource: "persistentvolumeclaims", Verb: "list"},
	{Resource: "persistentvolumeclaims", Verb: "watch"},
	{Group: "storage.k8s.io", Resource: "storageclasses", Verb: "list"},
	{Group: "storage.k8s.io", Resource: "storageclasses", Verb: "watch"},
	{Group: "storage.k8s.io", Resource: "csinodes", Verb: "list"},
	{Group: "storage.k8s.io", Resource: "csinodes", Verb: "watch"},
	{Group: "storage.k8s.io", Resource: "csidrivers", Verb: "list"},
	{Group: "storage.k8s.io", Resource: "csidrivers", Verb: "watch"},
	{Group: "storage.k8s.io", Resource: "csistoragecapacities", Verb: "list"},
	{Group: "storage.k8s.io", Resource: "csistoragecapacities", Verb: "watch"},
	// pkg/plugins/volumebinding/volumebinding.go (Bind): a chosen volume's
	// claimRef, and the selected-node annotation of a claim to provision.
	{Resource: "persistentvolumes", Verb: "update"},
	{Resource: "persistentvolumeclaims", Verb: "update"},
	// pkg/plugins/dynamicresources (EventsToRegister starts the
	// informers; Bind reads each claim from the API server, adds the
	// finalizer, writes the allocation and reservedFor).
	{Group: "resource.k8s.io", Resource: "resourceclaims", Verb: "list"},
	{Group: "resource.k8s.io", Resource: "resourceclaims", Verb: "watch"},
	{Group: "resource.k8s.io", Resource: "resourceslices", Verb: "list"},
	{Group: "resource.k8s.io", Resource: "resourceslices", Verb: "watch"},
	{Group: "resource.k8s.io", Resource: "deviceclasses", Verb: "list"},
	{Group: "resource.k8s.io", Resource: "deviceclasses", Verb: "watch"},
	// pkg/cache/claims.go: the devices of pods' own claims, counted
	// against queue quotas, are read from their ResourceClaimTemplates.
	{Group: "resource.k8s.io", Resource: "resourceclaimtemplates", Verb: "list"},
	{Group: "resource.k8s.io", Resource: "resourceclaimtemplates", Verb: "watch"},
	{Group: "resource.k8s.io", Resource: "resourceclaims", Verb: "get"},
	{Group: "resource.k8s.io", Resource: "resourceclaims", Verb: "update"},
	{Group: "resource.k8s.io", Resource: "resourceclaims", Subresource: "status", Verb: "update"},
	// pkg/custominformer/http.go (newKubeconfigSource, NewListWatch): the
	// "external-workloads" custom informer of deploy/configmap.yaml lists
	// and watches ExternalWorkloads of this cluster.
	{Group: "batch-scheduler.io", Resource: "externalworkloads", Verb: "list"},
	{Group: "batch-scheduler.io", Resource: "externalworkloads", Verb: "watch"},
	// pkg/eventhandlers/default/groupobjects.go (groupResources) and
	// pkg/cache/discovery.go: the group objects of the gang dialects and
	// of the owners gangs are inferred from are watched by the cache's
	// dynamic informers where the API server serves them: Jobs always,
	// PodGroups, CompositePodGroups, RayClusters, JobSets,
	// LeaderWorkerSets, MPIJobs and PyTorchJobs where their APIs exist.
	{Group: "batch", Resource: "jobs", Verb: "list"},
	{Group: "batch", Resource: "jobs", Verb: "watch"},
	{Group: "scheduling.k8s.io", Resource: "podgroups", Verb: "list"},
	{Group: "scheduling.k8s.io", Resource: "podgroups", Verb: "watch"},
	{Group: "scheduling.k8s.io", Resource: "compositepodgroups", Verb: "list"},
	{Group: "scheduling.k8s.io", Resource: "compositepodgroups", Verb: "watch"},
	{Group: "scheduling.x-k8s.io", Resource: "podgroups", Verb: "list"},
	{Group: "scheduling.x-k8s.io", Resource: "podgroups", Verb: "watch"},
	{Group: "scheduling.volcano.sh", Resource: "podgroups", Verb: "list"},
	{Group: "scheduling.volcano.sh", Resource: "podgroups", Verb: "watch"},
	{Group: "scheduling.run.ai", Resource: "podgroups", Verb: "list"},
	{Group: "scheduling.run.ai", Resource: "podgroups", Verb: "watch"},
	{Group: "ray.io", Resource: "rayclusters", Verb: "list"},
	{Group: "ray.io", Resource: "rayclusters", Verb: "watch"},
	{Group: "jobset.x-k8s.io", Resource: "jobsets", Verb: "list"},
	{Group: "jobset.x-k8s.io", Resource: "jobsets", Verb: "watch"},
	{Group: "leaderworkerset.x-k8s.io", Resource: "leaderworkersets", Verb: "list"},
	{Group: "leaderworkerset.x-k8s.io", Resource: "leaderworkersets", Verb: "watch"},
	{Group: "kubeflow.org", Resource: "mpijobs", Verb: "list"},
	{Group: "kubeflow.org", Resource: "mpijobs", Verb: "watch"},
	{Group: "kubeflow.org", Resource: "pytorchjobs", Verb: "list"},
	{Group: "kubeflow.org", Resource: "pytorchjobs", Verb: "watch"},
	// pkg/tenancy/sources.go: the project's own Queues and
	// Volcano's are watched; pkg/tenancy/status writes the status of ours.
	{Group: "batch-scheduler.io", Resource: "queues", Verb: "list"},
	{Group: "batch-scheduler.io", Resource: "queues", Verb: "watch"},
	{Group: "scheduling.volcano.sh", Resource: "queues", Verb: "list"},
	{Group: "scheduling.volcano.sh", Resource: "queues", Verb: "watch"},
	{Group: "batch-scheduler.io", Resource: "queues", Subresource: "status", Verb: "patch"},
	// pkg/podgroups/writer.go (sync): the status of those PodGroups is
	// replaced (UpdateStatus), as their own schedulers write it.
	{Group: "scheduling.k8s.io", Resource: "podgroups", Subresource: "status", Verb: "update"},
	{Group: "scheduling.x-k8s.io", Resource: "podgroups", Subresource: "status", Verb: "update"},
	{Group: "scheduling.volcano.sh", Resource: "podgroups", Subresource: "status", Verb: "update"},
	{Group: "scheduling.run.ai", Resource: "podgroups", Subresource: "status", Verb: "update"},
	{Group: "scheduling.k8s.io", Resource: "compositepodgroups", Subresource: "status", Verb: "update"},
	// pkg/plugins/defaultbinder/defaultbinder.go (Bind): Pods().Bind posts
	// a Binding to pods/binding.
	{Resource: "pods", Subresource: "binding", Verb: "create"},
	// pkg/scheduler/status.go (patchCondition): a strategic merge patch of
	// pods/status sets the PodScheduled condition.
	{Resource: "pods", Subresource: "status", Verb: "patch"},
	// pkg/scheduler/evict.go (evict, patchNominatedNodeName): preemption
	// evicts its victims through the Eviction API and sets the preemptor's
	// status.nominatedNodeName with a merge patch of pods/status (above).
	{Resource: "pods", Subresource: "eviction", Verb: "create"},
	// cmd/batch-scheduler/app/server.go (newServer): preemption reads
	// PodDisruptionBudgets through an informer of the cache's factory.
	{Group: "policy", Resource: "poddisruptionbudgets", Verb: "list"},
	{Group: "policy", Resource: "poddisruptionbudgets", Verb: "watch"},
	// cmd/batch-scheduler/app/server.go (newServer): the events.k8s.io/v1
	// broadcaster of client-go's tools/events creates an event, and
	// patches it when it repeats (recordEvent, an event series).
	{Group: "events.k8s.io", Resource: "events", Verb: "create"},
	{Group: "events.k8s.io", Resource: "events", Verb: "patch"},
	// cmd/batch-scheduler/app/leader.go (runElected): client-go's LeaseLock
	// on kube-system/batch-scheduler gets, creates and updates the Lease.
	// Create cannot be limited to a name.
	{Group: "coordination.k8s.io", Resource: "leases", Verb: "create", Namespace: "kube-system"},
	{Group: "coordination.k8s.io", Resource: "leases", Verb: "get", Namespace: "kube-system", Name: "batch-scheduler"},
	{Group: "coordination.k8s.io", Resource: "leases", Verb: "update", Namespace: "kube-system", Name: "batch-scheduler"},
	// The secure port (--secure-port) authenticates bearer tokens with
	// TokenReviews and authorizes requests with SubjectAccessReviews.
	{Group: "authentication.k8s.io", Resource: "tokenreviews", Verb: "create"},
	{Group: "authorization.k8s.io", Resource: "subjectaccessreviews", Verb: "create"},
}

// neededFromBuiltInRoles are permissions the scheduler uses that a binding
// to a role of the API server's bootstrap policy grants, not a rule of
// deploy/rbac.yaml.
var neededFromBuiltInRoles = []permission{
	// The secure port's delegated authentication reads the client CA and
	// request-header settings from this ConfigMap (and watches it), through
	// the Role extension-apiserver-authentication-reader.
	{Resource: "configmaps", Verb: "get", Namespace: "kube-system", Name: "extension-apiserver-authentication"},
	{Resource: "configmaps", Verb: "list", Namespace: "kube-system", Name: "extension-apiserver-authentication"},
	{Resource: "configmaps", Verb: "watch", Namespace: "kube-system", Name: "extension-apiserver-authentication"},
}

// notNeeded are permissions the scheduler must not have; each is close to
// a needed one or was granted once.
var notNeeded = []permission{
	{Resource: "pods", Verb: "get"},                           // pods come from the informer
	{Resource: "pods", Subresource: "status", Verb: "update"}, // the status is patched, not replaced
	{Resource: "pods", Verb: "update"},
	{Resource: "pods", Verb: "delete"}, // no preemption
	{Resource: "nodes", Verb: "get"},
	{Resource: "nodes", Verb: "patch"},
	{Resource: "secrets", Verb: "list"},
	{Resource: "persistentvolumeclaims", Verb: "get"}, // read through the informer only
	{Resource: "persistentvolumes", Verb: "delete"},
	{Group: "storage.k8s.io", Resource: "storageclasses", Verb: "update"},
	{Group: "resource.k8s.io", Resource: "resourceslices", Verb: "update"}, // drivers publish slices
	{Group: "resource.k8s.io", Resource: "resourceclaims", Verb: "delete"},
	{Group: "storage.k8s.io", Resource: "volumeattachments", Verb: "list"},
	{Group: "scheduling.k8s.io", Resource: "priorityclasses", Verb: "list"},
	{Group: "events.k8s.io", Resource: "events", Verb: "update"},
	{Resource: "events", Verb: "create"},                                      // core/v1 events: only where events.k8s.io/v1 is not served
	{Group: "batch-scheduler.io", Resource: "grants", Verb: "list"},           // the default handler ignores Grants
	{Group: "batch-scheduler.io", Resource: "externalworkloads", Verb: "get"}, // read through the informer only
	{Group: "coordination.k8s.io", Resource: "leases", Verb: "update", Namespace: "kube-system", Name: "kube-scheduler"},
	{Group: "coordination.k8s.io", Resource: "leases", Verb: "create", Namespace: "default"},
	{Resource: "configmaps", Verb: "get", Namespace: "kube-system", Name: "kube-proxy"},
}

// roleBinding is a binding of the ServiceAccount to a role.
type roleBinding struct {
	Kind, Namespace, Name string
	RoleRef               rbacv1.RoleRef
}

// wantBindings are every binding of the ServiceAccount in deploy/.
var wantBindings = []roleBinding{
	{Kind: "ClusterRoleBinding", Name: "batch-scheduler",
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "batch-scheduler"}},
	{Kind: "RoleBinding", Namespace: "kube-system", Name: "batch-scheduler-authentication-reader",
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "extension-apiserver-authentication-reader"}},
	{Kind: "RoleBinding", Namespace: "kube-system", Name: "batch-scheduler-leader-election",
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "batch-scheduler-leader-election"}},
}

// builtInRoles are the roles of the bootstrap policy that wantBindings may
// refer to, as "<kind> <namespace>/<name>".
var builtInRoles = []string{"Role kube-system/extension-apiserver-authentication-reader"}

// granted returns what the built manifests grant the ServiceAccount
// through their own roles, and its bindings.
func granted(t *testing.T) ([]permission, []roleBinding) {
	t.Helper()
	return grantedIn(t, built(t), saNamespace, saName)
}

// grantedIn returns what objs grant the ServiceAccount namespace/name
// through their own roles, and its bindings.
func grantedIn(t *testing.T, objs []*unstructured.Unstructured, namespace, name string) ([]permission, []roleBinding) {
	t.Helper()
	roles := map[string]*unstructured.Unstructured{} // "<kind> <namespace>/<name>"
	for _, o := range objs {
		if o.GetKind() == "Role" || o.GetKind() == "ClusterRole" {
			roles[o.GetKind()+" "+o.GetNamespace()+"/"+o.GetName()] = o
		}
	}
	var perms []permission
	var bindings []roleBinding
	for _, o := range objs {
		var subjects []rbacv1.Subject
		var ref rbacv1.RoleRef
		switch o.GetKind() {
		case "ClusterRoleBinding":
			var b rbacv1.ClusterRoleBinding
			decode(t, o, &b)
			subjects, ref = b.Subjects, b.RoleRef
		case "RoleBinding":
			var b rbacv1.RoleBinding
			decode(t, o, &b)
			subjects, ref = b.Subjects, b.RoleRef
		default:
			continue
		}
		if !slices.ContainsFunc(subjects, func(s rbacv1.Subject) bool {
			return s.Kind == rbacv1.ServiceAccountKind && s.Namespace == namespace && s.Name == name
		}) {
			continue
		}
		bindings = append(bindings, roleBinding{Kind: o.GetKind(), Namespace: o.GetNamespace(), Name: o.GetName(), RoleRef: ref})
		roleNamespace := ""
		if ref.Kind == "Role" {
			roleNamespace = o.GetNamespace()
		}
		key := ref.Kind + " " + roleNamespace + "/" + ref.Name
		role, ok := roles[key]
		if !ok {
			if !slices.Contains(builtInRoles, key) {
				t.Errorf("%s %s refers to %s, which is neither in deploy/ nor a known built-in role", o.GetKind(), o.GetName(), key)
			}
			continue
		}
		var rules []rbacv1.PolicyRule
		if role.GetKind() == "Role" {
			var r rbacv1.Role
			decode(t, role, &r)
			rules = r.Rules
		} else {
			var r rbacv1.ClusterRole
			decode(t, role, &r)
			if r.AggregationRule != nil {
				t.Errorf("%s aggregates other roles; its rules are not all in deploy/", key)
			}
			rules = r.Rules
		}
		// A ClusterRole bound by a RoleBinding grants in that namespace.
		perms = append(perms, flatten(rules, o.GetNamespace())...)
	}
	return perms, bindings
}

// flatten lists the permissions of rules granted in namespace ("" for
// all). Wildcards and non-resource URLs are kept as written, so they show
// up as extra permissions.
func flatten(rules []rbacv1.PolicyRule, namespace string) []permission {
	var out []permission
	for _, r := range rules {
		for _, url := range r.NonResourceURLs {
			for _, verb := range r.Verbs {
				out = append(out, permission{Resource: "nonResourceURL " + url, Verb: verb})
			}
		}
		names := r.ResourceNames
		if len(names) == 0 {
			names = []string{""}
		}
		for _, group := range r.APIGroups {
			for _, res := range r.Resources {
				resource, sub, _ := strings.Cut(res, "/")
				for _, verb := range r.Verbs {
					for _, name := range names {
						out = append(out, permission{Group: group, Resource: resource, Subresource: sub, Verb: verb, Namespace: namespace, Name: name})
					}
				}
			}
		}
	}
	return out
}

// comparePermissionSets reports, with t.Errorf, every permission of want
// missing from got (formatting it with missing) and every one of got not
// in want (with extra). Duplicates do not count.
func comparePermissionSets(t *testing.T, got, want []permission, missing, extra string) {
	t.Helper()
	g := slices.Compact(slices.SortedFunc(slices.Values(got), comparePermissions))
	w := slices.Compact(slices.SortedFunc(slices.Values(want), comparePermissions))
	for _, p := range w {
		if _, found := slices.BinarySearchFunc(g, p, comparePermissions); !found {
			t.Errorf(missing, p)
		}
	}
	for _, p := range g {
		if _, found := slices.BinarySearchFunc(w, p, comparePermissions); !found {
			t.Errorf(extra, p)
		}
	}
}

// TestRBACRulesMatchCode compares the rules of deploy/ for the
// ServiceAccount with the table of permissions the code needs: nothing
// missing, nothing more.
func TestRBACRulesMatchCode(t *testing.T) {
	perms, bindings := granted(t)

	comparePermissionSets(t, perms, needed, "missing: %s", "granted but not needed: %s")

	byName := func(a, b roleBinding) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	}
	slices.SortFunc(bindings, byName)
	wb := slices.SortedFunc(slices.Values(wantBindings), byName)
	if !slices.Equal(bindings, wb) {
		t.Errorf("bindings of the ServiceAccount:\n got %+v\nwant %+v", bindings, wb)
	}
}

// TestRBACAccessReviews applies the RBAC manifests and asks the API
// server's authorizer, with SubjectAccessReviews for the ServiceAccount,
// about every needed permission (allowed) and every one in notNeeded
// (denied).
func TestRBACAccessReviews(t *testing.T) {
	applyForReal(t, isKind("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"))

	saUser := serviceaccount.MakeUsername(saNamespace, saName)
	saGroups := append(serviceaccount.MakeGroupNames(saNamespace), user.AllAuthenticated)
	type check struct {
		p     permission
		allow bool
	}
	var checks []check
	for _, p := range slices.Concat(needed, neededFromBuiltInRoles) {
		checks = append(checks, check{p, true})
	}
	for _, p := range notNeeded {
		checks = append(checks, check{p, false})
	}

	// The authorizer sees new bindings through an informer: wait until
	// every answer is as expected, then report the ones that are not.
	var wrong []string
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var w []string
		for _, c := range checks {
			attrs := &authorizationv1.ResourceAttributes{
				Namespace: c.p.Namespace, Verb: c.p.Verb, Group: c.p.Group,
				Resource: c.p.Resource, Subresource: c.p.Subresource, Name: c.p.Name,
			}
			allowed, reason, err := review(ctx, saUser, saGroups, authorizationv1.SubjectAccessReviewSpec{ResourceAttributes: attrs})
			if err != nil {
				return false, err
			}
			if allowed != c.allow {
				w = append(w, fmt.Sprintf("%s: allowed %t, want %t (%s)", c.p, allowed, c.allow, reason))
			}
		}
		wrong = w // the answers of the last complete round
		return len(w) == 0, nil
	})
	if err != nil {
		t.Errorf("access reviews for %s: %v", saUser, err)
		for _, w := range wrong {
			t.Error(w)
		}
	}
}

// review asks the API server whether user in groups may do what spec says.
func review(ctx context.Context, userName string, groups []string, spec authorizationv1.SubjectAccessReviewSpec) (bool, string, error) {
	spec.User, spec.Groups = userName, groups
	sar, err := cp.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx,
		&authorizationv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		return false, "", fmt.Errorf("SubjectAccessReview for %s: %w", userName, err)
	}
	return sar.Status.Allowed, sar.Status.Reason, nil
}

// accessCheck is one SubjectAccessReview of a non-resource URL and its
// expected verdict.
type accessCheck struct {
	user, verb, path string
	allow            bool
}

// TestMonitoringClusterRole checks the example role for clients of the
// secure port: it allows get on /metrics and /debug/*, nothing else, and
// only to whom it is bound.
func TestMonitoringClusterRole(t *testing.T) {
	const scraper = "deploy-test-scraper"
	checkNonResourceRole(t, "batch-scheduler-monitoring", scraper, []string{"/metrics", "/debug/*"}, []accessCheck{
		{scraper, "get", "/metrics", true},
		{scraper, "get", "/debug/cache", true},
		{scraper, "get", "/debug/pprof/heap", true},
		{scraper, "post", "/metrics", false},
		{scraper, "get", "/configz", false},
		{scraper, "get", "/demand", false},
		{"deploy-test-someone-else", "get", "/metrics", false},
		{"deploy-test-someone-else", "get", "/debug/cache", false},
	})
}

// TestDemandReaderClusterRole checks the example role for a two-level
// allocator: get on /demand, nothing else.
func TestDemandReaderClusterRole(t *testing.T) {
	const allocator = "deploy-test-allocator"
	checkNonResourceRole(t, "batch-scheduler-demand-reader", allocator, []string{"/demand"}, []accessCheck{
		{allocator, "get", "/demand", true},
		{allocator, "get", "/metrics", false},
		{allocator, "get", "/debug/cache", false},
		{allocator, "post", "/demand", false},
		{"deploy-test-someone-else", "get", "/demand", false},
	})
}

// checkNonResourceRole checks that the ClusterRole name of the
// kustomization grants exactly get on urls, then binds it to subject on the
// API server and runs checks as SubjectAccessReviews.
func checkNonResourceRole(t *testing.T, name, subject string, urls []string, checks []accessCheck) {
	t.Helper()
	var role rbacv1.ClusterRole
	decode(t, find(t, "ClusterRole", name), &role)
	if len(role.Rules) != 1 || !slices.Equal(role.Rules[0].NonResourceURLs, urls) ||
		!slices.Equal(role.Rules[0].Verbs, []string{"get"}) || len(role.Rules[0].Resources) != 0 {
		t.Errorf("rules = %+v, want get on %v only", role.Rules, urls)
	}

	applyForReal(t, func(o *unstructured.Unstructured) bool {
		return o.GetKind() == "ClusterRole" && o.GetName() == role.Name
	})
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "deploy-test-" + name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: subject}},
	}
	if _, err := cp.Client.RbacV1().ClusterRoleBindings().Create(t.Context(), crb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cp.Client.RbacV1().ClusterRoleBindings().Delete(context.Background(), crb.Name, metav1.DeleteOptions{}); ignoreNotFound(err) != nil {
			t.Error(err)
		}
	})

	var wrong []string
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var w []string
		for _, c := range checks {
			allowed, reason, err := review(ctx, c.user, []string{user.AllAuthenticated}, authorizationv1.SubjectAccessReviewSpec{
				NonResourceAttributes: &authorizationv1.NonResourceAttributes{Verb: c.verb, Path: c.path},
			})
			if err != nil {
				return false, err
			}
			if allowed != c.allow {
				w = append(w, fmt.Sprintf("%s %s %s: allowed %t, want %t (%s)", c.user, c.verb, c.path, allowed, c.allow, reason))
			}
		}
		wrong = w
		return len(w) == 0, nil
	})
	if err != nil {
		t.Errorf("access reviews: %v", err)
		for _, w := range wrong {
			t.Error(w)
		}
	}
}
