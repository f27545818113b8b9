// Where the classifier (kargo/verification/classify.mjs) reads what the engine could not tell it, and what
// has no cloud object: an unknown or secret value stops only in a key that decides the class, saying which and
// why; an unknown reference does not; a component's or a provider's delete is no loss; a retained resource is
// left in the cloud. The events are shaped as the engine uploads them (verification-events-support.ts).
import { describe, expect, it } from "vitest";
import {
  LEFT_IN_CLOUD,
  classifyStep,
  leftInCloud,
  stepFromEngineEvent,
  unclearOf,
  type Step,
} from "../kargo/verification/classify.mjs";
import { recordOf, stopLines, stops } from "../kargo/verification/compare.mjs";
import { secretValue, steps, unknownValue as U } from "./verification-events-support";
import { OPEN, create, update } from "./verification-steps-support";

const INGRESS_RULE = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule";
const SG_RULE = "aws:ec2/securityGroupRule:SecurityGroupRule";
const SG = "aws:ec2/securityGroup:SecurityGroup";

describe("an unknown reference is not exposure", () => {
  // A first deploy: the group, and the rules referencing it or another new group, all unknown at preview.
  const references: [string, Step][] = [
    [
      "an ingress rule from another new group",
      create(INGRESS_RULE, {
        securityGroupId: U,
        referencedSecurityGroupId: U,
        fromPort: 443,
        ipProtocol: "tcp",
      }),
    ],
    ["an ingress rule from a prefix list", create(INGRESS_RULE, { securityGroupId: U, prefixListId: U })],
    [
      "a classic rule from another group",
      create(SG_RULE, { type: "ingress", securityGroupId: U, sourceSecurityGroupId: U, fromPort: 5432 }),
    ],
    [
      "a group whose ingress names groups",
      create(SG, { vpcId: U, ingress: [{ securityGroups: [U], fromPort: 80, cidrBlocks: ["10.0.0.0/8"] }] }),
    ],
    [
      "a native ingress from another group",
      create("aws-native:ec2:SecurityGroupIngress", { groupId: U, sourceSecurityGroupId: U }),
    ],
  ];
  for (const [name, step] of references)
    it(`passes ${name}`, () => {
      expect(classifyStep(step)).toEqual([]);
      expect(unclearOf(step)).toEqual({});
    });

  it("stops on a CIDR unknown at preview, saying which", () => {
    const cases: [Step, string][] = [
      [create(INGRESS_RULE, { securityGroupId: U, cidrIpv4: U }), "cidrIpv4 unknown at preview"],
      [
        create(SG_RULE, { type: "ingress", securityGroupId: U, cidrBlocks: ["10.0.0.0/8", U] }),
        "cidrBlocks[1] unknown at preview",
      ],
      [create(SG, { ingress: [{ cidrBlocks: U }] }), "ingress[0].cidrBlocks unknown at preview"],
      [create(SG, { ingress: [U] }), "ingress[0] unknown at preview"],
      [create(SG, { ingress: U }), "ingress unknown at preview"],
      [create(SG_RULE, { type: U, cidrBlocks: [OPEN] }), "type unknown at preview"],
    ];
    for (const [step, why] of cases) {
      expect(classifyStep(step), why).toEqual(["exposure"]);
      expect(unclearOf(step), why).toEqual({ exposure: [why] });
    }
  });

  it("names nothing unclear when a known value decides (an open CIDR beside an unknown one)", () => {
    const step = create(SG, { ingress: [{ cidrBlocks: [OPEN] }, { cidrBlocks: U }] });
    expect(classifyStep(step)).toEqual(["exposure"]);
    expect(unclearOf(step)).toEqual({});
    // Two rules of one class, one on what it read: the class holds whatever the unknown turns out to be.
    const lb = create("aws:lb/loadBalancer:LoadBalancer", { internal: U });
    expect(unclearOf(lb)).toEqual({ exposure: ["internal unknown at preview"] });
    expect(classifyStep(lb)).toEqual(["exposure", "cost"]);
  });
});

it("takes an unset (null) boolean as the provider's default: an EKS endpoint is public unless said otherwise", () => {
  const eks = (vpcConfig: Record<string, unknown>) =>
    classifyStep(create("aws:eks/cluster:Cluster", { vpcConfig }));
  expect(eks({ endpointPublicAccess: null })).toContain("exposure");
  expect(eks({ endpointPublicAccess: false, publicAccessCidrs: null })).not.toContain("exposure");
  expect(eks({ endpointPublicAccess: true, publicAccessCidrs: ["203.0.113.0/24"] })).not.toContain(
    "exposure",
  );
});

