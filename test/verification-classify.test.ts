// The risk classifier (kargo/verification/classify.mjs): one step in, its classes out. The verification Job
// and the plan diff both call it, so what is pinned here is what stops Freight and what the plan's headings say.
import { describe, expect, it } from "vitest";
import {
  CHANGE_OPS,
  LOSS_OPS,
  RISK_CLASSES,
  RULES,
  classifyStep,
  matchingRules,
  ruleMatches,
  stepFromEngineEvent,
  type Step,
} from "../kargo/verification/classify.mjs";

import { OPEN, create, update } from "./verification-steps-support";

describe("the classes", () => {
  it("are loss, privilege, exposure and cost, in that order, and every rule names one and says why", () => {
    expect(RISK_CLASSES).toEqual(["loss", "privilege", "exposure", "cost"]);
    for (const r of RULES) {
      expect(RISK_CLASSES).toContain(r.class);
      expect(r.why.length).toBeGreaterThan(0);
      expect(r.types.length).toBeGreaterThan(0);
      // Only the providers the module says it covers, or any type for loss by op.
      for (const t of r.types) expect(t).toMatch(/^(\*|aws:|aws-native:|kubernetes:)/);
    }
    for (const c of RISK_CLASSES) expect(RULES.some((r) => r.class === c)).toBe(true);
  });

  it("returns the classes in RISK_CLASSES order, each once, and [] for a step without risk", () => {
    // A replaced IAM role with a policy: loss by its op and privilege by its type.
    const step = { op: "replace", type: "aws:iam/role:Role", newInputs: { assumeRolePolicy: "{}" } };
    expect(classifyStep(step)).toEqual(["loss", "privilege"]);
    expect(classifyStep(create("aws:s3/bucketV2:BucketV2", { bucket: "b" }))).toEqual([]);
    expect(classifyStep(create("random:index/randomPet:RandomPet", {}))).toEqual([]);
  });

  it("refuses what is not a step: no op, no type, not an object", () => {
    for (const s of [
      null,
      undefined,
      "delete",
      { op: "delete" },
      { type: "aws:iam/role:Role" },
      { op: 1, type: "x" },
    ])
      expect(classifyStep(s as unknown as Step)).toEqual([]);
  });
});

describe("loss", () => {
  it("is every delete and replacement op, of any type, and no other op", () => {
    expect(LOSS_OPS).toEqual(["delete", "replace", "create-replacement", "delete-replaced"]);
    for (const op of LOSS_OPS)
      expect(classifyStep({ op, type: "random:index/randomPet:RandomPet" })).toEqual(["loss"]);
    const others = [
      "same",
      "create",
      "update",
      "read",
      "read-replacement",
      "refresh",
      "discard",
      "discard-replaced",
      "remove-pending-replace",
      "import",
      "import-replacement",
    ];
    for (const op of others)
      expect(classifyStep({ op, type: "random:index/randomPet:RandomPet" }), op).toEqual([]);
  });
});

