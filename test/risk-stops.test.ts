// What stops each environment's Freight at its preview (its risk policy in kargo/pipeline.ts), what each
// preview's verification is told, and who alone may let a stop through. What the links in the Kargo UI show
// is evaluated as Kargo does in test/links (Go); the refusals are pipeline-hostile-risk.test.ts's.
import { beforeAll, describe, expect, it } from "vitest";
import { pipeline as definition } from "../kargo/pipeline";
import { checkAgainstClusterSetup, type ClusterSetup } from "../kargo/upstream";
import { PLUGIN_CACHE_STORAGE_CLASS } from "../lib/pipeline/plugin-cache";
import { environmentStages, programStages, runStages } from "../lib/pipeline/graph";
import { freightLinks, stageLinks, stageSpec } from "../lib/pipeline/promotion";
import { approverGroups, approverRoles, deciderRoles } from "../lib/pipeline/rbac";
import { pipelineMermaid } from "../lib/pipeline/diagram";
import { RISK_CLASSES as CLASSIFIED, classifyStep } from "../kargo/verification/classify.mjs";
import { analysisTemplateKinds } from "../lib/pipeline/verification";
import { DEFAULT_STOP_ON, RISK_CLASSES, type PipelineInput } from "../lib/pipeline/schema";
import { validatePipeline } from "../lib/pipeline/validate";
import { withExtraProgram } from "./kargo-support";
import { kubernetesObjects } from "../lib/cli/plan/output";
import { planChain } from "../lib/cli/plan/projects";
import { allowsOnKargo } from "./helpers";

type Obj = { kind: string; metadata: Record<string, any>; [k: string]: any };
type EnvironmentInput = PipelineInput["environments"][string];
const pipeline = validatePipeline(definition);
/** kargo/pipeline.ts with some environments' fields replaced (`undefined` removes a field). */
const withEnvironments = (envs: Record<string, Partial<Record<keyof EnvironmentInput, unknown>>>) =>
  ({
    ...definition,
    environments: Object.fromEntries(
      Object.entries(definition.environments).map(([name, env]) => [
        name,
        Object.fromEntries(
          Object.entries({ ...env, ...envs[name] }).filter(([, value]) => value !== undefined),
        ),
      ]),
    ),
  }) as PipelineInput;
