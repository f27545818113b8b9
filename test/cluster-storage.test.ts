// The cluster project's storage: the EBS CSI driver (the plugin cache's volumes), its role, and the snapshot
// controller beside it, in the example and with the driver turned on and off. The rest is cluster.test.ts's.
import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";
import * as runtimeSettings from "@pulumi/pulumi/runtime/settings";
import { beforeAll, describe, expect, it } from "vitest";
import type { ProgramPlan } from "../lib/cli/plan/harness";
import { PlanMocks } from "../lib/cli/plan/mocks";
import { readStackConfig } from "../lib/cli/plan/projects";
import { EBS_CSI_DRIVER_VERSION, SNAPSHOT_CONTROLLER_VERSION } from "../cluster/config";
import { PlatformCluster, type PlatformClusterArgs } from "../cluster/platformCluster";
import { irsaTrust, ofType, one, planError, planProject } from "./helpers";

// Internal hooks, used as the harness uses them (lib/cli/plan/harness.ts): each build starts from a fresh
// runtime, and no registration outlives the test.
const settings = runtimeSettings as typeof runtimeSettings & { _reset(): void; waitForRPCs(): Promise<void> };

/** The EKS add-ons a PlatformCluster's kubeconfig output waits for, built under the plan's mocks. */
async function addonsKubeconfigWaitsFor(args: Partial<PlatformClusterArgs>): Promise<string[]> {
  settings._reset();
  await pulumi.runtime.setMocks(new PlanMocks("us-west-2"), "cluster", "example", false);
  const cluster = new PlatformCluster("platform", {
    vpcId: "vpc-0",
    publicSubnetIds: ["subnet-public"],
    privateSubnetIds: ["subnet-private"],
    clusterName: "platform-example",
    kubernetesVersion: "1.35",
    nodeInstanceTypes: ["t4g.medium"],
    nodeCapacityType: "ON_DEMAND",
    nodeMinSize: 2,
    nodeDesiredSize: 2,
    nodeMaxSize: 3,
    nodeDiskSizeGiB: 20,
    nodeMaxPods: 40,
    clusterAdminRoleArns: [],
    publicAccessCidrs: ["0.0.0.0/0"],
    ciDeployRoleArn: "",
    ciPreviewRoleArn: "",
    clusterLogTypes: ["audit"],
    clusterLogRetentionDays: 30,
    ebsCsiDriverVersion: undefined,
    snapshotControllerVersion: undefined,
    supportType: "STANDARD",
    tags: {},
    ...args,
  });
  // An output's resources are what anything built from it (cluster-setup's provider) waits for; internal.
  const waitsFor = await (
    cluster.kubeconfig as unknown as { resources(): Promise<Set<pulumi.Resource>> }
  ).resources();
  const names = await Promise.all(
    [...waitsFor]
      .filter((r): r is aws.eks.Addon => aws.eks.Addon.isInstance(r))
      .map((addon) => new Promise<string>((resolve) => addon.addonName.apply(resolve))),
  );
  await settings.waitForRPCs();
  return names.sort();
}

