// The promoted program (the root Pulumi.yaml) as a plan the diff and the policies can read. It is a Pulumi
// YAML program, which the offline plan cannot run (its engine is the Go pulumi-language-yaml plugin): its
// resources are read as declared, with `${...}` expressions left as written and without the engine's
// evaluation. That is what a pull request changes in it: which resources exist, their properties, their options.
import YAML from "yaml";
import type { PlanResource, ProjectPlan } from "./diff";

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
