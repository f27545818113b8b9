// Stack configs beyond single bad keys: secrets never repeated, stack files the CLI cannot read, valid
// configs never refused, and cluster-setup's identities and defaults agreeing with the pipeline.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { clusterSetupConfigSchema } from "../cluster-setup/config";
import { pipeline as definition } from "../kargo/pipeline";
import { checkAgainstClusterSetup, type ClusterSetup } from "../kargo/upstream";
import { PLUGIN_CACHE_STORAGE_CLASS } from "../lib/pipeline/plugin-cache";
import { programStages } from "../lib/pipeline/graph";
import { accountOf, accountRoleName, roleArn } from "../lib/pipeline/accounts";
import { validatePipeline } from "../lib/pipeline/validate";
import { riskPolicy } from "../lib/pipeline/schema";
import { planProgram, ProgramError } from "../lib/cli/plan/harness";
import {
  planChain,
  readStackConfig,
  repoRoot,
  StackFileError,
  type ProjectName,
} from "../lib/cli/plan/projects";
import { one, planError, planInProcess, planProject } from "./helpers";

describe("a secret stays secret", () => {
  it("never repeats a rejected secret value in the message", async () => {
    const error = await planError("kargo", { "kargo:gitToken": "ghp_leak me" });
    expect(error.message).toMatch(/kargo:gitToken:/);
    expect(error.message).not.toContain("ghp_leak me");
  });

  it("keeps chart values a user sets with --secret secret in the Helm release", async () => {
    const plan = await planProject(
      "cluster-setup",
      { "cluster-setup:argoCdValues": { configs: { secret: { extra: { token: "s3cr3t" } } } } },
      ["cluster-setup:argoCdValues"],
    );
    const release = one(plan, "kubernetes:helm.sh/v3:Release", "argocd");
    expect(release.inputs.values).toBe("[secret]");
    expect(JSON.stringify(plan.resources)).not.toContain("s3cr3t");
  });
});

describe("stack files the CLI could not read are refused with what is wrong", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "stack-files-"));
  const stackFile = (name: string, text: string) => {
    const file = path.join(dir, `Pulumi.${name}.yaml`);
    fs.writeFileSync(file, text);
    return file;
  };
  const fileCases: [string, ProjectName, string, RegExp][] = [
    [
      "a list",
      "cluster",
      "- aws:region: us-west-2\n",
      /is a list, not a map; a stack file is a map with a `config:` map/,
    ],
    ["a scalar", "cluster", "us-west-2\n", /is a string, not a map/],
    ["an empty file", "cluster", "", /is empty; a stack file is a map with a `config:` map/],
    ["config that is a list", "cluster", "config:\n  - aws:region\n", /its config is a list, not a map/],
    ["config that is a scalar", "kargo", "config: 5\n", /its config is a number, not a map/],
    [
      "a misspelt top-level key",
      "cluster",
      "confg:\n  aws:region: us-west-2\n",
      /has unknown top-level key\(s\) confg/,
    ],
    [
      "a secret in plaintext",
      "cluster-setup",
      "config:\n  aws:region: us-west-2\n  cluster-setup:clusterStack: a/cluster/b\n  cluster-setup:pulumiAccessToken: pul-plaintext\n",
      /cluster-setup:pulumiAccessToken must be encrypted as it's secret; set it with pulumi config set --secret pulumiAccessToken <value>/,
    ],
  ];
  it.each(fileCases)("%s", async (name, project, text, message) => {
    const file = stackFile(name.replace(/\W+/g, "-"), text);
    const error = await planChain({ project, configFile: file }).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(error).toBeInstanceOf(StackFileError);
    expect((error as Error).message).toContain(file);
    expect((error as Error).message).toMatch(message);
    expect((error as Error).message).not.toContain("pul-plaintext");
  });

  it("refuses a declared secret the program receives unencrypted, as the CLI would", async () => {
    // The CLI refuses it in the stack file; the program refuses it too when handed one in the clear.
    const upstream = { cluster: (await planChain({ project: "cluster" }))[0]!.upstream };
    const config = readStackConfig("cluster-setup");
    const error = await planProgram({
      projectDir: path.join(repoRoot, "cluster-setup"),
      project: "cluster-setup",
      stack: "example",
      config: config.values,
      secretKeys: [],
      upstream,
    }).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(error).toBeInstanceOf(ProgramError);
    expect((error as ProgramError).registered).toEqual([]);
    expect((error as Error).message).toMatch(
      /cluster-setup:pulumiAccessToken: must be encrypted as it's secret; set it with pulumi config set --secret pulumiAccessToken <value>/,
    );
  });
});

