// What the reach table expects, for test/kube (Go): the pipeline as the programs read it (kargo/pipeline.ts,
// validated and defaulted) and the stack identities' config as the offline plan configures cluster-setup.
// Prints one JSON document on stdout.
import { clusterSetupConfigSchema } from "../../cluster-setup/config";
import { pipeline } from "../../kargo/pipeline";
import { readStackConfig } from "../../lib/cli/plan/projects";
import { riskPolicy } from "../../lib/pipeline/schema";
import { validatePipeline } from "../../lib/pipeline/validate";

const values = Object.fromEntries(
  Object.entries(readStackConfig("cluster-setup").values)
    .filter(([key]) => key.startsWith("cluster-setup:"))
    .map(([key, value]) => [key.slice("cluster-setup:".length), value]),
);
const setup = clusterSetupConfigSchema.parse(values);
const p = validatePipeline(pipeline);
process.stdout.write(
  JSON.stringify({
    pipeline: p,
    // Who decides each environment's stops, as the definition reads (its old field names included); none
    // when it stops for nothing.
    deciders: Object.fromEntries(
      Object.entries(p.environments).map(([env, e]) => [env, riskPolicy(e).deciders]),
    ),
    stacks: {
      namespace: setup.stacksNamespace,
      serviceAccount: setup.stackServiceAccount,
      environments: setup.stackEnvironments,
      rbacScope: setup.stackRbacScope,
      rbacRules: setup.stackRbacRules,
    },
  }),
);
