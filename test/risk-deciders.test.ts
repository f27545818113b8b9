// Who alone may let a stop through (the deciders of each environment's risk policy in kargo/pipeline.ts), and
// what the links in the Kargo UI show, evaluated as Kargo does in test/links (Go). What stops Freight is
// risk-stops.test.ts's.
import { beforeAll, describe, expect, it } from "vitest";
import { pipeline as definition } from "../kargo/pipeline";
import { programStages, runStages } from "../lib/pipeline/graph";
import { freightLinks, stageLinks } from "../lib/pipeline/promotion";
import { approverRoles, deciderRoles } from "../lib/pipeline/rbac";
import { DEFAULT_STOP_ON, RISK_CLASSES, isProtected, riskPolicy } from "../lib/pipeline/schema";
import { validatePipeline } from "../lib/pipeline/validate";
import { withExtraProgram } from "./kargo-support";
import { kubernetesObjects } from "../lib/cli/plan/output";
import { planChain } from "../lib/cli/plan/projects";
import { allowsOnKargo } from "./helpers";
import { environments, first, pipeline, withEnvironments } from "./risk-stops-support";

type Obj = { kind: string; metadata: Record<string, any>; [k: string]: any };

describe("who may let a stop through", () => {
  const roles = deciderRoles(pipeline);

  /** Every program's update stage of an environment, read off the Kargo stages. */
  const updatesOf = (p: ReturnType<typeof validatePipeline>, environment: string) =>
    programStages(p)
      .filter((s) => s.kind === "update" && s.environment === environment)
      .map((s) => s.name)
      .sort();

  it("maps each environment's deciders to its own ServiceAccount, for every program's update stage there", () => {
    // Each environment that stops on something has a role of its own, for its deciders.
    expect(roles.map((r) => [r.environment, r.stage, r.serviceAccount.name])).toEqual(
      environments
        .filter((e) => e.update && isProtected(pipeline.environments[e.name]!))
        .map((e) => [e.name, e.update!.name, `decider-${e.update!.name}`]),
    );
    expect(roles.length).toBeGreaterThan(0);
    for (const role of roles) {
      expect(JSON.parse(role.serviceAccount.annotations["rbac.kargo.akuity.io/claims"]!)).toEqual({
        "cognito:groups": riskPolicy(pipeline.environments[role.environment]!).deciders,
      });
      expect([...role.stages].sort(), role.environment).toEqual(updatesOf(pipeline, role.environment));
      expect(role.stages, role.environment).toHaveLength(pipeline.programs.length);
    }
    const unprotected = validatePipeline(withEnvironments({ [first.name]: { ephemeral: true } }));
    expect(deciderRoles(unprotected).map((r) => r.environment)).toEqual(
      roles.map((r) => r.environment).filter((e) => e !== first.name),
    );
  });

  it("allows exactly Kargo's manual approval of Freight for every program's update stage of that environment, and promoting by hand into its previews and updates", () => {
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
        // Promoting by hand into those and the environment's previews (a rollback previews, then updates):
        // `promote` on each, `create` promotions (pkg/server/promote_to_stage_v1alpha1.go).
        const previews = programStages(p)
          .filter((s) => s.kind === "preview" && s.environment === role.environment)
          .map((s) => s.name);
        expect(previews, role.environment).toHaveLength(p.programs.length);
        for (const preview of previews)
          expect(allowsOnKargo(role.rules, "promote", "stages", preview), preview).toBe(true);
        expect(allowsOnKargo(role.rules, "create", "promotions")).toBe(true);
        // Not for any other stage: another environment's, a gate or a join.
        for (const other of stages.filter((s) => !updates.includes(s.name) && !previews.includes(s.name)))
          expect(allowsOnKargo(role.rules, "promote", "stages", other.name), other.name).toBe(false);
        // Nothing else.
        for (const verb of ["update", "patch", "delete"]) {
          for (const resource of ["stages", "freights", "warehouses", "projectconfigs", "promotions"])
            for (const update of updates)
              expect(allowsOnKargo(role.rules, verb, resource, update), `${verb} ${resource}`).toBe(false);
        }
      }
    }
  });

  it("is separate from the gate approvers: nobody else may approve for, or promote into, an update stage", () => {
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
          env.ephemeral || env.protected === false || classes === ""
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