describe("valid configs are never refused", () => {
  it("passes chart value keys named like Object.prototype members through to the release", async () => {
    const values = { controller: { constructor: "a", toString: "b", hasOwnProperty: { valueOf: 1 } } };
    const plan = await planProject("kargo", { "kargo:kargoValues": values });
    const release = one(plan, "kubernetes:helm.sh/v3:Release", "kargo");
    expect((release.inputs.values as { controller: unknown }).controller).toMatchObject(values.controller);
  });

  it("accepts a rule narrowed with resourceNames, and the cluster scope when asked for", async () => {
    const plan = await planProject("cluster-setup", {
      "cluster-setup:stackRbacRules": [
        { apiGroups: [""], resources: ["secrets"], verbs: ["get", "update"], resourceNames: ["app-config"] },
        { apiGroups: ["rbac.authorization.k8s.io"], resources: ["roles"], verbs: ["get", "list"] },
      ],
    });
    expect(one(plan, "kubernetes:rbac.authorization.k8s.io/v1:Role", "stacks-programs").inputs.rules).toEqual(
      [
        { apiGroups: [""], resources: ["secrets"], verbs: ["get", "update"], resourceNames: ["app-config"] },
        { apiGroups: ["rbac.authorization.k8s.io"], resources: ["roles"], verbs: ["get", "list"] },
      ],
    );
  });

  it("treats optional read-only tokens left empty as not set", async () => {
    const plan = await planProject("kargo", { "kargo:gitReadToken": "", "kargo:pulumiReadToken": "" });
    expect(plan.resources.length).toBeGreaterThan(0);
  });

  it("accepts public allow-lists, any-address, and a hostname at the length limits", async () => {
    const label = "a".repeat(63);
    const plan = await planProject("kargo", {
      "kargo:kargoAllowedCidrs": [
        "0.0.0.0/0",
        "8.8.8.0/24",
        ...Array.from({ length: 58 }, (_, i) => `198.51.${i}.0/24`),
      ],
      "kargo:kargoHostname": `${label}.${label}.${label}.${"b".repeat(57)}.com`,
    });
    expect(plan.resources.length).toBeGreaterThan(0);
  });
});

