// Each project's Pulumi.yaml declares exactly the keys its program validates that have a default or must be
// set, with the same defaults: a key left unset means the same whether the Pulumi CLI fills in the declared
// default or the program does. An optional key without a default is not declared: the CLI refuses to run a
// stack that leaves a declared key without a default unset (pulumi/pulumi v3.259.0 pkg/workspace/config.go).
import * as fs from "node:fs";
import * as path from "node:path";
import YAML from "yaml";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { clusterConfigSchema } from "../cluster/config";
import { clusterSetupConfigSchema } from "../cluster-setup/config";
import { kargoConfigSchema } from "../kargo/config";
import { projectOrder, repoRoot } from "../lib/cli/plan/projects";

describe("config declarations", () => {
  const schemas: Record<(typeof projectOrder)[number], z.ZodObject> = {
    cluster: clusterConfigSchema,
    "cluster-setup": clusterSetupConfigSchema,
    kargo: kargoConfigSchema,
  };
  it.each(projectOrder)(
    "of %s in Pulumi.yaml are the keys the program validates, with the same defaults",
    (project) => {
      const declared = YAML.parse(
        fs.readFileSync(path.join(repoRoot, project, "Pulumi.yaml"), "utf8"),
      ).config;
      const schema = schemas[project];
      const defaultOf = (field: z.ZodType) => {
        // A default is the input side's, where a key's value is then transformed (stackEnvironments).
        let input = field;
        while (input instanceof z.ZodPipe) input = input.def.in as z.ZodType;
        return input instanceof z.ZodDefault ? input.def.defaultValue : undefined;
      };
      const optionalWithoutDefault = (field: z.ZodType) =>
        defaultOf(field) === undefined && field.safeParse(undefined).success;
      const fields = Object.entries(schema.shape) as [string, z.ZodType][];
      expect(Object.keys(declared).sort()).toEqual(
        fields
          .filter(([, field]) => !optionalWithoutDefault(field))
          .map(([key]) => key)
          .sort(),
      );
      for (const [key, field] of fields.filter(([k]) => Object.hasOwn(declared, k))) {
        expect(declared[key].default, `default of ${project}:${key}`).toEqual(defaultOf(field));
      }
    },
  );
});
