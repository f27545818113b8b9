// Each project's Pulumi.yaml declares exactly the keys its program validates, with the same defaults: a
// key left unset means the same whether the Pulumi CLI fills in the declared default or the program does.
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
      expect(Object.keys(declared).sort()).toEqual(Object.keys(schema.shape).sort());
      for (const [key, field] of Object.entries(schema.shape)) {
        // A default is the input side's, where a key's value is then transformed (stackEnvironments).
        let input: z.ZodType = field as z.ZodType;
        while (input instanceof z.ZodPipe) input = input.def.in as z.ZodType;
        const expected = input instanceof z.ZodDefault ? input.def.defaultValue : undefined;
        expect(declared[key].default, `default of ${project}:${key}`).toEqual(expected);
      }
    },
  );
});
