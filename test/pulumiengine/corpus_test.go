package pulumiengine

// The realistic corpus: typical programs a team promotes, each a first deploy and a routine change, with the
// type tokens, inputs, unknowns and replacements pulumi-aws and pulumi-kubernetes give them. `want` is the
// classes a reviewer means each step to have (docs/security-and-approvals.md's table of classes); every
// environment's stops follow from it.

// corpusProgram is one program of the corpus: its commits, and whether it is internal only (no identity, no
// reach from outside: nothing in it should stop an environment that does not stop on cost or every change).
type corpusProgram struct {
	name     string
	internal bool
	commits  []commit
}

const (
	vpcID    = "vpc-0a1b2c3d"
	subnetA  = "subnet-0aaa"
	subnetB  = "subnet-0bbb"
	image1   = "123456789012.dkr.ecr.us-west-2.amazonaws.com/web:1.4.0"
	image2   = "123456789012.dkr.ecr.us-west-2.amazonaws.com/web:1.5.0"
	trustECS = `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"ecs-tasks.amazonaws.com"},"Action":"sts:AssumeRole"}]}`
	trustFn  = `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"lambda.amazonaws.com"},"Action":"sts:AssumeRole"}]}`
)

var refresh = pulumiOptions{refresh: true}

func corpus() []corpusProgram {
	return []corpusProgram{serviceBehindLoadBalancer(), databaseInPrivateSubnets(), functionWithAPI(),
		bucketWithPolicy(), kubernetesWorkload()}
}

// An ECS service behind an internet-facing load balancer; the routine change is a new image, which
// replaces the task definition (every container definition input is ForceNew) and updates the service.
func serviceBehindLoadBalancer() corpusProgram {
	containers := func(image string) string {
		return `[{"name":"web","image":"` + image + `","portMappings":[{"containerPort":8080}]}]`
	}
	prog := program{
		{typ: securityGroup, name: "lb-sg", in: map[string]any{"vpcId": vpcID, "description": "load balancer"}},
		{typ: ingressRule, name: "lb-https", in: map[string]any{"securityGroupId": out("lb-sg", "id"),
			"cidrIpv4": "0.0.0.0/0", "fromPort": 443, "toPort": 443, "ipProtocol": "tcp"}},
		{typ: securityGroup, name: "task-sg", in: map[string]any{"vpcId": vpcID, "description": "tasks"}},
		{typ: ingressRule, name: "task-from-lb", in: map[string]any{"securityGroupId": out("task-sg", "id"),
			"referencedSecurityGroupId": out("lb-sg", "id"), "fromPort": 8080, "toPort": 8080,
			"ipProtocol": "tcp"}},
		{typ: "aws:lb/loadBalancer:LoadBalancer", name: "web-lb", in: map[string]any{
			"loadBalancerType": "application", "securityGroups": []any{out("lb-sg", "id")},
			"subnets": []any{subnetA, subnetB}}},
		{typ: "aws:lb/targetGroup:TargetGroup", name: "web-tg", in: map[string]any{"port": 8080,
			"protocol": "HTTP", "targetType": "ip", "vpcId": vpcID}},
		{typ: "aws:lb/listener:Listener", name: "web-https", in: map[string]any{
			"loadBalancerArn": out("web-lb", "arn"), "port": 443, "protocol": "HTTPS",
			"certificateArn": "arn:aws:acm:us-west-2:123456789012:certificate/1",
			"defaultActions": []any{map[string]any{"type": "forward", "targetGroupArn": out("web-tg", "arn")}}}},
		{typ: "aws:ecs/cluster:Cluster", name: "apps", in: map[string]any{"name": "apps"}},
		{typ: role, name: "task-exec-role", in: map[string]any{"assumeRolePolicy": trustECS}},
		{typ: "aws:iam/rolePolicyAttachment:RolePolicyAttachment", name: "task-exec-policy", in: map[string]any{
			"role":      out("task-exec-role", "id"),
			"policyArn": "arn:aws:iam::aws:policy/service-role/AmazonECSTaskExecutionRolePolicy"}},
		{typ: "aws:ecs/taskDefinition:TaskDefinition", name: "web-task", in: map[string]any{"family": "web",
			"cpu": "256", "memory": "512", "networkMode": "awsvpc", "requiresCompatibilities": []any{"FARGATE"},
			"executionRoleArn": out("task-exec-role", "arn"), "containerDefinitions": containers(image1)}},
		{typ: "aws:ecs/service:Service", name: "web-svc", in: map[string]any{"cluster": out("apps", "arn"),
			"taskDefinition": out("web-task", "arn"), "desiredCount": 2, "launchType": "FARGATE",
			"networkConfiguration": map[string]any{"subnets": []any{subnetA, subnetB},
				"securityGroups": []any{out("task-sg", "id")}}}},
	}
	next := prog.with("web-task", func(r *res) { r.in["containerDefinitions"] = containers(image2) })
	return corpusProgram{name: "a service behind a load balancer", commits: []commit{
		{name: "first deploy", prog: prog, opts: refresh, want: map[string][]string{
			"create lb-https":         exposure,
			"create web-lb":           {"exposure", "cost"},
			"create web-svc":          {"cost"},
			"create task-exec-role":   privilege,
			"create task-exec-policy": privilege,
		}},
		// The old task definition revision is deregistered: a replacement, loss by its op.
		{name: "a new image", prog: next, opts: refresh, want: map[string][]string{
			"create-replacement web-task": loss, "replace web-task": loss, "delete-replaced web-task": loss,
		}},
	}}
}

