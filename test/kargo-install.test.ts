// Kargo itself as the kargo project installs it: chart values, sign-in, the webhook receiver and who may
// use the API.
import { beforeAll, describe, expect, it } from "vitest";
import { pipeline as definition } from "../kargo/pipeline";
import { type Pipeline } from "../lib/pipeline/schema";
import { validatePipeline } from "../lib/pipeline/validate";
import type { ProgramPlan } from "../lib/cli/plan/harness";
import { planChain } from "../lib/cli/plan/projects";
import { ofType, one, planProject } from "./helpers";
import { namedGroups } from "./kargo-support";

describe("kargo project", () => {
  const pipeline: Pipeline = validatePipeline(definition);
  let setup: ProgramPlan;
  let plan: ProgramPlan;

  beforeAll(async () => {
    [setup, plan] = (await planChain()).slice(1) as [ProgramPlan, ProgramPlan];
  });

  describe("Kargo itself", () => {
    const values = () => one(plan, "kubernetes:helm.sh/v3:Release").inputs.values as any;

    it("installs the pinned chart with the break-glass admin login off by default", async () => {
      const release = one(plan, "kubernetes:helm.sh/v3:Release").inputs;
      expect(release).toMatchObject({
        chart: "oci://ghcr.io/akuity/kargo-charts/kargo",
        version: "1.11.2",
        namespace: "kargo",
      });
      expect(values().api.adminAccount).toEqual({ enabled: false });
      // No admin password or token signing key is generated (the webhook's secret is, webhook.test.ts).
      expect(
        ofType(plan, "random:index/randomPassword:RandomPassword").filter((r) => r.name.startsWith("kargo-")),
      ).toEqual([]);
      expect(plan.outputs).not.toHaveProperty("kargoAdminPassword");
      expect(plan.upstream.secretOutputNames).toEqual(["githubWebhookSecret"]);

      // Asked for, it has a generated password, short-lived tokens, and the password is a secret output.
      const withAdmin = await planProject("kargo", { "kargo:kargoAdminAccount": true });
      const adminValues = (one(withAdmin, "kubernetes:helm.sh/v3:Release").inputs.values as any).api;
      expect(adminValues.adminAccount).toEqual({
        enabled: true,
        passwordHash: "[secret]",
        tokenSigningKey: "[secret]",
        tokenTTL: "1h",
      });
      expect(withAdmin.upstream.secretOutputNames.sort()).toEqual([
        "githubWebhookSecret",
        "kargoAdminPassword",
      ]);
    });

    it("signs in with a public Cognito client, the same for UI and CLI, admins by group claim", () => {
      const client = one(plan, "aws:cognito/userPoolClient:UserPoolClient").inputs;
      const host = plan.outputs.kargoLoadBalancerHostname;
      expect(client).toMatchObject({
        userPoolId: setup.outputs.cognitoUserPoolId,
        generateSecret: false,
        allowedOauthFlows: ["code"],
        allowedOauthScopes: ["openid", "email", "profile"],
        callbackUrls: [`https://${host}/login`, "http://localhost:8085/auth/callback"],
        logoutUrls: [`https://${host}/login`],
      });
      expect(values().api.host).toBe(host);
      expect(values().api.oidc).toEqual({
        enabled: true,
        issuerURL: setup.outputs.cognitoIssuerUrl,
        clientID: plan.outputs.kargoOidcClientId,
        cliClientID: plan.outputs.kargoOidcClientId,
        additionalScopes: [],
        usernameClaim: "email",
        admins: { claims: { "cognito:groups": ["platform-admins"] } },
        users: { claims: { "cognito:groups": namedGroups(pipeline) } },
      });
    });

    it("is reached through a network load balancer on the API's node port, in every zone of the nodes", () => {
      expect(one(plan, "aws:lb/loadBalancer:LoadBalancer").inputs).toMatchObject({
        loadBalancerType: "network",
        internal: false,
        // One public subnet per zone; the nodes' private subnets are in the same zones.
        subnets: setup.outputs.publicSubnetIds,
        enableCrossZoneLoadBalancing: true,
      });
      expect((setup.outputs.publicSubnetIds as string[]).length).toBeGreaterThan(1);
      expect(values().api.service).toEqual({ type: "NodePort", nodePort: 30443 });
      expect(one(plan, "aws:lb/targetGroup:TargetGroup", "kargo").inputs).toMatchObject({
        port: 30443,
        targetType: "instance",
      });
      expect(plan.outputs.kargoUrl).toBe(`https://${plan.outputs.kargoLoadBalancerHostname}`);
    });

    it("spans fewer zones only when asked to", async () => {
      const oneZone = await planProject("kargo", { "kargo:kargoLoadBalancerZones": 1 });
      expect(one(oneZone, "aws:lb/loadBalancer:LoadBalancer").inputs.subnets).toEqual(
        (setup.outputs.publicSubnetIds as string[]).slice(0, 1),
      );
    });

    it("uses a configured hostname for the host and the callback instead", async () => {
      const named = await planProject("kargo", { "kargo:kargoHostname": "kargo.example.com" });
      expect((one(named, "kubernetes:helm.sh/v3:Release").inputs.values as any).api.host).toBe(
        "kargo.example.com",
      );
      expect(one(named, "aws:cognito/userPoolClient:UserPoolClient").inputs.callbackUrls).toEqual([
        "https://kargo.example.com/login",
        "http://localhost:8085/auth/callback",
      ]);
    });
  });
});
