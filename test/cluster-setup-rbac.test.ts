// What cluster-setup's stackRbacRules may grant a stack's programs: exactly what a rule says, never a way to
// more, and never a pod run as another environment's ServiceAccount. The rest of cluster-setup's config is
// cluster-setup-config.test.ts's.
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { escalation, grantableVerbs } from "../cluster-setup/config";
import { workloadResources, workloadWriteVerbs } from "../cluster-setup/escalation";
import { readCrdFile } from "../lib/crds/schema";
import { upstreamCrdsDir, validationData } from "./crds-support";

describe("what a stack's programs may be granted in the cluster (stackRbacRules)", () => {
  type Rule = Parameters<typeof escalation>[0];
  const scopes = ["namespace", "cluster"] as const;

  it("grants a rule that says exactly what it lets a program do", () => {
    const safe: [Rule, (typeof scopes)[number][]][] = [
      [
        {
          apiGroups: ["apps"],
          resources: ["deployments", "deployments/scale"],
          verbs: grantableVerbs.filter((v) => !workloadWriteVerbs.includes(v)),
        },
        [...scopes],
      ],
      [{ apiGroups: ["apps"], resources: ["deployments/scale"], verbs: grantableVerbs }, [...scopes]],
      [
        { apiGroups: ["rbac.authorization.k8s.io"], resources: ["roles"], verbs: ["get", "list", "watch"] },
        [...scopes],
      ],
      [
        { apiGroups: ["certificates.k8s.io"], resources: ["certificatesigningrequests"], verbs: ["get"] },
        [...scopes],
      ],
      [
        {
          apiGroups: [""],
          resources: ["secrets"],
          verbs: ["get", "update", "patch", "delete"],
          resourceNames: ["app-config"],
        },
        ["namespace"],
      ],
      [{ apiGroups: [""], resources: ["configmaps"], verbs: ["get"], resourceNames: [] }, [...scopes]],
      [{ apiGroups: ["", "batch"], resources: ["jobs", "pods/log"], verbs: ["get", "delete"] }, [...scopes]],
      [
        { apiGroups: ["", "batch"], resources: ["configmaps", "pods/log"], verbs: ["create", "get"] },
        [...scopes],
      ],
    ];
    for (const [rule, allowedIn] of safe)
      for (const scope of allowedIn)
        expect(escalation(rule, scope), `${JSON.stringify(rule)} in ${scope}`).toBeUndefined();
  });

  it("refuses each way a rule could let a program give itself more than it says", () => {
    const risky: [Rule, RegExp][] = [
      [
        { apiGroups: [""], resources: ["pods"], verbs: ["get"], resourceNames: ["web-*"] },
        /^has a wildcard in resourceNames/,
      ],
      [{ apiGroups: ["*"], resources: ["pods"], verbs: ["get"] }, /^has a wildcard in apiGroups/],
      [
        { apiGroups: ["certificates.k8s.io"], resources: ["certificatesigningrequests"], verbs: ["approve"] },
        /^grants approve, which let/,
      ],
      [
        { apiGroups: ["certificates.k8s.io"], resources: ["signers"], verbs: ["sign", "get"] },
        /^grants sign, which let/,
      ],
      ...["pods/attach", "pods/portforward", "nodes/proxy", "certificatesigningrequests/approval"].map(
        (resource): [Rule, RegExp] => [
          { apiGroups: [""], resources: ["pods", resource], verbs: ["get"] },
          new RegExp(`^grants ${resource}, which reach other identities or nodes`),
        ],
      ),
      [
        {
          apiGroups: ["admissionregistration.k8s.io"],
          resources: ["validatingwebhookconfigurations"],
          verbs: ["get", "delete"],
        },
        /^writes to admissionregistration\.k8s\.io, which changes who may do what/,
      ],
      [
        {
          apiGroups: ["apps", "certificates.k8s.io"],
          resources: ["certificatesigningrequests"],
          verbs: ["create"],
        },
        /^writes to certificates\.k8s\.io/,
      ],
      ...(["create", "watch", "deletecollection"] as const).map((verb): [Rule, RegExp] => [
        { apiGroups: [""], resources: ["configmaps"], verbs: ["get", verb], resourceNames: ["a"] },
        new RegExp(`^uses resourceNames with ${verb}, which Kubernetes cannot narrow by name`),
      ]),
    ];
    for (const [rule, message] of risky)
      for (const scope of scopes)
        expect(escalation(rule, scope), `${JSON.stringify(rule)} in ${scope}`).toMatch(message);
  });

  it("refuses a Secret named in a cluster-wide rule: the name matches in every namespace", () => {
    const rule = { apiGroups: [""], resources: ["secrets"], verbs: ["get"], resourceNames: ["app-config"] };
    expect(escalation(rule, "cluster")).toBe("grants secrets cluster-wide, every credential in the cluster");
    // In the stacks namespace an empty list of names is no narrowing at all.
    expect(escalation({ ...rule, resourceNames: [] }, "namespace")).toMatch(
      /^grants every Secret in the stacks namespace/,
    );
  });
});

