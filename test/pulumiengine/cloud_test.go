package pulumiengine

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/pulumi/pulumi/pkg/v3/resource/deploy/deploytest"
	"github.com/pulumi/pulumi/pkg/v3/resource/plugin"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/tokens"
)

// kind is what a real provider knows of one resource type and our fake ones answer with: which input
// changes replace the resource (ForceNew in pulumi-aws's Terraform schema, an immutable field in
// pulumi-kubernetes), which outputs exist only once it does (unknown in a preview of its creation), and
// whether the provider deletes it before creating its replacement.
type kind struct {
	forceNew []string // top-level keys, or a.b paths
	computed []string
	dbr      bool
	// unknownOnUpdate are outputs the provider cannot know in the preview of an update (Terraform's "known
	// after apply"); they get new values only when the update changes one of newOn (a Lambda version is
	// published only for new code or configuration: the same code and configuration return the last one).
	unknownOnUpdate, newOn []string
}

// kinds by type token; a type not listed replaces on nothing and computes only its ID and `arn`.
var kinds = map[string]kind{
	"aws:ec2/vpc:Vpc":                     {forceNew: []string{"cidrBlock", "ipv4IpamPoolId"}, computed: []string{"arn", "defaultSecurityGroupId", "cidrBlock"}},
	"aws:ec2/subnet:Subnet":               {forceNew: []string{"vpcId", "cidrBlock", "availabilityZone"}, computed: []string{"arn"}},
	"aws:ec2/securityGroup:SecurityGroup": {forceNew: []string{"name", "vpcId", "description"}, computed: []string{"arn", "ownerId"}},
	"aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule": {
		forceNew: []string{"securityGroupId"}, computed: []string{"arn", "securityGroupRuleId"},
	},
	"aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule": {
		forceNew: []string{"securityGroupId"}, computed: []string{"arn", "securityGroupRuleId"},
	},
	"aws:ec2/securityGroupRule:SecurityGroupRule": {forceNew: []string{
		"type", "securityGroupId", "sourceSecurityGroupId", "cidrBlocks", "fromPort", "toPort", "protocol",
	}, computed: []string{"securityGroupRuleId"}},
	"aws:lb/loadBalancer:LoadBalancer":                  {forceNew: []string{"name", "internal", "loadBalancerType"}, computed: []string{"arn", "dnsName", "zoneId"}},
	"aws:lb/targetGroup:TargetGroup":                    {forceNew: []string{"name", "port", "protocol", "vpcId", "targetType"}, computed: []string{"arn"}},
	"aws:lb/listener:Listener":                          {forceNew: []string{"loadBalancerArn"}, computed: []string{"arn"}},
	"aws:ecs/cluster:Cluster":                           {forceNew: []string{"name"}, computed: []string{"arn"}},
	"aws:ecs/taskDefinition:TaskDefinition":             {forceNew: []string{"family", "containerDefinitions", "cpu", "memory", "executionRoleArn", "taskRoleArn"}, computed: []string{"arn", "revision"}},
	"aws:ecs/service:Service":                           {forceNew: []string{"name", "cluster", "launchType"}, computed: []string{}},
	"aws:iam/role:Role":                                 {forceNew: []string{"name"}, computed: []string{"arn", "uniqueId"}},
	"aws:iam/rolePolicyAttachment:RolePolicyAttachment": {forceNew: []string{"role", "policyArn"}},
	"aws:iam/rolePolicy:RolePolicy":                     {forceNew: []string{"role", "name"}},
	"aws:rds/subnetGroup:SubnetGroup":                   {forceNew: []string{"name"}, computed: []string{"arn"}},
	"aws:rds/instance:Instance": {
		forceNew: []string{"identifier", "engine", "dbSubnetGroupName", "storageEncrypted", "username"},
		computed: []string{"arn", "address", "endpoint", "resourceId"},
	},
	"aws:lambda/function:Function": {
		forceNew: []string{"name"}, computed: []string{"arn", "invokeArn", "qualifiedArn", "version"},
		unknownOnUpdate: []string{"qualifiedArn", "version"}, newOn: []string{"code", "handler", "runtime", "memorySize", "timeout", "environment"},
	},
	"aws:lambda/provisionedConcurrencyConfig:ProvisionedConcurrencyConfig":                       {forceNew: []string{"functionName", "qualifier"}},
	"aws:lambda/permission:Permission":                                                           {forceNew: []string{"action", "function", "principal", "sourceArn", "statementId"}},
	"aws:apigatewayv2/api:Api":                                                                   {forceNew: []string{"protocolType"}, computed: []string{"arn", "apiEndpoint", "executionArn"}},
	"aws:apigatewayv2/integration:Integration":                                                   {forceNew: []string{"apiId", "integrationType"}, computed: []string{}},
	"aws:apigatewayv2/route:Route":                                                               {forceNew: []string{"apiId"}, computed: []string{}},
	"aws:apigatewayv2/stage:Stage":                                                               {forceNew: []string{"apiId", "name"}, computed: []string{"arn", "invokeUrl"}},
	"aws:s3/bucketV2:BucketV2":                                                                   {forceNew: []string{"bucket", "bucketPrefix"}, computed: []string{"arn", "bucketDomainName", "bucketRegionalDomainName"}},
	"aws:s3/bucketPolicy:BucketPolicy":                                                           {forceNew: []string{"bucket"}},
	"aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock":                                     {forceNew: []string{"bucket"}},
	"aws:s3/bucketVersioningV2:BucketVersioningV2":                                               {forceNew: []string{"bucket"}},
	"aws:s3/bucketServerSideEncryptionConfigurationV2:BucketServerSideEncryptionConfigurationV2": {forceNew: []string{"bucket"}},
	"aws:cloudwatch/logGroup:LogGroup":                                                           {forceNew: []string{"name"}, computed: []string{"arn"}},
	// pulumi-kubernetes replaces an object whose name or namespace changes, and a Deployment whose selector
	// does (immutable in the API); it computes `status` once the object exists.
	"kubernetes:core/v1:Namespace":                        {forceNew: []string{"metadata.name"}, computed: []string{"status"}},
	"kubernetes:apps/v1:Deployment":                       {forceNew: []string{"metadata.name", "metadata.namespace", "spec.selector"}, computed: []string{"status"}},
	"kubernetes:core/v1:Service":                          {forceNew: []string{"metadata.name", "metadata.namespace"}, computed: []string{"status"}},
	"kubernetes:core/v1:ServiceAccount":                   {forceNew: []string{"metadata.name", "metadata.namespace"}},
	"kubernetes:core/v1:ConfigMap":                        {forceNew: []string{"metadata.name", "metadata.namespace"}},
	"kubernetes:networking.k8s.io/v1:Ingress":             {forceNew: []string{"metadata.name", "metadata.namespace"}, computed: []string{"status"}},
	"kubernetes:rbac.authorization.k8s.io/v1:Role":        {forceNew: []string{"metadata.name", "metadata.namespace"}},
	"kubernetes:rbac.authorization.k8s.io/v1:RoleBinding": {forceNew: []string{"metadata.name", "metadata.namespace", "roleRef"}},
}

