// Destructive changes stop at the preview of a protected environment until a named approver lets that
// Freight through. What the links in the Kargo UI show is evaluated as Kargo does in test/links (Go).
import { beforeAll, describe, expect, it } from "vitest";
import { pipeline as definition } from "../kargo/pipeline";
import { checkAgainstClusterSetup, type ClusterSetup } from "../kargo/upstream";
import { PLUGIN_CACHE_STORAGE_CLASS } from "../lib/pipeline/plugin-cache";
import { environmentStages, programStages, runStages } from "../lib/pipeline/graph";
import { freightLinks, stageLinks, stageSpec } from "../lib/pipeline/promotion";
import { approverGroups, approverRoles, destructiveChangeApproverRoles } from "../lib/pipeline/rbac";
import { analysisTemplateKinds } from "../lib/pipeline/verification";
import type { PipelineInput } from "../lib/pipeline/schema";
import { validatePipeline } from "../lib/pipeline/validate";
import { withExtraProgram } from "./kargo-support";
import { kubernetesObjects } from "../lib/cli/plan/output";
import { planChain } from "../lib/cli/plan/projects";
import { allowsOnKargo } from "./helpers";

type Obj = { kind: string; metadata: Record<string, any>; [k: string]: any };
const pipeline = validatePipeline(definition);
const withEnvironments = (envs: Partial<Record<string, Partial<PipelineInput["environments"][string]>>>) =>
  ({
    ...definition,
    environments: Object.fromEntries(
      Object.entries(definition.environments).map(([name, env]) => [name, { ...env, ...envs[name] }]),
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

describe("which previews stop on destructive changes", () => {
  it("protects every environment unless it is ephemeral or says protected: false", () => {
    /** The template verifying each program's stage of a declared stage. */
    const templatesOf = (p: ReturnType<typeof validatePipeline>, declared: string) => {
      const stages = programStages(p).filter((s) => s.declared === declared);
      expect(stages.map((s) => s.program).sort(), declared).toEqual(p.programs.map((x) => x.name).sort());
      return [...new Set(stages.map((s) => stageSpec(p, s).verification!.analysisTemplates![0]!.name))];
    };
    expect(
      programStages(pipeline).map((s) => stageSpec(pipeline, s).verification!.analysisTemplates![0]!.name),
    ).toEqual(
      programStages(pipeline).map((s) =>
        s.kind === "preview" ? "pulumi-preview-protected" : "pulumi-update",
      ),
    );
    // The plan holds only the templates stages use: no unprotected preview template by default.
    expect(analysisTemplateKinds(pipeline).sort()).toEqual(["protectedPreview", "update"]);

    const mixed = validatePipeline(
      withEnvironments({ [first.name]: { ephemeral: true }, [second.name]: { protected: false } }),
    );
    expect(templatesOf(mixed, first.preview!.name)).toEqual(["pulumi-preview"]);
    expect(templatesOf(mixed, second.preview!.name)).toEqual(["pulumi-preview"]);
    expect(templatesOf(mixed, first.update!.name)).toEqual(["pulumi-update"]);
    if (previewed.length > 2)
      expect(templatesOf(mixed, last.preview!.name)).toEqual(["pulumi-preview-protected"]);
    expect(analysisTemplateKinds(mixed)).toContain("preview");
    // An ephemeral environment can still be protected explicitly.
    const explicit = validatePipeline(
      withEnvironments({ [first.name]: { ephemeral: true, protected: true } }),
    );
    expect(templatesOf(explicit, first.preview!.name)).toEqual(["pulumi-preview-protected"]);
  });

  it("rejects a protected environment nobody may approve, or whose destructive changes no preview would catch", () => {
    expect(problemsOf(withEnvironments({ [last.name]: { destructiveChangeApprovers: [] } }))).toContain(
      `environment "${last.name}": is protected; destructiveChangeApprovers must name the Cognito groups that may approve its deletes and replaces (or set protected: false or ephemeral: true)`,
    );
    // An ephemeral environment someone protected explicitly is not told to become ephemeral.
    expect(
      problemsOf(
        withEnvironments({
          [last.name]: { ephemeral: true, protected: true, destructiveChangeApprovers: [] },
        }),
      ),
    ).toContain(
      `environment "${last.name}": is protected; destructiveChangeApprovers must name the Cognito groups that may approve its deletes and replaces (or set protected: false)`,
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
      `environment "${last.name}": is protected, but no preview stage previews it, so nothing would stop a destructive change; add a preview stage or set protected: false`,
    );
    expect(() =>
      validatePipeline(
        withEnvironments({ [last.name]: { protected: false, destructiveChangeApprovers: [] } }),
      ),
    ).not.toThrow();
  });

  it("checks destructive-change approver groups against cluster-setup's Cognito groups, like gate approvers", () => {
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
    const misspelt = `${pipeline.environments[last.name]!.destructiveChangeApprovers[0]}x`;
    const typo = validatePipeline(
      withEnvironments({ [last.name]: { destructiveChangeApprovers: [misspelt] } }),
    );
    expect(() => checkAgainstClusterSetup(typo, setup)).toThrow(
      `environment "${last.name}": destructive-change approver group "${misspelt}" is not a Cognito group; cluster-setup has ${["platform-admins", ...approverGroups(pipeline)].join(", ")}`,
    );
  });
});

describe("who may let a destructive change through", () => {
  const roles = destructiveChangeApproverRoles(pipeline);

  /** Every program's update stage of an environment, read off the Kargo stages. */
  const updatesOf = (p: ReturnType<typeof validatePipeline>, environment: string) =>
    programStages(p)
      .filter((s) => s.kind === "update" && s.environment === environment)
      .map((s) => s.name)
      .sort();

  it("maps each protected environment's approver groups to its own ServiceAccount, for every program's update stage there", () => {
    // Every environment of the default pipeline is protected, with approvers of its own.
    expect(roles.map((r) => [r.environment, r.stage, r.serviceAccount.name])).toEqual(
      environments
        .filter((e) => e.update)
        .map((e) => [e.name, e.update!.name, `destructive-approver-${e.update!.name}`]),
    );
    for (const role of roles) {
      expect(JSON.parse(role.serviceAccount.annotations["rbac.kargo.akuity.io/claims"]!)).toEqual({
        "cognito:groups": pipeline.environments[role.environment]!.destructiveChangeApprovers,
      });
      expect([...role.stages].sort(), role.environment).toEqual(updatesOf(pipeline, role.environment));
      expect(role.stages, role.environment).toHaveLength(pipeline.programs.length);
    }
    const unprotected = validatePipeline(withEnvironments({ [first.name]: { ephemeral: true } }));
    expect(destructiveChangeApproverRoles(unprotected).map((r) => r.environment)).toEqual(
      roles.map((r) => r.environment).filter((e) => e !== first.name),
    );
  });

  it("allows exactly Kargo's manual approval of Freight for every program's update stage of that environment", () => {
    for (const p of [pipeline, withExtraProgram(pipeline)]) {
      const stages = runStages(p);
      for (const role of destructiveChangeApproverRoles(p)) {
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
    beforeAll(async () => {
      objects = kubernetesObjects((await planChain())[2]!) as Obj[];
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

    it("holds the destructive-change metrics only in the protected preview template", () => {
      const templates = objects.filter((o) => o.kind === "AnalysisTemplate");
      const metricsOf = (name: string) =>
        templates.find((t) => t.metadata.name === name)!.spec.metrics.map((m: { name: string }) => m.name);
      expect(metricsOf("pulumi-preview-protected")).toEqual(["pulumi-preview", "no-deletes", "no-replaces"]);
      expect(metricsOf("pulumi-update")).toEqual(["pulumi-update"]);
      expect(templates.map((t) => t.metadata.name).sort()).toEqual([
        "pulumi-preview-protected",
        "pulumi-update",
      ]);
    });

    it("links stages and Freight from the ProjectConfig", () => {
      const config = objects.find((o) => o.kind === "ProjectConfig")!;
      expect(config.spec.stageLinks).toEqual(stageLinks(pipeline));
      expect(config.spec.freightLinks).toEqual(freightLinks(pipeline));
    });
  });
});
