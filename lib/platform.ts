import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";

/** Tags on every AWS resource the platform creates: which stack owns it. */
export const platformTags = (): Record<string, string> => ({
  "platform:stack": `${pulumi.getProject()}/${pulumi.getStack()}`,
  "platform:managed-by": "pulumi",
});

/**
 * The one Kubernetes provider of a project, built from the cluster's kubeconfig rather than the ambient
 * one: every in-cluster object goes through it, so destroying the project removes them before the cluster.
 */
export const clusterProvider = (kubeconfig: pulumi.Input<string>) =>
  new k8s.Provider("cluster", { kubeconfig, enableServerSideApply: true });