describe("privilege", () => {
  const cases: [string, Step][] = [
    ["a new IAM role", create("aws:iam/role:Role", { assumeRolePolicy: "{}" })],
    [
      "a role's trust policy changed",
      update("aws:iam/role:Role", { assumeRolePolicy: "a" }, { assumeRolePolicy: "b" }),
    ],
    ["an inline role policy", create("aws:iam/rolePolicy:RolePolicy", { policy: "{}" })],
    [
      "a policy attachment",
      create("aws:iam/rolePolicyAttachment:RolePolicyAttachment", { policyArn: "arn" }),
    ],
    ["an IAM user", create("aws:iam/user:User", {})],
    ["an instance profile", create("aws:iam/instanceProfile:InstanceProfile", {})],
    ["a native IAM role", create("aws-native:iam:Role", {})],
    ["a KMS key policy", create("aws:kms/keyPolicy:KeyPolicy", { policy: "{}" })],
    ["a KMS grant", create("aws:kms/grant:Grant", {})],
    ["a KMS key with a policy", create("aws:kms/key:Key", { policy: "{}" })],
    ["a KMS key's policy changed", update("aws:kms/key:Key", undefined, undefined, ["policy"])],
    ["a native KMS key", create("aws-native:kms:Key", { keyPolicy: {} })],
    ["a bucket policy", create("aws:s3/bucketPolicy:BucketPolicy", { policy: "{}" })],
    ["a bucket's own policy", update("aws:s3/bucket:Bucket", { policy: "a" }, { policy: "b" })],
    ["a queue policy", create("aws:sqs/queuePolicy:QueuePolicy", {})],
    ["a queue's own policy", create("aws:sqs/queue:Queue", { policy: "{}" })],
    ["a topic policy", create("aws:sns/topicPolicy:TopicPolicy", {})],
    ["a Lambda permission", create("aws:lambda/permission:Permission", { principal: "s3.amazonaws.com" })],
    ["an ECR repository policy", create("aws:ecr/repositoryPolicy:RepositoryPolicy", {})],
    ["a native ECR repository's policy", create("aws-native:ecr:Repository", { repositoryPolicyText: {} })],
    ["a secret's resource policy", create("aws:secretsmanager/secretPolicy:SecretPolicy", {})],
    ["a native secret resource policy", create("aws-native:secretsmanager:ResourcePolicy", {})],
    [
      "an OpenSearch access policy",
      update("aws:opensearch/domain:Domain", undefined, undefined, ["accessPolicies"]),
    ],
    ["an EKS access entry", create("aws:eks/accessEntry:AccessEntry", {})],
    ["a function's role", update("aws:lambda/function:Function", { role: "a" }, { role: "b" })],
    ["a ClusterRole", create("kubernetes:rbac.authorization.k8s.io/v1:ClusterRole", { rules: [] })],
    [
      "a RoleBinding's subjects",
      update("kubernetes:rbac.authorization.k8s.io/v1:RoleBinding", undefined, undefined, ["subjects"]),
    ],
  ];
  for (const [name, step] of cases)
    it(`is ${name}`, () => {
      expect(classifyStep(step)).toContain("privilege");
    });

  const not: [string, Step][] = [
    ["a role's tags changed", update("aws:iam/role:Role", { tags: { a: "1" } }, { tags: { a: "2" } })],
    [
      "a role's description and tagsAll changed",
      update("aws:iam/role:Role", undefined, undefined, ["description", "tagsAll"]),
    ],
    ["an update that changed nothing", update("aws:iam/role:Role", { name: "r" }, { name: "r" }, [])],
    ["a bucket without a policy", create("aws:s3/bucket:Bucket", { bucket: "b" })],
    ["a bucket's versioning changed", update("aws:s3/bucket:Bucket", undefined, undefined, ["versioning"])],
    ["a KMS key without a policy", create("aws:kms/key:Key", { description: "k" })],
    ["a function's code changed", update("aws:lambda/function:Function", undefined, undefined, ["code"])],
    [
      "a ClusterRole's labels",
      update("kubernetes:rbac.authorization.k8s.io/v1:ClusterRole", undefined, undefined, ["metadata"]),
    ],
    ["an IAM policy read", { op: "read", type: "aws:iam/policy:Policy" }],
    ["an IAM policy imported", { op: "import", type: "aws:iam/policy:Policy", newInputs: { policy: "{}" } }],
    ["an IAM role unchanged", { op: "same", type: "aws:iam/role:Role" }],
  ];
  for (const [name, step] of not)
    it(`is not ${name}`, () => {
      expect(classifyStep(step)).not.toContain("privilege");
    });

  it("takes a key set to null as not set, and a KMS grant's tags as no change of access", () => {
    expect(classifyStep(create("aws:kms/key:Key", { policy: null }))).not.toContain("privilege");
    expect(classifyStep(update("aws:kms/grant:Grant", undefined, undefined, ["tags"]))).not.toContain(
      "privilege",
    );
    expect(classifyStep(update("aws:kms/grant:Grant", undefined, undefined, ["operations"]))).toContain(
      "privilege",
    );
  });

  it("holds an update whose changed keys cannot be told (no diffs, no inputs) to be privilege", () => {
    expect(classifyStep(update("aws:iam/role:Role", undefined, undefined))).toEqual(["privilege"]);
    expect(classifyStep(update("aws:s3/bucket:Bucket", undefined, { policy: "{}" }))).toEqual(["privilege"]);
  });

  it("compares old and new inputs when the step names no changed keys, a removed key included", () => {
    expect(classifyStep(update("aws:s3/bucket:Bucket", { policy: "p" }, {}))).toEqual(["privilege"]);
    expect(
      classifyStep(update("aws:s3/bucket:Bucket", { policy: "p", a: 1 }, { policy: "p", a: 2 })),
    ).toEqual([]);
    expect(classifyStep(update("aws:s3/bucket:Bucket", { a: 1 }, { a: 1, policy: "p" }))).toEqual([
      "privilege",
    ]);
  });

  it("reads a nested diff path by its top-level key", () => {
    expect(
      classifyStep(update("aws:s3/bucket:Bucket", undefined, undefined, ["policy.Statement[0]"])),
    ).toEqual(["privilege"]);
    expect(classifyStep(update("aws:s3/bucket:Bucket", undefined, undefined, ["policyX"]))).toEqual([]);
    expect(classifyStep(update("aws:s3/bucket:Bucket", undefined, undefined, ["tags[0]"]))).toEqual([]);
  });
});

