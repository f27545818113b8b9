// The policy pack (policy/) against the planned resources: the platform as planned breaks no rule, and each
// rule flags a planned resource changed the way a pull request could change it. The pack runs as the engine
// runs it (its own process, asked over gRPC: test/policy-server.ts), and the offline driver the plan diff
// uses (policy/offline.ts) must find exactly the same.
import { policyResourceName } from "../lib/pipeline/access";
import * as fs from "node:fs";
import * as path from "node:path";
import YAML from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pipeline } from "../kargo/pipeline";
import { checkResources, type PlannedResource } from "../policy/offline";
import { PUBLIC_LISTENER_PORTS, policies } from "../policy/policies";
import { PLUGIN_CACHE_STORAGE_CLASS } from "../lib/pipeline/plugin-cache";
import type { ProjectPlan } from "../lib/cli/plan/diff";
import { programPlans } from "../lib/cli/plan/diff-program";
import { planChain, repoRoot } from "../lib/cli/plan/projects";
import { validatePipeline } from "../lib/pipeline/validate";
import { MANDATORY, startPolicyServer, type PolicyServer } from "./policy-server";

const validated = validatePipeline(pipeline);
let planned: PlannedResource[];
let server: PolicyServer;
afterAll(() => server?.close());
beforeAll(async () => {
  server = await startPolicyServer();
  const programs = programPlans(repoRoot, validated.programs).plans as ProjectPlan[];
  planned = [...(await planChain()), ...programs].flatMap((p) => p.resources);
});

const find = (type: string, name?: string) => {
  const r = planned.find((x) => x.type === type && (name === undefined || x.name === name));
  expect(r, `the plan has a ${type}${name ? ` named ${name}` : ""}`).toBeDefined();
  return structuredClone(r!);
};
const policy = (name: string) => policies.filter((p) => p.name === name);
/** A resource of `type` shaped as the plan shapes a `like` resource, with its own name and inputs. */
const resourceLike = (like: string, type: string, name: string, inputs: Record<string, unknown>) => {
  const r = find(like);
  return { ...r, type, name, urn: r.urn.replace(`::${like}::${r.name}`, `::${type}::${name}`), inputs };
};
/** What the running pack reports for `resources` under policy `name`, checked against the offline driver. */
async function violations(name: string, ...resources: PlannedResource[]): Promise<string[]> {
  const live = [];
  for (const r of resources) live.push(...(await server.analyze(r)).filter((d) => d.policy === name));
  expect(live.every((d) => d.enforcementLevel === MANDATORY)).toBe(true);
  // The engine's message is the policy's description, a line break, then what the policy reported.
  const messages = live.map((d) => d.message.split("\n").slice(1).join("\n"));
  expect((await checkResources(resources, policy(name))).map((v) => v.message)).toEqual(messages);
  return messages;
}