describe("a secret in a key that decides the class", () => {
  it("stops, saying secret, where it was read as not open before", () => {
    const cases: [Step, string, string][] = [
      [
        create(SG, { ingress: [{ cidrBlocks: [secretValue()] }] }),
        "exposure",
        "ingress[0].cidrBlocks[0] secret",
      ],
      [create(INGRESS_RULE, { cidrIpv4: secretValue() }), "exposure", "cidrIpv4 secret"],
      [
        create("aws:rds/instance:Instance", { publiclyAccessible: secretValue() }),
        "exposure",
        "publiclyAccessible secret",
      ],
      [
        create("aws:lambda/functionUrl:FunctionUrl", { authorizationType: secretValue() }),
        "exposure",
        "authorizationType secret",
      ],
      [create("aws:eks/cluster:Cluster", { vpcConfig: secretValue() }), "exposure", "vpcConfig secret"],
      [create("kubernetes:core/v1:Service", { spec: secretValue() }), "exposure", "spec secret"],
    ];
    for (const [step, cls, why] of cases) {
      expect(classifyStep(step), why).toContain(cls);
      expect(unclearOf(step)[cls as "exposure"], why).toEqual([why]);
    }
  });

  it("takes a secret document as changed when the step names no changed keys (two secrets read the same)", () => {
    const policy = update("aws:s3/bucket:Bucket", { policy: secretValue() }, { policy: secretValue() });
    expect(classifyStep(policy)).toEqual(["privilege"]);
    const unknown = update("aws:s3/bucket:Bucket", { policy: "{}" }, { policy: U });
    expect(classifyStep(unknown)).toEqual(["privilege"]);
    // A secret elsewhere in the inputs changes nothing that decides.
    const tags = update(
      "aws:s3/bucket:Bucket",
      { policy: "{}", tags: secretValue() },
      { policy: "{}", tags: secretValue() },
    );
    expect(classifyStep(tags)).toEqual([]);
  });

  it("says what could not be told in the stop's line and in the record", () => {
    const preview = steps(
      {
        op: "create",
        type: SG,
        name: "web",
        inputs: { ingress: [{ cidrBlocks: [secretValue()], fromPort: 443 }] },
      },
      {
        op: "create",
        type: INGRESS_RULE,
        name: "from-lb",
        inputs: { securityGroupId: U, referencedSecurityGroupId: U },
      },
      { op: "create", type: INGRESS_RULE, name: "from-vpc", inputs: { securityGroupId: U, cidrIpv4: U } },
    );
    const stopped = stops(preview, ["exposure"]);
    expect(stopLines(stopped)).toEqual([
      `- web (${SG}): create, exposure (ingress[0].cidrBlocks[0] secret)`,
      `- from-vpc (${INGRESS_RULE}): create, exposure (cidrIpv4 unknown at preview)`,
    ]);
    expect(recordOf(stopped.map((s) => s.step)).map((r) => r.unclear)).toEqual([
      { exposure: ["ingress[0].cidrBlocks[0] secret"] },
      { exposure: ["cidrIpv4 unknown at preview"] },
    ]);
  });
});

describe("what has no cloud object, and what stays in the cloud", () => {
  const component = { type: "app:index:Service", name: "api", component: true };
  const provider = { type: "pulumi:providers:aws", name: "eu" };
  const retained = { type: "aws:s3/bucketV2:BucketV2", name: "archive", retainOnDelete: true };

  it("is no loss for a component's delete or replacement, nor a provider's", () => {
    const s = steps(
      { op: "delete", ...component },
      { op: "create-replacement", ...component },
      { op: "replace", ...component },
      { op: "delete-replaced", ...component },
      { op: "delete", ...provider },
      { op: "create-replacement", ...provider },
      { op: "replace", ...provider },
      { op: "delete-replaced", ...provider },
    );
    expect(s.map((x) => [x.op, x.custom])).toContainEqual(["delete", false]);
    for (const step of s) expect(classifyStep(step), `${step.op} ${step.type}`).toEqual([]);
    expect(stops(s, ["loss"])).toEqual([]);
  });

  it("is loss when the step does not say whether it is custom (what cannot be told stops)", () => {
    expect(classifyStep({ op: "delete", type: "app:index:Service" })).toEqual(["loss"]);
    const stateless = stepFromEngineEvent({
      op: "delete",
      type: "app:index:Service",
      urn: "u",
      old: null,
      new: null,
    });
    expect(stateless).not.toHaveProperty("custom");
    expect(classifyStep(stateless)).toEqual(["loss"]);
    expect(classifyStep({ op: "delete", type: "app:index:Service", custom: false })).toEqual([]);
  });

  it("leaves a retained resource's delete in the cloud, in the words the plan diff uses, and replaces it as loss", () => {
    const [gone, ...replacement] = steps(
      { op: "delete", ...retained },
      { op: "create-replacement", ...retained, name: "logs" },
      { op: "replace", ...retained, name: "logs" },
      { op: "delete-replaced", ...retained, name: "logs" },
    );
    expect(gone!.retainOnDelete).toBe(true);
    expect(leftInCloud(gone!)).toBe(true);
    expect(classifyStep(gone!)).toEqual([]);
    expect(replacement.map((s) => [s.op, classifyStep(s), leftInCloud(s)])).toEqual([
      ["create-replacement", ["loss"], false],
      ["replace", ["loss"], false],
      ["delete-replaced", [], true],
    ]);
    expect(stops([gone!], ["loss"])).toEqual([]);
    expect(stopLines(stops([gone!], "all"))).toEqual([
      `- archive (aws:s3/bucketV2:BucketV2): delete, ${LEFT_IN_CLOUD}`,
    ]);
    expect(recordOf([gone!])[0]!.leftInCloud).toBe(LEFT_IN_CLOUD);
    // Neither a component nor a provider is ever "left in the cloud": they were never there.
    expect(
      leftInCloud({ op: "delete", type: "app:index:Service", custom: false, retainOnDelete: true }),
    ).toBe(false);
    expect(leftInCloud({ op: "delete", type: "pulumi:providers:aws", retainOnDelete: true })).toBe(false);
    expect(leftInCloud({ op: "update", type: "aws:s3/bucketV2:BucketV2", retainOnDelete: true })).toBe(false);
  });
});
