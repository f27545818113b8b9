// What stops each environment's Freight at its preview (its risk policy in kargo/pipeline.ts) and what each
// preview's verification is told; who alone may let a stop through is risk-deciders.test.ts's. The refusals
// are pipeline-hostile-risk.test.ts's.
import { describe, expect, it } from "vitest";
import { pipeline as definition } from "../kargo/pipeline";
import { checkAgainstClusterSetup, type ClusterSetup } from "../kargo/upstream";
import { accountOf, accountRoleName, roleArn } from "../lib/pipeline/accounts";
import { PLUGIN_CACHE_STORAGE_CLASS } from "../lib/pipeline/plugin-cache";
import { programStages } from "../lib/pipeline/graph";
import { approverGroups, deciderRoles } from "../lib/pipeline/rbac";
import { pipelineMermaid } from "../lib/pipeline/diagram";
import {
  RISK_CLASSES as CLASSIFIED,
  SECRET_SIG,
  SECRET_SIG_KEY,
  UNKNOWN,
  classifyStep,
} from "../kargo/verification/classify.mjs";
import { analysisTemplateKinds } from "../lib/pipeline/verification";
import {
  DEFAULT_STOP_ON,
  RISK_CLASSES,
  riskPolicy,
  stopOnText,
  type PipelineInput,
} from "../lib/pipeline/schema";
import { validatePipeline } from "../lib/pipeline/validate";
import { expectPolicyArgs, policyArgsOf, stopping, stopsNothing } from "./fork-checks";
import { first, last, pipeline, second, withEnvironments } from "./risk-stops-support";

