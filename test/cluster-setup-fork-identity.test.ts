// cluster-setup reads the fork's identity from lib/fork.ts (what Argo CD may sync Stack manifests from): a hand
// edit that breaks it is refused before anything is registered, naming the file and how to set it. The broken
// identity is handed in: test files share their worker's modules (vitest.config.mts), so none is mocked.
import * as pulumi from "@pulumi/pulumi";
import { afterEach, expect, it } from "vitest";
import { loadClusterSetupConfig } from "../cluster-setup/config";
import { setStackConfig } from "../lib/cli/plan/harness";
import { readStackConfig } from "../lib/cli/plan/projects";

afterEach(() => pulumi.runtime.setAllConfig({}, []));

it("refuses a fork repository that is not an HTTPS git URL, naming lib/fork.ts and npm run personalize", () => {
  void pulumi.runtime.setMocks(
    { newResource: (r) => ({ id: r.name, state: r.inputs }), call: (c) => c.inputs },
    "cluster-setup",
    "example",
  );
  const { values, secretKeys } = readStackConfig("cluster-setup");
  setStackConfig(values, secretKeys);
  expect(() =>
    loadClusterSetupConfig({ githubRepo: "git@github.com:acme/infra.git", pulumiOrg: "acme" }),
  ).toThrow(
    /^Invalid fork identity in lib\/fork\.ts \(set it with npm run personalize\):\n {2}- githubRepo: "git@github\.com:acme\/infra\.git" must be an HTTPS git URL$/,
  );
});
