import * as fs from "node:fs";
import * as path from "node:path";
import YAML from "yaml";
import { beforeAll, describe, expect, it } from "vitest";
import type { KubeObject } from "../lib/crds/validate";
import { kubernetesObjects } from "../lib/cli/plan/output";
import { planChain, repoRoot } from "../lib/cli/plan/projects";
import { getValidator } from "./crds-support";

/** Built-in API groups: no CRD describes them, so they get the name and namespace checks only. */
const builtIn =
  /^(v1|(rbac\.authorization\.k8s\.io|admissionregistration\.k8s\.io|apps|batch|networking\.k8s\.io|policy|storage\.k8s\.io)\/v1)\//;

describe("every Kubernetes object we emit", () => {
  const objects: { source: string; object: KubeObject }[] = [];
  beforeAll(async () => {
    for (const plan of await planChain()) {
      for (const object of kubernetesObjects(plan))
        objects.push({ source: plan.project, object: object as KubeObject });
    }
    const stacksDir = path.join(repoRoot, "stacks");
    for (const file of fs.readdirSync(stacksDir).filter((f) => f.endsWith(".yaml"))) {
      for (const doc of YAML.parseAllDocuments(fs.readFileSync(path.join(stacksDir, file), "utf8"))) {
        objects.push({ source: `stacks/${file}`, object: doc.toJS() as KubeObject });
      }
    }
  });

  it("passes the upstream schemas, CEL rules and Kargo's step and subscription schemas", () => {
    const kinds = new Set(objects.map((o) => o.object.kind));
    for (const kind of [
      "Project",
      "ProjectConfig",
      "Warehouse",
      "Stage",
      "PromotionTask",
      "AnalysisTemplate",
      "Application",
      "AppProject",
      "Stack",
    ]) {
      expect(kinds, `the plan and stacks/ emit a ${kind}`).toContain(kind);
    }
    const report = getValidator().validate(objects.map((o) => o.object));
    expect(report.errors).toEqual([]);
    expect(report.unevaluatedRules, "CEL rules this validator could not evaluate").toEqual([]);
    expect(
      report.unschematized.filter((kind) => !builtIn.test(kind)),
      "custom kinds without a pinned CRD",
    ).toEqual([]);
  });
});