// fakeCloud is what every fake provider of a run manages: each resource's state by ID, which a refresh or an
// import reads back, and which `drift` changes behind the program's back.
type fakeCloud struct {
	mu    sync.Mutex
	state map[resource.ID]resource.PropertyMap
	next  int
}

func newCloud() *fakeCloud { return &fakeCloud{state: map[resource.ID]resource.PropertyMap{}} }

// drift changes one output of the resource of that ID in the cloud, as a change outside Pulumi would.
func (c *fakeCloud) drift(id resource.ID, key string, v any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.state[id] = c.state[id].Copy()
	c.state[id][resource.PropertyKey(key)] = resource.NewPropertyValue(v)
}

// exists puts a resource in the cloud that no stack manages yet, for an import.
func (c *fakeCloud) exists(id resource.ID, props map[string]any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.state[id] = resource.NewPropertyMapFromMap(props)
}

// provider is the fake provider of one package: diffs, replacements and unknowns as `kinds` says.
func (c *fakeCloud) provider(pkg tokens.Package) plugin.Provider {
	return &deploytest.Provider{
		Package: pkg,
		DiffF: func(_ context.Context, req plugin.DiffRequest) (plugin.DiffResponse, error) {
			return diff(kinds[string(req.Type)], resource.ToResourcePropertyMap(req.OldInputs),
				resource.ToResourcePropertyMap(req.NewInputs)), nil
		},
		CreateF: func(_ context.Context, req plugin.CreateRequest) (plugin.CreateResponse, error) {
			outs := resource.ToResourcePropertyMap(req.Properties).Copy()
			// An optional input the provider computes when it is not given (a VPC's CIDR from IPAM) is unknown in
			// a preview of its creation, as every computed output is.
			if req.Preview {
				for _, k := range computedOf(req.Type) {
					if _, set := outs[resource.PropertyKey(k)]; !set {
						outs[resource.PropertyKey(k)] = resource.MakeComputed(resource.NewProperty(""))
					}
				}
				return plugin.CreateResponse{Properties: resource.FromResourcePropertyMap(outs)}, nil
			}
			c.mu.Lock()
			defer c.mu.Unlock()
			c.next++
			id := resource.ID(fmt.Sprintf("%s-%04d", req.Name, c.next))
			for _, k := range computedOf(req.Type) {
				if _, set := outs[resource.PropertyKey(k)]; !set {
					outs[resource.PropertyKey(k)] = resource.NewProperty(fmt.Sprintf("%s:%s:%s", req.Type, k, id))
				}
			}
			c.state[id] = outs
			return plugin.CreateResponse{ID: id, Properties: resource.FromResourcePropertyMap(outs)}, nil
		},
		UpdateF: func(_ context.Context, req plugin.UpdateRequest) (plugin.UpdateResponse, error) {
			outs := resource.ToResourcePropertyMap(req.NewInputs).Copy()
			old := resource.ToResourcePropertyMap(req.OldOutputs)
			for _, k := range computedOf(req.Type) {
				if _, set := outs[resource.PropertyKey(k)]; !set {
					outs[resource.PropertyKey(k)] = old[resource.PropertyKey(k)]
				}
			}
			k := kinds[string(req.Type)]
			renewed := diff(kind{}, resource.ToResourcePropertyMap(req.OldInputs), outs).ChangedKeys
			for _, key := range k.unknownOnUpdate {
				switch {
				case req.Preview:
					outs[resource.PropertyKey(key)] = resource.MakeComputed(resource.NewProperty(""))
				case overlaps(keyStrings(renewed), k.newOn):
					outs[resource.PropertyKey(key)] = resource.NewProperty(fmt.Sprintf("%s:%s:%s", old[resource.PropertyKey(key)].StringValue(), key, "next"))
				}
			}
			if !req.Preview {
				c.mu.Lock()
				c.state[req.ID] = outs
				c.mu.Unlock()
			}
			return plugin.UpdateResponse{Properties: resource.FromResourcePropertyMap(outs), Status: resource.StatusOK}, nil
		},
		DeleteF: func(_ context.Context, req plugin.DeleteRequest) (plugin.DeleteResponse, error) {
			c.mu.Lock()
			delete(c.state, req.ID)
			c.mu.Unlock()
			return plugin.DeleteResponse{Status: resource.StatusOK}, nil
		},
		ReadF: func(_ context.Context, req plugin.ReadRequest) (plugin.ReadResponse, error) {
			c.mu.Lock()
			state, ok := c.state[req.ID]
			c.mu.Unlock()
			if !ok {
				return plugin.ReadResponse{ReadResult: plugin.ReadResult{ID: req.ID}, Status: resource.StatusOK}, nil
			}
			// The inputs a real provider reads back: those the program set, as the cloud has them now; for an
			// import (no inputs yet), the state less what the provider computes.
			inputs := resource.PropertyMap{}
			if given := resource.ToResourcePropertyMap(req.Inputs); len(given) > 0 {
				for k := range given {
					if v, ok := state[k]; ok {
						inputs[k] = v
					}
				}
			} else {
				inputs = state.Copy()
				for _, k := range computedOf(req.Type) {
					delete(inputs, resource.PropertyKey(k))
				}
			}
			outs, ins := resource.FromResourcePropertyMap(state), resource.FromResourcePropertyMap(inputs)
			return plugin.ReadResponse{
				ReadResult: plugin.ReadResult{ID: req.ID, Outputs: &outs, Inputs: &ins},
				Status:     resource.StatusOK,
			}, nil
		},
	}
}

