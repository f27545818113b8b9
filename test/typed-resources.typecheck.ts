// Compile-time tests of the typed custom resources: `npm test` type-checks this file, and every
// `@ts-expect-error` below fails the type-check if the mistake under it ever stops being an error.
import * as pulumi from "@pulumi/pulumi";
import { argocd, kargo, pko } from "../lib/crds";

const metadata = { name: "dev", namespace: "infra" };
const requestedFreight = [
  { origin: { kind: "Warehouse" as const, name: "program" }, sources: { direct: true } },
];

export function typedResourcesCompile(): void {
  // Pulumi Inputs are accepted at any depth.
  new kargo.Stage("dev", {
    metadata: { name: pulumi.output("dev"), namespace: "infra" },
    spec: {
      requestedFreight: [
        {
          origin: { kind: "Warehouse", name: pulumi.output("program") },
          sources: pulumi.output({ direct: true }),
        },
      ],
      vars: pulumi.output([{ name: "stage", value: "dev" }]),
    },
  });

  // @ts-expect-error a misspelt field is a compile error, not a setting the API server drops
  new kargo.Stage("dev", { metadata, spec: { requestedFreight, promotionTemplates: {} } });

  const sources: kargo.StageSpec["requestedFreight"][number]["sources"] = {
    stages: ["a"],
    // @ts-expect-error a value outside the enum
    availabilityStrategy: "Any",
  };
  new kargo.Stage("dev", {
    metadata,
    spec: { requestedFreight: [{ origin: requestedFreight[0]!.origin, sources }] },
  });

  // @ts-expect-error a required field (spec.stack) is missing
  new pko.Stack("dev", { metadata, spec: { preview: true } });

  // @ts-expect-error a wrong type
  new pko.Stack("dev", { metadata, spec: { stack: "org/dev", resyncFrequencySeconds: "60" } });

  // @ts-expect-error every object needs an explicit name
  new argocd.AppProject("stacks", { metadata: { namespace: "argocd" }, spec: {} });

  new kargo.Warehouse("program", {
    metadata,
    spec: {
      interval: "5m0s",
      // @ts-expect-error Warehouse git subscriptions are typed from Kargo's subscription schema
      subscriptions: [{ git: { repoURL: "https://github.com/acme/infra.git", branches: "main" } }],
    },
  });
}
