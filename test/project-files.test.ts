// The projects' own files a user starts from: each example stack config shows every key, and which
// Pulumi.yaml may serve as a template for `pulumi new`.
import * as fs from "node:fs";
import * as path from "node:path";
import YAML from "yaml";
import { describe, expect, it } from "vitest";
import type { z } from "zod";
import { clusterConfigSchema } from "../cluster/config";
import { clusterSetupConfigSchema } from "../cluster-setup/config";
import { kargoConfigSchema } from "../kargo/config";
import { pipeline as definition } from "../kargo/pipeline";
import { projectOrder, repoRoot } from "../lib/cli/plan/projects";
import { documentationPages } from "../lib/markdown";
import { validatePipeline } from "../lib/pipeline/validate";

const schemas: Record<(typeof projectOrder)[number], z.ZodObject> = {
  cluster: clusterConfigSchema,
  "cluster-setup": clusterSetupConfigSchema,
  kargo: kargoConfigSchema,
};

describe("Pulumi.example.yaml", () => {
  // The optional keys without a default are not declared in Pulumi.yaml (the CLI would require them), so
  // the example is where every key, set or in a comment, is shown.
  it.each(projectOrder)("of %s shows every key its program validates", (project) => {
    const example = fs.readFileSync(path.join(repoRoot, project, "Pulumi.example.yaml"), "utf8");
    for (const key of Object.keys(schemas[project].shape))
      expect(example, `${project}:${key}`).toMatch(new RegExp(`${project}:${key}\\b`));
  });
});

describe("Pulumi.yaml templates", () => {
  // `pulumi new <repo>/tree/main/<project>` copies that folder alone: the three projects import ../lib and
  // take their packages from the root package.json, so they cannot be templates. The promoted program can.
  it.each(projectOrder)("%s/Pulumi.yaml offers no template, and no page promises one", (project) => {
    const file = YAML.parse(fs.readFileSync(path.join(repoRoot, project, "Pulumi.yaml"), "utf8"));
    expect(file.template).toBeUndefined();
    expect(fs.readFileSync(path.join(repoRoot, project, "index.ts"), "utf8")).toMatch(/from "\.\.\/lib\//);
    for (const page of documentationPages())
      expect(fs.readFileSync(page, "utf8"), page).not.toMatch(/pulumi new \S*\/tree\/main\/\S+/);
  });

  // Each promoted program's folder holds all it needs, so one that offers a template is a whole template.
  const programs = validatePipeline(definition).programs.map((x) =>
    path.join(repoRoot, x.dir, "Pulumi.yaml"),
  );
  it.each(programs.map((f) => [path.relative(repoRoot, f), f]))(
    "%s prompts for exactly what the project needs, when it offers a template",
    (_, file) => {
      const project = YAML.parse(fs.readFileSync(file, "utf8"));
      if (project.template === undefined) return;
      expect(project.template?.description).toBeTruthy();
      const prompts = project.template.config ?? {};
      const declared = Object.entries<{ default?: unknown; secret?: boolean }>(project.config ?? {});
      for (const [key, decl] of declared) {
        if (decl.default === undefined)
          expect(prompts, `${key} has no default, so the template asks for it`).toHaveProperty(key);
        if (decl.secret) expect(prompts[key]?.secret, `${key} is a secret`).toBe(true);
      }
      for (const [key, prompt] of Object.entries<{ description?: string }>(prompts)) {
        expect(prompt.description, `${key} is described`).toBeTruthy();
        if (!key.includes(":"))
          expect(Object.keys(project.config ?? {}), `${key} is declared`).toContain(key);
      }
    },
  );
});