describe("the policy pack", () => {
  it("is every policy, mandatory, in a pack Pulumi can load from policy/", () => {
    expect(
      YAML.parse(fs.readFileSync(path.join(repoRoot, "policy/PulumiPolicy.yaml"), "utf8")).runtime.name,
    ).toBe("nodejs");
    expect(JSON.parse(fs.readFileSync(path.join(repoRoot, "policy/package.json"), "utf8")).version).toMatch(
      /^\d+\.\d+\.\d+$/,
    );
    expect(fs.readFileSync(path.join(repoRoot, "policy/index.ts"), "utf8")).toMatch(
      /new PolicyPack\("platform", \{ enforcementLevel: "mandatory", policies \}\)/,
    );
    expect(policies.every((p) => p.enforcementLevel === undefined)).toBe(true);
  });

  it("serves every policy, mandatory, as the engine sees it", async () => {
    expect(await server.policies()).toEqual(
      policies.map((p) => ({ name: p.name, enforcementLevel: MANDATORY })),
    );
  });

  it("finds nothing in the planned platform and the promoted programs", async () => {
    expect(await checkResources(planned)).toEqual([]);
    for (const r of planned) expect(await server.analyze(r), r.urn).toEqual([]);
  });

  it("security-group-world-ingress: the Kargo API listener may be public, the webhook listener may not", async () => {
    const api = find("aws:ec2/securityGroup:SecurityGroup", "kargo-lb");
    expect((api.inputs.ingress as { fromPort: number }[])[0]!.fromPort).toBe(PUBLIC_LISTENER_PORTS[0]);
    expect(await violations("security-group-world-ingress", api)).toEqual([]);
    const webhooks = find("aws:ec2/securityGroup:SecurityGroup", "kargo-webhooks");
    (webhooks.inputs.ingress as { cidrBlocks: string[] }[])[0]!.cidrBlocks = ["0.0.0.0/0"];
    expect(await violations("security-group-world-ingress", webhooks)).toEqual([
      expect.stringMatching(/admits 0\.0\.0\.0\/0 on tcp 8443/),
    ]);
    const nodePort = find("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule");
    expect(await violations("security-group-world-ingress", nodePort)).toEqual([]);
    delete nodePort.inputs.referencedSecurityGroupId;
    nodePort.inputs.cidrIpv6 = "::/0";
    expect(await violations("security-group-world-ingress", nodePort)).toHaveLength(1);
  });

  it("iam-no-write-on-star: writes stay on each program's resources; reads on * pass, writes on * do not", async () => {
    // Each program's policy in each environment (kargo/index.ts), as kargo plans it for its example stacks.
    const roles = validated.programs
      .filter((x) => x.aws)
      .flatMap((x) => Object.keys(validated.environments).map((env) => policyResourceName(x.name, env)))
      .map((name) => planned.find((r) => r.type === "aws:iam/rolePolicy:RolePolicy" && r.name === name))
      .filter((r) => r !== undefined);
    expect(roles).toHaveLength(
      validated.programs.filter((x) => x.aws).length * Object.keys(validated.environments).length,
    );
    // Beside them a made-up program's policy that writes, so the rule is held whatever programs a fork keeps.
    roles.push(
      resourceLike(
        "aws:iam/rolePolicyAttachment:RolePolicyAttachment",
        "aws:iam/rolePolicy:RolePolicy",
        "zz-made-up",
        {
          role: "zz-made-up-role",
          policy: JSON.stringify({
            Version: "2012-10-17",
            Statement: [
              {
                Sid: "ZzObjects",
                Effect: "Allow",
                Action: ["s3:GetObject", "s3:PutObject"],
                Resource: ["arn:aws:s3:::zz-made-up/*"],
              },
            ],
          }),
        },
      ),
    );
    const writesChecked: string[] = [];
    for (const found of roles) {
      const role = structuredClone(found);
      expect(await violations("iam-no-write-on-star", role), role.name).toEqual([]);
      const doc = JSON.parse(role.inputs.policy as string) as {
        Statement: { Sid?: string; Action: string[]; Resource: unknown }[];
      };
      const isRead = (a: string) => /:(Get|List)/.test(a);
      const readOnly = structuredClone(role);
      readOnly.inputs.policy = JSON.stringify({
        ...doc,
        Statement: doc.Statement.map((st) => ({ ...st, Action: st.Action.filter(isRead), Resource: "*" })),
      });
      expect(await violations("iam-no-write-on-star", readOnly), role.name).toEqual([]);
      for (const st of doc.Statement) st.Resource = "*";
      role.inputs.policy = JSON.stringify(doc);
      // One violation per statement that writes, naming every write it allows on *.
      const writes = doc.Statement.map((st) => st.Action.filter((a) => !isRead(a))).filter((w) => w.length);
      expect(await violations("iam-no-write-on-star", role), role.name).toEqual(
        writes.map((w) => expect.stringContaining(`${w.join(", ")} on *`)),
      );
      writesChecked.push(...writes.flat());
    }
    expect(writesChecked.length, "some program's policy writes").toBeGreaterThan(0);
    const attachment = find("aws:iam/rolePolicyAttachment:RolePolicyAttachment");
    expect(await violations("iam-no-write-on-star", attachment)).toEqual([]);
    attachment.inputs.policyArn = "arn:aws:iam::aws:policy/AdministratorAccess";
    expect(await violations("iam-no-write-on-star", attachment)).toHaveLength(1);
  });

  it("data-protected: the user pool and the programs' buckets are protected; unprotected they are not allowed", async () => {
    // The platform's user pool as planned, and a bucket: the programs' own where the plan has one (a YAML
    // program's resources are read as declared), or one made up the way a program would declare it.
    const pool = find("aws:cognito/userPool:UserPool");
    const bucket =
      structuredClone(planned.find((r) => r.type === "aws:s3/bucket:Bucket")) ??
      resourceLike("aws:cognito/userPool:UserPool", "aws:s3/bucket:Bucket", "zz-made-up", {});
    if (bucket.options) bucket.options.protect = true;
    else bucket.options = { protect: true };
    for (const r of [pool, bucket]) {
      expect(await violations("data-protected", r), r.type).toEqual([]);
      r.options.protect = false;
      expect(await violations("data-protected", r), r.type).toHaveLength(1);
    }
    // The plugin cache's seed claim holds what its Job installs again, and is replaced on every reseed; a
    // claim of any other class holds data.
    const claimOf = (storageClassName: string) => {
      const claim = resourceLike(
        "aws:cognito/userPool:UserPool",
        "kubernetes:core/v1:PersistentVolumeClaim",
        "zz-claim",
        { spec: { storageClassName, resources: { requests: { storage: "2Gi" } } } },
      );
      return { ...claim, options: { ...claim.options, protect: false } };
    };
    expect(await violations("data-protected", claimOf(PLUGIN_CACHE_STORAGE_CLASS))).toEqual([]);
    expect(await violations("data-protected", claimOf("gp3"))).toHaveLength(1);
  });

  it("versions-pinned: every chart has an exact version and no image is `latest`", async () => {
    const releases = planned.filter((r) => r.type === "kubernetes:helm.sh/v3:Release");
    expect(releases.length).toBeGreaterThan(0);
    expect(await violations("versions-pinned", ...releases)).toEqual([]);
    const range = structuredClone(releases[0]!);
    range.inputs.version = "^2";
    const latest = find("kubernetes:helm.sh/v3:Release", "pulumi-kubernetes-operator");
    (latest.inputs.values as { image: { tag: string } }).image.tag = "latest";
    expect(await violations("versions-pinned", range, latest)).toEqual([
      expect.stringMatching(/has version "\^2"; pin an exact version/),
      expect.stringMatching(/values\.image\.tag "latest" is not a release/),
    ]);
  });

  it("workload-requests: every component a release sizes requests CPU and memory", async () => {
    const kargo = find("kubernetes:helm.sh/v3:Release", "kargo");
    expect(await violations("workload-requests", kargo)).toEqual([]);
    (kargo.inputs.values as { api: { resources: unknown } }).api.resources = { limits: { memory: "256Mi" } };
    expect(await violations("workload-requests", kargo)).toEqual([
      "values.api.resources requests no cpu or memory",
    ]);
  });

  it("no-plaintext-secret: a token may sit in a Secret's data, never in a chart's values", async () => {
    const token = `ghp_${"a1B2".repeat(9)}`;
    const secret = find("kubernetes:core/v1:Secret");
    secret.inputs.stringData = { password: token };
    expect(await violations("no-plaintext-secret", secret)).toEqual([]);
    const kargo = find("kubernetes:helm.sh/v3:Release", "kargo");
    (kargo.inputs.values as Record<string, unknown>).extraEnv = [{ name: "GITHUB_TOKEN", value: token }];
    expect(await violations("no-plaintext-secret", kargo)).toEqual([
      expect.stringMatching(/^values\.extraEnv\[0\]\.value holds a GitHub token in plain text/),
    ]);
  });
});