const problemsOf = (input: PipelineInput): string => {
  try {
    validatePipeline(input);
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error("the pipeline was accepted");
};

/** The environments of kargo/pipeline.ts, whatever a fork names them: each with its preview and update stage. */
const environments = Object.keys(pipeline.environments).map((name) => ({
  name,
  preview: environmentStages(pipeline).find((s) => s.kind === "preview" && s.environment === name),
  update: environmentStages(pipeline).find((s) => s.kind === "update" && s.environment === name),
}));
const previewed = environments.filter((e) => e.preview && e.update);
const [first, second] = [previewed[0]!, previewed[1] ?? previewed[0]!];
const last = previewed[previewed.length - 1]!;

/** What each program's stage of a declared stage passes its AnalysisTemplate beyond project, stack and commit. */
const policyArgsOf = (p: ReturnType<typeof validatePipeline>, declared: string) => {
  const stages = programStages(p).filter((s) => s.declared === declared);
  expect(stages.map((s) => s.program).sort(), declared).toEqual(p.programs.map((x) => x.name).sort());
  return stages.map((s) => {
    const verification = stageSpec(p, s).verification!;
    const args = Object.fromEntries(verification.args!.map((a) => [a.name, a.value]));
    const { project: _p, stack: _s, commit: _c, ...policy } = args;
    return { program: s.program, template: verification.analysisTemplates![0]!.name, policy };
  });
};
/** The policy args a preview stage passes when its environment stops on `stopOn`, decided by `deciders`. */
const stopping = (
  p: ReturnType<typeof validatePipeline>,
  env: (typeof previewed)[number],
  stopOn: string,
  deciders: readonly string[],
) =>
  p.programs.map((x) => ({
    program: x.name,
    template: "pulumi-preview",
    policy: {
      "stop-on": stopOn,
      deciders: deciders.join(","),
      "approve-stage": `${env.update!.name}-${x.name}`,
    },
  }));
const stopsNothing = (p: ReturnType<typeof validatePipeline>) =>
  p.programs.map((x) => ({ program: x.name, template: "pulumi-preview", policy: {} }));

describe("what stops each environment's Freight", () => {
  it("offers exactly the classes the classifier gives, in its order", () => {
    // The pipeline library imports nothing of the kargo project, so it keeps its own list; this holds them equal.
    expect([...RISK_CLASSES]).toEqual([...CLASSIFIED]);
  });

  it("stops and passes the docs' examples as docs/security-and-approvals.md says, per the example's policies", () => {
    const stopsIn = (classes: string[]) =>
      Object.keys(pipeline.environments)
        .filter((name) => {
          const { stopOn } = pipeline.environments[name]!.stopEveryPreview
            ? { stopOn: "all" as const }
            : { stopOn: pipeline.environments[name]!.stopOn ?? DEFAULT_STOP_ON };
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
    // "in qa ... (privilege) or ... (exposure). In dev the same change passes"; a tag passes everywhere.
    for (const classes of [rolePolicy, unblocked]) {
      expect(stopsIn(classes)).toContain("qa");
      expect(stopsIn(classes)).not.toContain("dev");
    }
    expect(stopsIn(tagged)).toEqual([]);
  });

  it("tells each preview what its environment stops on, who decides and which update stage they approve", () => {
    for (const env of previewed) {
      const declared = definition.environments[env.name]!;
      const stopOn = declared.stopEveryPreview
        ? "all"
        : RISK_CLASSES.filter((c) => (declared.stopOn ?? DEFAULT_STOP_ON).includes(c)).join(",");
      expect(policyArgsOf(pipeline, env.preview!.name), env.name).toEqual(
        stopping(pipeline, env, stopOn, declared.deciders ?? declared.destructiveChangeApprovers ?? []),
      );
      // An update compares with its preview whatever the policy: no policy args.
      for (const u of policyArgsOf(pipeline, env.update!.name))
        expect(u, env.name).toEqual({ program: u.program, template: "pulumi-update", policy: {} });
    }
    expect(analysisTemplateKinds(pipeline).sort()).toEqual(["preview", "update"]);
  });

  it("reads each field: stopOn in class order, stopEveryPreview, the default, ephemeral and the old names", () => {
    const groups = ["zz-deciders", "zz-other"];
    const mixed = validatePipeline(
      withEnvironments({
        [first.name]: { ephemeral: true, stopOn: undefined, deciders: undefined },
        [second.name]: { stopOn: ["exposure", "loss", "cost"], deciders: groups },
        [last.name]: { stopOn: undefined, stopEveryPreview: true, deciders: groups.slice(0, 1) },
      }),
    );
    expect(policyArgsOf(mixed, first.preview!.name)).toEqual(stopsNothing(mixed));
    if (second !== first && second !== last)
      expect(policyArgsOf(mixed, second.preview!.name)).toEqual(
        stopping(mixed, second, "loss,exposure,cost", groups),
      );
    expect(policyArgsOf(mixed, last.preview!.name)).toEqual(stopping(mixed, last, "all", groups.slice(0, 1)));
    // With stopOn left out, an environment stops on the default classes.
    const defaulted = validatePipeline(withEnvironments({ [last.name]: { stopOn: undefined } }));
    expect(policyArgsOf(defaulted, last.preview!.name)).toEqual(
      stopping(defaulted, last, DEFAULT_STOP_ON.join(","), pipeline.environments[last.name]!.deciders!),
    );
    // stopOn: [] and the old protected: false stop for nothing, and need no deciders.
    for (const off of [{ stopOn: [] }, { stopOn: undefined, protected: false }]) {
      const p = validatePipeline(withEnvironments({ [last.name]: { ...off, deciders: undefined } }));
      expect(policyArgsOf(p, last.preview!.name), JSON.stringify(off)).toEqual(stopsNothing(p));
      expect(deciderRoles(p).map((r) => r.environment)).not.toContain(last.name);
    }
    // A fork written before deciders: destructiveChangeApprovers are its deciders.
    const old = validatePipeline(
      withEnvironments({
        [last.name]: { stopOn: undefined, deciders: undefined, destructiveChangeApprovers: groups },
      }),
    );
    expect(policyArgsOf(old, last.preview!.name)).toEqual(
      stopping(old, last, DEFAULT_STOP_ON.join(","), groups),
    );
    // The plan holds one preview template whatever the policies.
    expect(analysisTemplateKinds(mixed).sort()).toEqual(["preview", "update"]);
  });

  it("rejects an environment that stops with nobody to decide, or with no preview to stop at", () => {
    expect(problemsOf(withEnvironments({ [last.name]: { deciders: [] } }))).toContain(
      `environments.${last.name}.deciders: stops on ${pipeline.environments[last.name]!.stopOn!.join(", ")}; deciders must name the Cognito groups that may let a stop through (or set stopOn: [] or ephemeral: true)`,
    );
    expect(
      problemsOf(
        withEnvironments({ [last.name]: { deciders: undefined, stopEveryPreview: true, stopOn: undefined } }),
      ),
    ).toContain(
      `environments.${last.name}.deciders: stops on every change; deciders must name the Cognito groups`,
    );
    // The update stage takes its preview stage's place in the order.
    const preview = definition.stages.find((s) => s.name === last.preview!.name)!;
    const noPreview = {
      ...definition,
      stages: definition.stages
        .filter((s) => s.name !== preview.name)
        .map((s) =>
          s.name === last.update!.name ? { ...s, from: preview.from, requireAll: preview.requireAll } : s,
        ),
    } as PipelineInput;
    expect(problemsOf(noPreview)).toContain(
      `environments.${last.name}: stops on ${pipeline.environments[last.name]!.stopOn!.join(", ")}, but no preview stage previews it, so nothing would stop its Freight; add a preview stage, or set stopOn: [] to stop for nothing`,
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
      const declared = definition.environments[s.environment]!;
      const classes = RISK_CLASSES.filter((c) => (declared.stopOn ?? DEFAULT_STOP_ON).includes(c));
      if (s.kind === "preview")
        expect(node, s.name).toContain(
          `<br/>stops on ${classes.join(", ")} → ${declared.deciders!.join(", ")}<br/>`,
        );
      else expect(node, s.name).not.toContain("stops");
    }
    const mixed = validatePipeline(
      withEnvironments({
        [first.name]: { ephemeral: true, stopOn: undefined, deciders: undefined },
        [last.name]: { stopOn: undefined, stopEveryPreview: true },
      }),
    );
    const drawn = pipelineMermaid(mixed);
    for (const x of mixed.programs) {
      expect(drawn).toMatch(
        new RegExp(`"${first.preview!.name}-${x.name}<br/>[^"]*<br/>stops for nothing<br/>`),
      );
      expect(drawn).toMatch(
        new RegExp(
          `"${last.preview!.name}-${x.name}<br/>[^"]*<br/>stops on every change → ${definition.environments[last.name]!.deciders!.join(", ")}<br/>`,
        ),
      );
    }
  });

  it("checks deciders against cluster-setup's Cognito groups, like gate approvers", () => {
    const setup = {
      stacksRepoURL: pipeline.source.repoURL,
      stacksNamespace: pipeline.stacks.namespace,
      stackServiceAccountName: pipeline.stacks.serviceAccountName,
      pulumiAccessTokenSecretName: pipeline.stacks.accessTokenSecret,
      cognitoAdminGroup: "platform-admins",
      cognitoApproverGroups: approverGroups(pipeline),
      region: "us-west-2",
      cognitoRegion: "us-west-2",
      stackIdentities: Object.fromEntries(
        Object.keys(pipeline.environments).map((env) => [
          env,
          { serviceAccountName: `${pipeline.stacks.serviceAccountName}-${env}` },
        ]),
      ),
      previewIdentity: { serviceAccountName: `${pipeline.stacks.serviceAccountName}-preview` },
      ebsCsiDriver: true,
      volumeSnapshots: true,
      pluginCacheStorageClass: PLUGIN_CACHE_STORAGE_CLASS,
    } as unknown as ClusterSetup;
    expect(() => checkAgainstClusterSetup(pipeline, setup)).not.toThrow();
    const misspelt = `${pipeline.environments[last.name]!.deciders![0]}x`;
    const known = ["platform-admins", ...approverGroups(pipeline)].join(", ");
    const typo = validatePipeline(withEnvironments({ [last.name]: { deciders: [misspelt] } }));
    expect(() => checkAgainstClusterSetup(typo, setup)).toThrow(
      `environments.${last.name}.deciders: "${misspelt}" is not a Cognito group; cluster-setup has ${known}`,
    );
    // The old name is checked the same way.
    const oldTypo = validatePipeline(
      withEnvironments({ [last.name]: { deciders: undefined, destructiveChangeApprovers: [misspelt] } }),
    );
    expect(() => checkAgainstClusterSetup(oldTypo, setup)).toThrow(
      `environments.${last.name}.deciders: "${misspelt}" is not a Cognito group`,
    );
  });
});

describe("who may let a stop through", () => {
  const roles = deciderRoles(pipeline);

  /** Every program's update stage of an environment, read off the Kargo stages. */
  const updatesOf = (p: ReturnType<typeof validatePipeline>, environment: string) =>
    programStages(p)
      .filter((s) => s.kind === "update" && s.environment === environment)
      .map((s) => s.name)
      .sort();

  it("maps each environment's deciders to its own ServiceAccount, for every program's update stage there", () => {
    // Every environment of the default pipeline stops on something, with deciders of its own.
    expect(roles.map((r) => [r.environment, r.stage, r.serviceAccount.name])).toEqual(
      environments.filter((e) => e.update).map((e) => [e.name, e.update!.name, `decider-${e.update!.name}`]),
    );
    for (const role of roles) {
      expect(JSON.parse(role.serviceAccount.annotations["rbac.kargo.akuity.io/claims"]!)).toEqual({
        "cognito:groups": definition.environments[role.environment]!.deciders,
      });
      expect([...role.stages].sort(), role.environment).toEqual(updatesOf(pipeline, role.environment));
      expect(role.stages, role.environment).toHaveLength(pipeline.programs.length);
    }
    const unprotected = validatePipeline(
      withEnvironments({ [first.name]: { ephemeral: true, stopOn: undefined, deciders: undefined } }),
    );
    expect(deciderRoles(unprotected).map((r) => r.environment)).toEqual(
      roles.map((r) => r.environment).filter((e) => e !== first.name),
    );
  });

  it("allows exactly Kargo's manual approval of Freight for every program's update stage of that environment", () => {
    for (const p of [pipeline, withExtraProgram(pipeline)]) {
      const stages = runStages(p);
      for (const role of deciderRoles(p)) {
        const updates = updatesOf(p, role.environment);
        expect(updates, role.environment).toHaveLength(p.programs.length);
        // What ApproveFreight checks (akuity/kargo v1.11.2 pkg/server/approve_freight_v1alpha1.go): promote on
        // the Stage, then a status patch of the Freight made as the user.
        for (const update of updates)
          expect(allowsOnKargo(role.rules, "promote", "stages", update), update).toBe(true);
        expect(allowsOnKargo(role.rules, "patch", "freights/status")).toBe(true);
        // Not for any other stage: not a preview, another environment, a gate or a join.
        for (const other of stages.filter((s) => !updates.includes(s.name)))
          expect(allowsOnKargo(role.rules, "promote", "stages", other.name), other.name).toBe(false);
        // Not a promotion of their own (the API creates Promotions as the user), nor anything else.
        expect(allowsOnKargo(role.rules, "create", "promotions")).toBe(false);
        for (const verb of ["update", "patch", "delete"]) {
          for (const resource of ["stages", "freights", "warehouses", "projectconfigs", "promotions"])
            for (const update of updates)
              expect(allowsOnKargo(role.rules, verb, resource, update), `${verb} ${resource}`).toBe(false);
        }
      }
    }
  });

  it("is separate from the gate approvers: nobody else may approve for an update stage", () => {
    const updates = programStages(pipeline).filter((s) => s.kind === "update");
    expect(updates.length).toBeGreaterThan(0);
    for (const gate of approverRoles(pipeline)) {
      for (const update of updates)
        expect(allowsOnKargo(gate.rules, "promote", "stages", update.name)).toBe(false);
    }
  });

  describe("in the plan", () => {
    let objects: Obj[];
    let outputs: Record<string, unknown>;
    beforeAll(async () => {
      const kargo = (await planChain())[2]!;
      objects = kubernetesObjects(kargo) as Obj[];
      outputs = kargo.outputs;
    });

    it("shows in its outputs, per environment, the classes that stop its Freight and who decides", () => {
      for (const [name, env] of Object.entries(definition.environments)) {
        const classes = env.stopEveryPreview
          ? "every change"
          : RISK_CLASSES.filter((c) => (env.stopOn ?? DEFAULT_STOP_ON).includes(c)).join(", ");
        expect(outputs[`stops.${name}`], name).toBe(
          env.ephemeral || classes === ""
            ? "stops for nothing"
            : `stops on ${classes} → ${(env.deciders ?? env.destructiveChangeApprovers)!.join(", ")}`,
        );
      }
      expect(Object.keys(outputs).filter((k) => k.startsWith("stops."))).toHaveLength(
        Object.keys(definition.environments).length,
      );
    });

    it("declares each role, bound to its ServiceAccount, with read access to the project", () => {
      for (const role of roles) {
        const name = role.serviceAccount.name;
        const account = objects.find((o) => o.kind === "ServiceAccount" && o.metadata.name === name)!;
        expect(account.metadata.annotations).toEqual(role.serviceAccount.annotations);
        expect(objects.find((o) => o.kind === "Role" && o.metadata.name === name)!.rules).toEqual(role.rules);
        const bound = objects
          .filter((o) => o.kind === "RoleBinding" && o.subjects?.[0]?.name === name)
          .map((b) => b.roleRef.name)
          .sort();
        expect(bound).toEqual([name, "kargo-viewer"].sort());
      }
    });

    it("hands the preview's Job its stage's policy, and the update's none: one template each", () => {
      const templates = objects.filter((o) => o.kind === "AnalysisTemplate");
      expect(templates.map((t) => t.metadata.name).sort()).toEqual(["pulumi-preview", "pulumi-update"]);
      const envOf = (name: string) => {
        const t = templates.find((x) => x.metadata.name === name)!;
        expect(t.spec.metrics, name).toHaveLength(1);
        const env = t.spec.metrics[0].provider.job.spec.template.spec.containers[0].env as {
          name: string;
          value?: string;
        }[];
        return {
          args: t.spec.args as { name: string; value?: string }[],
          env: new Map(env.map((e) => [e.name, e.value])),
        };
      };
      const preview = envOf("pulumi-preview");
      // Each policy env var reads the stage's arg, which is "" (stops for nothing) unless the stage passes it.
      for (const [name, arg] of [
        ["STOP_ON", "stop-on"],
        ["DECIDERS", "deciders"],
        ["APPROVE_STAGE", "approve-stage"],
      ]) {
        expect(preview.env.get(name!), name).toBe(`{{args.${arg}}}`);
        expect(
          preview.args.find((a) => a.name === arg),
          arg,
        ).toEqual({ name: arg, value: "" });
      }
      for (const t of [preview, envOf("pulumi-update")]) {
        expect(t.env.get("PULUMI_CONSOLE_URL")).toBe("{{args.console-url}}");
        expect(t.args.find((a) => a.name === "console-url")).toEqual({
          name: "console-url",
          value: pipeline.pulumi.consoleUrl,
        });
        expect(t.env.has("CHECK")).toBe(false);
      }
      const update = envOf("pulumi-update");
      for (const name of ["STOP_ON", "DECIDERS", "APPROVE_STAGE"])
        expect(update.env.has(name), name).toBe(false);
    });

    it("links stages and Freight from the ProjectConfig", () => {
      const config = objects.find((o) => o.kind === "ProjectConfig")!;
      expect(config.spec.stageLinks).toEqual(stageLinks(pipeline));
      expect(config.spec.freightLinks).toEqual(freightLinks(pipeline));
    });
  });
});