func computedOf(typ tokens.Type) []string {
	if k, ok := kinds[string(typ)]; ok && k.computed != nil {
		return k.computed
	}
	return []string{"arn"}
}

// diff is the provider's answer to Diff, as pulumi-terraform-bridge and pulumi-kubernetes give it: the
// changed keys, a detailed diff by property path, and the keys that force a replacement. A value unknown in
// the preview is a change, and replaces when its key forces one (the provider cannot tell it is the same).
func diff(k kind, olds, news resource.PropertyMap) plugin.DiffResult {
	result := plugin.DiffResult{Changes: plugin.DiffNone, DetailedDiff: map[string]plugin.PropertyDiff{},
		DeleteBeforeReplace: k.dbr}
	keys := map[resource.PropertyKey]bool{}
	for key := range olds {
		keys[key] = true
	}
	for key := range news {
		keys[key] = true
	}
	for key := range keys {
		o, hasOld := olds[key]
		n, hasNew := news[key]
		if hasOld && hasNew && !n.ContainsUnknowns() && equal(o, n) {
			continue
		}
		replace := false
		path := string(key)
		for _, f := range k.forceNew {
			top, rest, nested := strings.Cut(f, ".")
			if top != string(key) {
				continue
			}
			if !nested {
				replace = true
				break
			}
			if ov, nv := at(o, rest), at(n, rest); nv.ContainsUnknowns() || !equal(ov, nv) {
				replace, path = true, f
				break
			}
		}
		kindOf := plugin.DiffUpdate
		switch {
		case !hasOld:
			kindOf = plugin.DiffAdd
		case !hasNew:
			kindOf = plugin.DiffDelete
		}
		if replace {
			kindOf = kindOf.AsReplace()
			result.ReplaceKeys = append(result.ReplaceKeys, key)
		}
		result.ChangedKeys = append(result.ChangedKeys, key)
		result.DetailedDiff[path] = plugin.PropertyDiff{Kind: kindOf, InputDiff: true}
		result.Changes = plugin.DiffSome
	}
	return result
}

// at is the value at a dotted path of an object value (null when absent).
func at(v resource.PropertyValue, path string) resource.PropertyValue {
	for _, k := range strings.Split(path, ".") {
		if v.IsSecret() {
			v = v.SecretValue().Element
		}
		if !v.IsObject() {
			return resource.NewNullProperty()
		}
		v = v.ObjectValue()[resource.PropertyKey(k)]
	}
	return v
}

func equal(a, b resource.PropertyValue) bool {
	return reflect.DeepEqual(a.Mappable(), b.Mappable()) && a.ContainsSecrets() == b.ContainsSecrets()
}

func keyStrings(keys []resource.PropertyKey) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = string(k)
	}
	return out
}