const problemsOf = (input: PipelineInput): string => {
  try {
    validatePipeline(input);
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error("the pipeline was accepted");
};

describe("what stops each environment's Freight", () => {
  it("offers exactly the classes the classifier gives, in its order", () => {
    // The pipeline library imports nothing of the kargo project, so it keeps its own list; this holds them equal.
    expect([...RISK_CLASSES]).toEqual([...CLASSIFIED]);
  });

  it("stops and passes the docs' examples as docs/security-and-approvals.md says, per the example's policies", () => {
    // Where a change of these classes stops: every environment that stops every change, and those whose
    // stopOn lists one of them.
    const stopsIn = (classes: string[]) =>
      Object.keys(pipeline.environments)
        .filter((name) => {
          const { stopOn } = riskPolicy(pipeline.environments[name]!);
          return stopOn === "all" || classes.some((c) => stopOn.includes(c as never));
        })
        .sort();
    const rolePolicy = classifyStep({ op: "create", type: "aws:iam/rolePolicy:RolePolicy", newInputs: {} });
    const unblocked = classifyStep({
      op: "update",
      type: "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock",
      oldInputs: { blockPublicPolicy: true },
      newInputs: { blockPublicPolicy: false },
      diffs: ["blockPublicPolicy"],
    });
    const tagged = classifyStep({
      op: "update",
      type: "aws:s3/bucket:Bucket",
      oldInputs: { tags: {} },
      newInputs: { tags: { team: "a" } },
      diffs: ["tags"],
    });
    expect([rolePolicy, unblocked, tagged]).toEqual([["privilege"], ["exposure"], []]);
    // "because it cannot be told": a CIDR unknown at preview or secret stops qa; a rule whose only unknowns
    // are references passes.
    const rule = (newInputs: Record<string, unknown>) =>
      classifyStep({
        op: "create",
        type: "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule",
        newInputs,
      });
    const unknownCidr = rule({ securityGroupId: UNKNOWN, cidrIpv4: UNKNOWN });
    const secretCidr = rule({ cidrIpv4: { [SECRET_SIG_KEY]: SECRET_SIG, ciphertext: "[secret]" } });
    const reference = rule({ securityGroupId: UNKNOWN, referencedSecurityGroupId: UNKNOWN });
    expect([unknownCidr, secretCidr, reference]).toEqual([["exposure"], ["exposure"], []]);
    // "in qa ... (privilege) or ... (exposure). In dev the same change passes"; a tag passes everywhere.
    for (const classes of [rolePolicy, unblocked, unknownCidr, secretCidr]) {
      expect(stopsIn(classes)).toContain("qa");
      expect(stopsIn(classes)).not.toContain("dev");
    }
    // "a new tag on the bucket [passes], in any environment of the example": one that stops every change
    // (a fork's prod, say) stops it.
    expect(stopsIn(tagged)).toEqual(
      Object.keys(pipeline.environments)
        .filter((name) => riskPolicy(pipeline.environments[name]!).stopOn === "all")
        .sort(),
    );
  });

  it("tells each preview what its environment stops on, who decides and which update stage they approve", () => {
    expectPolicyArgs(pipeline);
    expect(analysisTemplateKinds(pipeline).sort()).toEqual(["preview", "update"]);
  });

  it("reads each field: stopOn in class order, stopEveryPreview, the default, ephemeral and the old names", () => {
    const groups = ["zz-deciders", "zz-other"];
    const mixed = validatePipeline(
      withEnvironments({
        [first.name]: { ephemeral: true },
        [second.name]: { stopOn: ["exposure", "loss", "cost"], deciders: groups },
        [last.name]: { stopEveryPreview: true, deciders: groups.slice(0, 1) },
      }),
    );
    expect(policyArgsOf(mixed, first.preview!.name)).toEqual(stopsNothing(mixed));
    if (second !== first && second !== last)
      expect(policyArgsOf(mixed, second.preview!.name)).toEqual(
        stopping(mixed, second, "loss,exposure,cost", groups),
      );
    expect(policyArgsOf(mixed, last.preview!.name)).toEqual(stopping(mixed, last, "all", groups.slice(0, 1)));
    // With stopOn left out, an environment stops on the default classes.
    const defaulted = validatePipeline(withEnvironments({ [last.name]: { deciders: groups } }));
    expect(policyArgsOf(defaulted, last.preview!.name)).toEqual(
      stopping(defaulted, last, DEFAULT_STOP_ON.join(","), groups),
    );
    // stopOn: [] and the old protected: false stop for nothing, and need no deciders.
    for (const off of [{ stopOn: [] }, { protected: false }]) {
      const p = validatePipeline(withEnvironments({ [last.name]: off }));
      expect(policyArgsOf(p, last.preview!.name), JSON.stringify(off)).toEqual(stopsNothing(p));
      expect(deciderRoles(p).map((r) => r.environment)).not.toContain(last.name);
    }
    // A fork written before deciders: destructiveChangeApprovers are its deciders.
    const old = validatePipeline(withEnvironments({ [last.name]: { destructiveChangeApprovers: groups } }));
    expect(policyArgsOf(old, last.preview!.name)).toEqual(
      stopping(old, last, DEFAULT_STOP_ON.join(","), groups),
    );
    // The plan holds one preview template whatever the policies.
    expect(analysisTemplateKinds(mixed).sort()).toEqual(["preview", "update"]);
  });

  it("rejects an environment that stops with nobody to decide, or with no preview to stop at", () => {
    const classes = RISK_CLASSES.slice(0, 2);
    expect(problemsOf(withEnvironments({ [last.name]: { stopOn: [...classes], deciders: [] } }))).toContain(
      `environments.${last.name}.deciders: stops on ${classes.join(", ")}; deciders must name the Cognito groups that may let a stop through (or set stopOn: [] or ephemeral: true)`,
    );
    expect(problemsOf(withEnvironments({ [last.name]: { stopEveryPreview: true } }))).toContain(
      `environments.${last.name}.deciders: stops on every change; deciders must name the Cognito groups`,
    );
    // The update stage takes its preview stage's place in the order.
    const preview = definition.stages.find((s) => s.name === last.preview!.name)!;
    const stops = withEnvironments({ [last.name]: { stopOn: [...classes], deciders: ["zz-deciders"] } });
    const noPreview = {
      ...stops,
      stages: stops.stages
        .filter((s) => s.name !== preview.name)
        .map((s) =>
          s.name === last.update!.name ? { ...s, from: preview.from, requireAll: preview.requireAll } : s,
        ),
    } as PipelineInput;
    expect(problemsOf(noPreview)).toContain(
      `environments.${last.name}: stops on ${classes.join(", ")}, but no preview stage previews it, so nothing would stop its Freight; add a preview stage, or set stopOn: [] to stop for nothing`,
    );
    expect(() =>
      validatePipeline({
        ...noPreview,
        environments: { ...noPreview.environments, [last.name]: { pulumiStack: last.name, stopOn: [] } },
      }),
    ).not.toThrow();
  });

  it("draws on each preview of the README's diagram where it stops and who decides", () => {
    const lines = pipelineMermaid(pipeline).split("\n");
    for (const s of programStages(pipeline)) {
      const node = lines.find((l) => l.trimStart().startsWith(`${s.name.replace(/[^A-Za-z0-9]/g, "_")}[`))!;
      expect(node, s.name).toBeDefined();
      const policy = riskPolicy(pipeline.environments[s.environment]!);
      const what = stopOnText(policy);
      if (s.kind === "preview")
        expect(node, s.name).toContain(
          what === "nothing"
            ? "<br/>stops for nothing<br/>"
            : `<br/>stops on ${what} → ${policy.deciders.join(", ")}<br/>`,
        );
      else expect(node, s.name).not.toContain("stops");
    }
    const mixed = validatePipeline(
      withEnvironments({
        [first.name]: { ephemeral: true },
        [last.name]: { stopEveryPreview: true, deciders: ["zz-deciders"] },
      }),
    );
    const drawn = pipelineMermaid(mixed);
    for (const x of mixed.programs) {
      expect(drawn).toMatch(
        new RegExp(`"${first.preview!.name}-${x.name}<br/>[^"]*<br/>stops for nothing<br/>`),
      );
      expect(drawn).toMatch(
        new RegExp(`"${last.preview!.name}-${x.name}<br/>[^"]*<br/>stops on every change → zz-deciders<br/>`),
      );
    }
  });

  it("checks deciders against cluster-setup's Cognito groups, like gate approvers", () => {
    // An account no environment names, for the cluster's.
    const clusterAccountId = "000000000000";
    const setup = {
      stacksRepoURL: pipeline.source.repoURL,
      stacksNamespace: pipeline.stacks.namespace,
      stackServiceAccountName: pipeline.stacks.serviceAccountName,
      pulumiAccessTokenSecretName: pipeline.stacks.accessTokenSecret,
      cognitoAdminGroup: "platform-admins",
      cognitoApproverGroups: approverGroups(pipeline),
      region: "us-west-2",
      cognitoRegion: "us-west-2",
      // Each identity as cluster-setup makes it: an environment in an account of its own runs as the role
      // kargo makes there.
      stackIdentities: Object.fromEntries(
        Object.keys(pipeline.environments).map((env) => {
          const account = accountOf(pipeline.environments, env) ?? clusterAccountId;
          const role = accountRoleName(pipeline.stacks.serviceAccountName, env);
          return [
            env,
            {
              serviceAccountName: `${pipeline.stacks.serviceAccountName}-${env}`,
              roleArn: roleArn("aws", account, role),
            },
          ];
        }),
      ),
      previewIdentity: {
        serviceAccountName: `${pipeline.stacks.serviceAccountName}-preview`,
        roleArn: roleArn("aws", clusterAccountId, `${pipeline.stacks.serviceAccountName}-preview`),
      },
      ebsCsiDriver: true,
      volumeSnapshots: true,
      pluginCacheStorageClass: PLUGIN_CACHE_STORAGE_CLASS,
    } as unknown as ClusterSetup;
    expect(() => checkAgainstClusterSetup(pipeline, setup)).not.toThrow();
    const misspelt = `${approverGroups(pipeline)[0]}x`;
    const known = ["platform-admins", ...approverGroups(pipeline)].join(", ");
    const typo = validatePipeline(withEnvironments({ [last.name]: { deciders: [misspelt] } }));
    expect(() => checkAgainstClusterSetup(typo, setup)).toThrow(
      `environments.${last.name}.deciders: "${misspelt}" is not a Cognito group; cluster-setup has ${known}`,
    );
    // The old name is checked the same way.
    const oldTypo = validatePipeline(
      withEnvironments({ [last.name]: { destructiveChangeApprovers: [misspelt] } }),
    );
    expect(() => checkAgainstClusterSetup(oldTypo, setup)).toThrow(
      `environments.${last.name}.deciders: "${misspelt}" is not a Cognito group`,
    );
  });
});
