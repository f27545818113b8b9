// The promoted programs (kargo/pipeline.ts `programs`, each in a folder of its own) as plans the diff and the
// policies can read. A Pulumi YAML program cannot run offline (its engine is the Go pulumi-language-yaml
// plugin): its resources are read as declared, with `${...}` expressions left as written and without the
// engine's evaluation. That is what a pull request changes in it: which resources exist, their properties,
// their options. A program of another runtime is listed as not planned: running a TypeScript program under
// the mocks would need its own dependencies and the outputs of the stacks it reads (a YAML program's are
// unevaluated), so its preview stage and the pull-request preview are where its changes show.
import * as fs from "node:fs";
import * as path from "node:path";
import YAML from "yaml";
import type { PlanResource, ProjectPlan } from "./diff";

/** A promoted program, as `npm run programs` lists it: its folder is relative to the repository. */
export interface PromotedProgram {
  name: string;
  dir: string;
  project: string;
  runtime: string;
}

export interface ProgramPlans {
  /** The plan of each Pulumi YAML program, in the programs' order. */
  plans: ProjectPlan[];
  /** The programs of other runtimes, which the offline plan does not run. */
  unplanned: PromotedProgram[];
}

/**
 * Pulumi YAML accepts `pkg:module:Type` for `pkg:module/type:Type` (the type token's module file part is the
 * type name with a lower-case first letter), as its documentation's examples use (`aws:s3:Bucket`).
 */
export function canonicalType(token: string): string {
  const [pkg, module, type, ...rest] = token.split(":");
  if (rest.length > 0 || !pkg || !module || !type || module.includes("/")) return token;
  return `${pkg}:${module}/${type[0]!.toLowerCase()}${type.slice(1)}:${type}`;
}

interface YamlResource {
  type?: string;
  properties?: Record<string, unknown>;
  options?: { protect?: boolean; retainOnDelete?: boolean; deleteBeforeReplace?: boolean; parent?: string };
}

/** The resources a Pulumi YAML program declares, for stack `stack`, in the shape of resources.json. */
export function yamlProgramPlan(text: string, stack = "example"): ProjectPlan {
  const program = (YAML.parse(text) ?? {}) as { name?: string; resources?: Record<string, YamlResource> };
  const project = String(program.name ?? "program");
  const urn = (type: string, name: string) => `urn:pulumi:${stack}::${project}::${type}::${name}`;
  const resources: PlanResource[] = Object.entries(program.resources ?? {}).map(([name, r]) => {
    const type = canonicalType(String(r.type));
    return {
      urn: urn(type, name),
      type,
      name,
      parent: null,
      inputs: r.properties ?? {},
      options: {
        protect: r.options?.protect === true,
        retainOnDelete: r.options?.retainOnDelete === true,
        deleteBeforeReplace: r.options?.deleteBeforeReplace === true,
      },
    };
  });
  return { project, stack, resources };
}

/** The plans of the promoted programs in the checkout `tree`, and the programs it cannot plan offline. */
export function programPlans(tree: string, programs: PromotedProgram[]): ProgramPlans {
  const plans: ProjectPlan[] = [];
  const unplanned: PromotedProgram[] = [];
  for (const program of programs) {
    if (program.runtime !== "yaml") {
      unplanned.push(program);
      continue;
    }
    plans.push(yamlProgramPlan(fs.readFileSync(path.join(tree, program.dir, "Pulumi.yaml"), "utf8")));
  }
  return { plans, unplanned };
}