describe("cluster project storage: the EBS CSI driver and the snapshot controller", () => {
  let plan: ProgramPlan;
  let withDriver: ProgramPlan;
  let withoutDriver: ProgramPlan;
  beforeAll(async () => {
    plan = await planProject("cluster");
    withDriver = await planProject("cluster", { "cluster:ebsCsiDriver": true });
    withoutDriver = await planProject("cluster", { "cluster:ebsCsiDriver": false });
  });

  it("gives nodes only the worker, CNI and image-pull policies, and the EBS CSI driver, when on, its own", () => {
    const attached = (role: string, from = plan) =>
      ofType(from, "aws:iam/rolePolicyAttachment:RolePolicyAttachment")
        .filter((r) => new RegExp(`^${role}-[0-9a-f]{7}$`).test(String(r.inputs.role)))
        .map((r) => r.inputs.policyArn);
    expect(attached("platform-nodes", withoutDriver).sort()).toEqual([
      "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryPullOnly",
      "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy",
      "arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy",
    ]);
    expect(attached("platform-ebs-csi-driver", withoutDriver)).toEqual([]);
    expect(attached("platform-nodes", withDriver)).toEqual(attached("platform-nodes", withoutDriver));
    expect(attached("platform-ebs-csi-driver", withDriver)).toEqual([
      "arn:aws:iam::aws:policy/service-role/AmazonEBSCSIDriverPolicy",
    ]);
  });

  it("runs the EBS CSI driver in the example (the plugin cache's volumes), and none when turned off", () => {
    expect(readStackConfig("cluster").values["cluster:ebsCsiDriver"]).toBe(true);
    expect(ofType(withoutDriver, "aws:eks/addon:Addon")).toEqual([]);
    expect(withoutDriver.outputs.ebsCsiDriver).toBe(false);
    expect(plan.outputs.ebsCsiDriver).toBe(true);
  });

  it("runs the snapshot controller beside the EBS CSI driver as a pinned EKS add-on without a role, and none when the driver is off", () => {
    const addon = one(withDriver, "aws:eks/addon:Addon", "platform-snapshot-controller");
    const config = readStackConfig("cluster").values;
    expect(addon.inputs).toEqual({
      addonName: "snapshot-controller",
      addonVersion: config["cluster:snapshotControllerVersion"] ?? SNAPSHOT_CONTROLLER_VERSION,
      clusterName: "platform-example",
      resolveConflictsOnCreate: "OVERWRITE",
      resolveConflictsOnUpdate: "OVERWRITE",
      tags: one(withDriver, "eks:index:Cluster").inputs.tags,
    });
    expect(addon.inputs.addonVersion).toMatch(/^v\d+\.\d+\.\d+-eksbuild\.\d+$/);
    expect(addon.dependsOn).toContain(one(withDriver, "eks:index:ManagedNodeGroup").urn);
    // The controller calls no AWS API: no IAM role is made for it.
    expect(ofType(withDriver, "aws:iam/role:Role").filter((r) => r.name.includes("snapshot"))).toEqual([]);
    expect(ofType(withoutDriver, "aws:eks/addon:Addon").map((r) => r.inputs.addonName)).toEqual([]);
  });

  it("installs the snapshot controller at the build cluster:snapshotControllerVersion names", async () => {
    const other = await planProject("cluster", { "cluster:snapshotControllerVersion": "v8.4.0-eksbuild.7" });
    expect(one(other, "aws:eks/addon:Addon", "platform-snapshot-controller").inputs.addonVersion).toBe(
      "v8.4.0-eksbuild.7",
    );
    // The EBS CSI driver keeps its own pin.
    expect(one(other, "aws:eks/addon:Addon", "platform-ebs-csi-driver").inputs.addonVersion).toBe(
      one(withDriver, "aws:eks/addon:Addon", "platform-ebs-csi-driver").inputs.addonVersion,
    );
  });

  it("refuses a snapshot controller version that is not an EKS add-on build, naming the key and an example", async () => {
    for (const version of ["latest", "8.5.0", "v8.5.0", "v8.5.0-eksbuild.1 "]) {
      const error = await planError("cluster", { "cluster:snapshotControllerVersion": version });
      expect(error.message).toMatch(/^Invalid configuration for project "cluster":/);
      expect(error.message).toMatch(
        /cluster:snapshotControllerVersion: must be an EKS add-on version such as "v\d+\.\d+\.\d+-eksbuild\.\d+" \(aws eks describe-addon-versions --addon-name snapshot-controller\)/,
      );
    }
  });

  it("exports whether VolumeSnapshots can be taken: exactly when the snapshot controller is installed", () => {
    for (const p of [plan, withDriver, withoutDriver]) {
      const installed = ofType(p, "aws:eks/addon:Addon").some(
        (r) => r.inputs.addonName === "snapshot-controller",
      );
      expect(p.outputs.volumeSnapshots).toBe(installed);
    }
    expect(withDriver.outputs.volumeSnapshots).toBe(true);
    expect(withoutDriver.outputs.volumeSnapshots).toBe(false);
  });

  it("hands its kubeconfig downstream only once the snapshot controller, and so the VolumeSnapshot CRDs, are up", async () => {
    expect(
      await addonsKubeconfigWaitsFor({
        ebsCsiDriverVersion: EBS_CSI_DRIVER_VERSION,
        snapshotControllerVersion: SNAPSHOT_CONTROLLER_VERSION,
      }),
    ).toEqual(["aws-ebs-csi-driver", "snapshot-controller"]);
    expect(
      await addonsKubeconfigWaitsFor({ snapshotControllerVersion: SNAPSHOT_CONTROLLER_VERSION }),
    ).toEqual(["snapshot-controller"]);
    expect(await addonsKubeconfigWaitsFor({})).toEqual([]);
  });

  it("runs the EBS CSI driver, when asked, as a pinned EKS add-on once the nodes are up, as a role only its controller's ServiceAccount assumes", () => {
    const addon = one(withDriver, "aws:eks/addon:Addon", "platform-ebs-csi-driver");
    const role = one(withDriver, "aws:iam/role:Role", "platform-ebs-csi-driver");
    const config = readStackConfig("cluster").values;
    expect(addon.inputs).toMatchObject({
      addonName: "aws-ebs-csi-driver",
      addonVersion: config["cluster:ebsCsiDriverVersion"] ?? EBS_CSI_DRIVER_VERSION,
      clusterName: "platform-example",
    });
    // The role the add-on's ServiceAccount is annotated with is the one trusted below.
    expect(addon.inputs.serviceAccountRoleArn).toMatch(
      /^arn:aws:iam::\d{12}:role\/platform-ebs-csi-driver-[0-9a-f]{7}$/,
    );
    expect(addon.dependsOn).toContain(role.urn);
    expect(addon.inputs.addonVersion).toMatch(/^v\d+\.\d+\.\d+-eksbuild\.\d+$/);
    expect(addon.dependsOn).toContain(one(withDriver, "eks:index:ManagedNodeGroup").urn);
    expect(JSON.parse(String(role.inputs.assumeRolePolicy))).toEqual(
      irsaTrust(withDriver.outputs, "kube-system:ebs-csi-controller-sa"),
    );
  });
});