describe("no rule lets a program run a pod as another environment's ServiceAccount", () => {
  type Rule = Parameters<typeof escalation>[0];
  const scopes = ["namespace", "cluster"] as const;
  const pairs = Object.entries(workloadResources).flatMap(([group, resources]) =>
    Object.keys(resources).map((resource) => ({ group, resource })),
  );

  it("refuses create, update and patch on every resource whose objects run a pod under a ServiceAccount they name", () => {
    for (const { group, resource } of pairs)
      for (const verb of workloadWriteVerbs)
        for (const scope of scopes) {
          const rule: Rule = {
            apiGroups: ["", group],
            resources: ["configmaps", resource],
            verbs: ["get", verb],
          };
          const what = group === "" ? resource : `${resource}.${group}`;
          const field = workloadResources[group]![resource]!;
          expect(escalation(rule, scope), `${JSON.stringify(rule)} in ${scope}`).toBe(
            `grants ${verb} on ${what}, whose ${field} runs a pod as any ServiceAccount in the namespace, ` +
              "another environment's identity included; grant only get, list, watch and delete there",
          );
        }
  });

  it("names the field that chooses the ServiceAccount", () => {
    expect(
      escalation({ apiGroups: ["batch"], resources: ["cronjobs"], verbs: ["create"] }, "namespace"),
    ).toMatch(
      /^grants create on cronjobs\.batch, whose spec\.jobTemplate\.spec\.template\.spec\.serviceAccountName runs a pod as any ServiceAccount/,
    );
    expect(
      escalation({ apiGroups: ["auto.pulumi.com"], resources: ["updates"], verbs: ["patch"] }, "namespace"),
    ).toMatch(/^grants patch on updates\.auto\.pulumi\.com, whose spec\.workspaceName/);
  });

  it("still grants reading and deleting them", () => {
    for (const { group, resource } of pairs)
      for (const scope of scopes)
        expect(
          escalation(
            { apiGroups: [group], resources: [resource], verbs: ["get", "list", "watch", "delete"] },
            scope,
          ),
        ).toBeUndefined();
  });

  it("refuses wildcards that would cover them, in verbs, resources and apiGroups", () => {
    const cases: [Rule, string][] = [
      [{ apiGroups: ["batch"], resources: ["jobs"], verbs: ["*"] }, "verbs"],
      [{ apiGroups: ["batch"], resources: ["*"], verbs: ["create"] }, "resources"],
      [{ apiGroups: ["*"], resources: ["jobs"], verbs: ["create"] }, "apiGroups"],
      [{ apiGroups: ["auto.pulumi.com"], resources: ["*/status", "updates"], verbs: ["get"] }, "resources"],
    ];
    for (const [rule, field] of cases)
      expect(escalation(rule, "namespace")).toMatch(new RegExp(`^has a wildcard in ${field}`));
  });

  it("refuses adding an ephemeral container to a running pod, which runs as that pod's ServiceAccount", () => {
    expect(
      escalation({ apiGroups: [""], resources: ["pods/ephemeralcontainers"], verbs: ["patch"] }, "namespace"),
    ).toMatch(/^grants pods\/ephemeralcontainers, which reach other identities/);
  });

  // Derived from the schemas, not from the list: every custom resource the platform installs or reads whose
  // schema names a ServiceAccount (the committed CRD data, and the upstream CRDs where this clone has them).
  it("covers every custom resource whose schema names a serviceAccountName", () => {
    const crds = [
      ...Object.values(validationData.crds).flat(),
      ...(upstreamCrdsDir
        ? fs
            .readdirSync(upstreamCrdsDir, { recursive: true, encoding: "utf8" })
            .filter((f) => /\.ya?ml$/.test(f) && !/values/.test(f))
            .flatMap((f) => {
              const text = fs.readFileSync(path.join(upstreamCrdsDir!, f), "utf8");
              return text.includes("CustomResourceDefinition") ? readCrdFile(f, text) : [];
            })
        : []),
    ];
    const naming = crds.filter((crd) => JSON.stringify(crd.schema).includes('"serviceAccountName"'));
    expect(naming.map((crd) => crd.kind)).toEqual(expect.arrayContaining(["Stack", "AnalysisTemplate"]));
    for (const crd of naming) {
      // The plural of each of these kinds is its lower-cased kind plus "s" (their CRDs' spec.names.plural).
      const resource = `${crd.kind.toLowerCase()}s`;
      expect(workloadResources[crd.group]?.[resource], `${crd.group} ${resource}`).toBeDefined();
    }
  });
});