// A PostgreSQL database in private subnets, reachable only from the application's security group; the
// routine change is a larger instance class.
func databaseInPrivateSubnets() corpusProgram {
	prog := program{
		{typ: "aws:ec2/subnet:Subnet", name: "db-a", in: map[string]any{"vpcId": vpcID, "cidrBlock": "10.0.10.0/24",
			"availabilityZone": "us-west-2a", "mapPublicIpOnLaunch": false}},
		{typ: "aws:ec2/subnet:Subnet", name: "db-b", in: map[string]any{"vpcId": vpcID, "cidrBlock": "10.0.11.0/24",
			"availabilityZone": "us-west-2b", "mapPublicIpOnLaunch": false}},
		{typ: "aws:rds/subnetGroup:SubnetGroup", name: "db-subnets", in: map[string]any{
			"subnetIds": []any{out("db-a", "id"), out("db-b", "id")}}},
		{typ: securityGroup, name: "app-sg", in: map[string]any{"vpcId": vpcID, "description": "application"}},
		{typ: securityGroup, name: "db-sg", in: map[string]any{"vpcId": vpcID, "description": "database"}},
		{typ: ingressRule, name: "db-from-app", in: map[string]any{"securityGroupId": out("db-sg", "id"),
			"referencedSecurityGroupId": out("app-sg", "id"), "fromPort": 5432, "toPort": 5432,
			"ipProtocol": "tcp"}},
		{typ: rdsInstance, name: "orders", in: map[string]any{"engine": "postgres", "engineVersion": "16.4",
			"instanceClass": "db.t4g.micro", "allocatedStorage": 20, "storageEncrypted": true,
			"dbSubnetGroupName": out("db-subnets", "id"), "vpcSecurityGroupIds": []any{out("db-sg", "id")},
			"publiclyAccessible": false, "username": "orders", "password": secret("correct-horse-battery")}},
	}
	next := prog.with("orders", func(r *res) { r.in["instanceClass"] = "db.t4g.small" })
	return corpusProgram{name: "a database in private subnets", internal: true, commits: []commit{
		{name: "first deploy", prog: prog, opts: refresh, want: map[string][]string{"create orders": {"cost"}}},
		{name: "a larger instance class", prog: next, opts: refresh,
			want: map[string][]string{"update orders": {"cost"}}},
	}}
}

// A Lambda function behind an HTTP API; the routine change is new code.
func functionWithAPI() corpusProgram {
	const fn = "aws:lambda/function:Function"
	prog := program{
		{typ: role, name: "fn-role", in: map[string]any{"assumeRolePolicy": trustFn}},
		{typ: "aws:iam/rolePolicyAttachment:RolePolicyAttachment", name: "fn-logs", in: map[string]any{
			"role":      out("fn-role", "id"),
			"policyArn": "arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole"}},
		{typ: fn, name: "handler", in: map[string]any{"role": out("fn-role", "arn"), "runtime": "nodejs22.x",
			"handler": "index.handler", "code": "archive-sha256-1", "memorySize": 256}},
		{typ: "aws:apigatewayv2/api:Api", name: "http", in: map[string]any{"protocolType": "HTTP"}},
		{typ: "aws:apigatewayv2/integration:Integration", name: "handler-integration", in: map[string]any{
			"apiId": out("http", "id"), "integrationType": "AWS_PROXY", "integrationUri": out("handler", "invokeArn"),
			"payloadFormatVersion": "2.0"}},
		{typ: "aws:apigatewayv2/route:Route", name: "get-orders", in: map[string]any{"apiId": out("http", "id"),
			"routeKey": "GET /orders", "target": out("handler-integration", "id")}},
		{typ: "aws:apigatewayv2/stage:Stage", name: "default", in: map[string]any{"apiId": out("http", "id"),
			"name": "$default", "autoDeploy": true}},
		{typ: "aws:lambda/permission:Permission", name: "api-invoke", in: map[string]any{
			"action": "lambda:InvokeFunction", "function": out("handler", "arn"),
			"principal": "apigateway.amazonaws.com", "sourceArn": out("http", "executionArn")}},
	}
	next := prog.with("handler", func(r *res) { r.in["code"] = "archive-sha256-2" })
	return corpusProgram{name: "a function with an API", commits: []commit{
		{name: "first deploy", prog: prog, opts: refresh, want: map[string][]string{
			"create fn-role": privilege, "create fn-logs": privilege, "create handler": privilege,
			"create http": exposure, "create api-invoke": privilege,
		}},
		{name: "new code", prog: next, opts: refresh, want: map[string][]string{}},
	}}
}