describe("the pipeline and cluster-setup's identities", () => {
  const pipeline = validatePipeline(definition);
  // An environment in a named account has its role there, under the name kargo makes it (docs/accounts.md).
  const identity = (env: string) => {
    const account = accountOf(pipeline.environments, env);
    return {
      serviceAccountName: `pulumi-stacks-${env}`,
      roleName: `stacks-${env}`,
      roleArn:
        account === undefined
          ? `arn:aws:iam::123456789012:role/stacks-${env}`
          : roleArn("aws", account, accountRoleName(pipeline.stacks.serviceAccountName, env)),
    };
  };
  const setup = {
    stacksRepoURL: pipeline.source.repoURL,
    stacksNamespace: "pulumi-stacks",
    stackServiceAccountName: "pulumi-stacks",
    pulumiAccessTokenSecretName: "pulumi-access-token",
    stackIdentities: Object.fromEntries(Object.keys(pipeline.environments).map((e) => [e, identity(e)])),
    previewIdentity: identity("preview"),
    // A cluster that can hold the plugin cache, as the example's does.
    ebsCsiDriver: true,
    volumeSnapshots: true,
    pluginCacheStorageClass: PLUGIN_CACHE_STORAGE_CLASS,
    cognitoAdminGroup: "platform-admins",
    cognitoApproverGroups: [
      ...new Set([
        ...pipeline.stages.flatMap((s) => (s.kind === "gate" ? s.approvers : [])),
        ...Object.values(pipeline.environments).flatMap((e) => riskPolicy(e).deciders),
      ]),
    ],
  } as unknown as ClusterSetup;

  it("agree by default", () => expect(() => checkAgainstClusterSetup(pipeline, setup)).not.toThrow());

  it("refuses an environment cluster-setup made no identity for", () => {
    const environments = Object.keys(pipeline.environments);
    const missing = environments.at(-1)!;
    const { [missing]: _missing, ...without } = setup.stackIdentities;
    expect(() => checkAgainstClusterSetup(pipeline, { ...setup, stackIdentities: without })).toThrow(
      `environment "${missing}" has no identity in cluster-setup; add it to cluster-setup's stackEnvironments (now ${environments.slice(0, -1).join(", ")})`,
    );
  });

  it("refuses each program stage whose ServiceAccount is not the one cluster-setup made", () => {
    const problemsWith = (changed: ClusterSetup) => {
      try {
        checkAgainstClusterSetup(pipeline, changed);
      } catch (err) {
        return (err as Error).message.split("\n").filter((l) => l.startsWith("  - "));
      }
      throw new Error("the pipeline was accepted");
    };
    const ours = (suffix: string) => `${pipeline.stacks.serviceAccountName}-${suffix}`;
    const renamed = { ...setup, previewIdentity: identity("previews") };
    // Every program's preview of an environment in the cluster's account runs under the read-only identity
    // (a named account's previews run as that account's, which accountAgreement checks).
    const inCluster = (e: string) => accountOf(pipeline.environments, e) === undefined;
    const previews = programStages(pipeline).filter((s) => s.kind === "preview" && inCluster(s.environment));
    expect(previews).toHaveLength(
      pipeline.programs.length *
        pipeline.stages.filter((s) => s.kind === "preview" && inCluster(s.environment)).length,
    );
    expect(problemsWith(renamed)).toEqual(
      previews.map(
        (s) =>
          `  - stage "${s.name}" would run as ServiceAccount "${ours("preview")}" but cluster-setup made "${identity("previews").serviceAccountName}"`,
      ),
    );
    // Every program's update of an environment runs under that environment's identity.
    const [env] = Object.keys(pipeline.environments).filter(inCluster);
    const other = { ...setup.stackIdentities, [env!]: identity(`${env}-other`) };
    const updates = programStages(pipeline).filter((s) => s.kind === "update" && s.environment === env);
    expect(updates).toHaveLength(pipeline.programs.length);
    expect(problemsWith({ ...setup, stackIdentities: other })).toEqual(
      updates.map(
        (s) =>
          `  - stage "${s.name}" would run as ServiceAccount "${ours(env!)}" but cluster-setup made "${other[env!]!.serviceAccountName}"`,
      ),
    );
  });

  it("refuses the Kargo project's namespace as the stacks namespace", () => {
    const clash = { ...pipeline, stacks: { ...pipeline.stacks, namespace: pipeline.project } };
    expect(() => checkAgainstClusterSetup(clash, { ...setup, stacksNamespace: pipeline.project })).toThrow(
      `stacks.namespace "${pipeline.project}" is Kargo's or the Kargo project's namespace`,
    );
  });
});

describe("cluster-setup's defaults fit the pipeline", () => {
  it("makes an identity for exactly the environments kargo/pipeline.ts declares", () => {
    const defaults = clusterSetupConfigSchema.parse({
      clusterStack: "a/cluster/b",
      pulumiAccessToken: "token",
    });
    expect(defaults.stackEnvironments).toEqual(Object.keys(validatePipeline(definition).environments));
    expect(defaults.cognitoMfa).toBe("ON");
    expect(defaults.stackRbacScope).toBe("namespace");
  });
});

describe("npm run plan with a broken stack file", () => {
  it("exits 1 with what is wrong with the file, and no stack trace", async () => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "plan-file-")), "Pulumi.bad.yaml");
    fs.writeFileSync(file, "- cluster:vpcCidr: 10.0.0.0/16\n");
    // What the command does with the file, in this process (lib/cli/plan/execute.ts).
    const result = await planInProcess(["--project", "cluster", "--config", file]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`plan failed: stack config ${file}: is a list, not a map`);
    expect(result.stderr).not.toMatch(/\n\s+at /);
  });
});
