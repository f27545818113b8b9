// Who this fork is: its GitHub repository and its Pulumi Cloud organization. The one place a fork's identity
// lives; kargo/pipeline.ts (Warehouse, Stack manifests, Pulumi Cloud links, stage branches) and cluster-setup
// (what Argo CD may sync) read it. `npm run personalize` rewrites this file and what is generated from it.
export const fork = {
  githubRepo: "https://github.com/your-org/infra-change-platform.git",
  pulumiOrg: "your-org",
};