describe("the rules", () => {
  it("apply to the ops that make a new state real unless a rule names its own", () => {
    expect(CHANGE_OPS).toEqual(["create", "update", "replace", "create-replacement"]);
    const policy = RULES.find((r) => r.types.includes("aws:s3/bucketPolicy:BucketPolicy"))!;
    for (const op of CHANGE_OPS)
      expect(ruleMatches(policy, { op, type: "aws:s3/bucketPolicy:BucketPolicy" }), op).toBe(true);
    for (const op of ["same", "read", "delete", "import", "refresh"])
      expect(ruleMatches(policy, { op, type: "aws:s3/bucketPolicy:BucketPolicy" }), op).toBe(false);
  });

  it("match a type by its whole token, or by its prefix when the pattern ends in *", () => {
    const iam = RULES.find((r) => r.types.includes("aws:iam/*"))!;
    expect(ruleMatches(iam, create("aws:iam/anything:Anything"))).toBe(true);
    expect(ruleMatches(iam, create("aws:iamx/role:Role"))).toBe(false);
    const policy = RULES.find((r) => r.types.includes("aws:s3/bucketPolicy:BucketPolicy"))!;
    expect(ruleMatches(policy, create("aws:s3/bucketPolicy:BucketPolicyX"))).toBe(false);
    expect(ruleMatches(policy, create("aws:s3/bucketPolicy:BucketPolic"))).toBe(false);
  });

  it("say why a step matched", () => {
    const why = matchingRules(
      create("aws:ec2/securityGroup:SecurityGroup", { ingress: [{ cidrBlocks: [OPEN] }] }),
    ).map((r) => r.why);
    expect(why).toEqual(["ingress from anywhere (0.0.0.0/0 or ::/0)"]);
  });
});

describe("stepFromEngineEvent", () => {
  // An engine event's resourcePreEvent.metadata as Pulumi Cloud stores it (pulumi-cloud-sdk apitype
  // AppStepEventMetadata and AppStepEventStateMetadata; pulumi/pulumi v3.274.1 apitype/events.go).
  const metadata = {
    op: "update",
    urn: "urn:pulumi:dev::app::aws:s3/bucketV2:BucketV2::data",
    type: "aws:s3/bucketV2:BucketV2",
    old: {
      type: "aws:s3/bucketV2:BucketV2",
      urn: "u",
      custom: true,
      id: "b",
      parent: "",
      provider: "p",
      inputs: { policy: "a" },
      outputs: {},
    },
    new: {
      type: "aws:s3/bucketV2:BucketV2",
      urn: "u",
      custom: true,
      id: "b",
      parent: "",
      provider: "p",
      inputs: { policy: "b" },
      outputs: {},
    },
    diffs: ["policy"],
    detailedDiff: { "tags.team": { kind: "update", inputDiff: true } },
    provider: "p",
  };

  it("takes the op, type, URN, both states' inputs and the changed top-level keys", () => {
    expect(stepFromEngineEvent(metadata)).toEqual({
      op: "update",
      type: "aws:s3/bucketV2:BucketV2",
      urn: metadata.urn,
      oldInputs: { policy: "a" },
      newInputs: { policy: "b" },
      diffs: ["policy", "tags"],
      custom: true,
    });
    expect(classifyStep(stepFromEngineEvent(metadata))).toEqual(["privilege"]);
  });

  it("reads the keys from detailedDiff alone, and leaves them unknown when neither says (then compares inputs)", () => {
    const { diffs: _d, ...noDiffs } = metadata;
    expect(stepFromEngineEvent(noDiffs).diffs).toEqual(["tags"]);
    const neither = { ...noDiffs, detailedDiff: {} };
    expect(stepFromEngineEvent(neither).diffs).toBeUndefined();
    expect(stepFromEngineEvent({ ...noDiffs, detailedDiff: null }).diffs).toBeUndefined();
    expect(classifyStep(stepFromEngineEvent(neither))).toEqual(["privilege"]);
  });

  it("leaves out a state that is null (a create has no old, a delete no new)", () => {
    const step = stepFromEngineEvent({
      ...metadata,
      op: "create",
      old: null,
      diffs: undefined,
      detailedDiff: null,
    });
    expect(step).toEqual({
      op: "create",
      type: metadata.type,
      urn: metadata.urn,
      newInputs: { policy: "b" },
      custom: true,
    });
    const gone = stepFromEngineEvent({
      ...metadata,
      op: "delete",
      new: null,
      old: { ...metadata.old, inputs: null },
    });
    expect(gone).not.toHaveProperty("newInputs");
    expect(gone).not.toHaveProperty("oldInputs");
  });

  it("refuses metadata without an op, a type or a URN", () => {
    expect(() => stepFromEngineEvent(null)).toThrow(/not an object/);
    expect(() => stepFromEngineEvent([])).toThrow(/not an object/);
    for (const k of ["op", "type", "urn"]) {
      const { [k as "op"]: _gone, ...rest } = metadata;
      expect(() => stepFromEngineEvent(rest)).toThrow(/no op, type or urn/);
    }
  });
});