// A bucket with its public access blocked, a policy letting one role read it, versioning and encryption;
// the routine change is its tags.
func bucketWithPolicy() corpusProgram {
	policy := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::123456789012:role/reports"},"Action":"s3:GetObject","Resource":"arn:aws:s3:::reports-data/*"}]}`
	prog := program{
		{typ: bucketV2, name: "reports", in: map[string]any{"bucket": "reports-data",
			"tags": map[string]any{"team": "finance"}}},
		{typ: "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock", name: "reports-block", in: map[string]any{
			"bucket": out("reports", "id"), "blockPublicAcls": true, "blockPublicPolicy": true,
			"ignorePublicAcls": true, "restrictPublicBuckets": true}},
		{typ: "aws:s3/bucketVersioningV2:BucketVersioningV2", name: "reports-versioning", in: map[string]any{
			"bucket": out("reports", "id"), "versioningConfiguration": map[string]any{"status": "Enabled"}}},
		{typ: bucketPolicy, name: "reports-policy", in: map[string]any{"bucket": out("reports", "id"), "policy": policy}},
	}
	next := prog.with("reports", func(r *res) { r.in["tags"] = map[string]any{"team": "finance", "cost": "42"} })
	return corpusProgram{name: "a bucket with a policy", commits: []commit{
		{name: "first deploy", prog: prog, opts: refresh, want: map[string][]string{"create reports-policy": privilege}},
		{name: "new tags", prog: next, opts: refresh, want: map[string][]string{}},
	}}
}

// A Kubernetes workload: a namespace, a ServiceAccount with a Role to read its ConfigMaps, a Deployment and a
// ClusterIP Service; the routine change is a new image.
func kubernetesWorkload() corpusProgram {
	const ns = "orders"
	meta := func(name string) map[string]any { return map[string]any{"name": name, "namespace": ns} }
	deployment := func(image string) map[string]any {
		return map[string]any{"replicas": 2, "selector": map[string]any{"matchLabels": map[string]any{"app": "orders"}},
			"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "orders"}},
				"spec": map[string]any{"serviceAccountName": "orders", "containers": []any{map[string]any{
					"name": "orders", "image": image, "ports": []any{map[string]any{"containerPort": 8080}}}}}}}
	}
	prog := program{
		{typ: "kubernetes:core/v1:Namespace", name: "orders-ns", in: map[string]any{"metadata": map[string]any{"name": ns}}},
		{typ: "kubernetes:core/v1:ServiceAccount", name: "orders-sa", in: map[string]any{"metadata": meta("orders")}},
		{typ: "kubernetes:rbac.authorization.k8s.io/v1:Role", name: "orders-config-reader", in: map[string]any{
			"metadata": meta("config-reader"), "rules": []any{map[string]any{"apiGroups": []any{""},
				"resources": []any{"configmaps"}, "verbs": []any{"get", "list", "watch"}}}}},
		{typ: "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding", name: "orders-config-reader-binding",
			in: map[string]any{"metadata": meta("config-reader"), "roleRef": map[string]any{
				"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "config-reader"},
				"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": "orders", "namespace": ns}}}},
		{typ: "kubernetes:core/v1:ConfigMap", name: "orders-config", in: map[string]any{"metadata": meta("orders"),
			"data": map[string]any{"LOG_LEVEL": "info"}}},
		{typ: "kubernetes:apps/v1:Deployment", name: "orders-deployment", in: map[string]any{
			"metadata": meta("orders"), "spec": deployment(image1)}},
		{typ: "kubernetes:core/v1:Service", name: "orders-service", in: map[string]any{"metadata": meta("orders"),
			"spec": map[string]any{"type": "ClusterIP", "selector": map[string]any{"app": "orders"},
				"ports": []any{map[string]any{"port": 80, "targetPort": 8080}}}}},
	}
	next := prog.with("orders-deployment", func(r *res) { r.in["spec"] = deployment(image2) })
	return corpusProgram{name: "a Kubernetes workload", commits: []commit{
		{name: "first deploy", prog: prog, opts: refresh, want: map[string][]string{
			"create orders-config-reader": privilege, "create orders-config-reader-binding": privilege,
		}},
		{name: "a new image", prog: next, opts: refresh, want: map[string][]string{}},
	}}
}
