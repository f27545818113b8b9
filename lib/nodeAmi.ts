/**
 * The node AMI, pinned: one amazon-eks-ami release (awslabs/amazon-eks-ami tag) for the base node group
 * (cluster/) and the burst nodes (cluster-setup/karpenter.ts), so a `pulumi up` never picks up a newer AMI by
 * itself and the nodes roll only when a reviewed pull request (Renovate's) moves this pin. The release must
 * exist for the cluster's Kubernetes version: an EKS upgrade may need it moved too (docs/upgrading.md).
 */
export const NODE_AMI_RELEASE = "v20260724";

/**
 * The SSM parameter that holds the AMI ID of that release of the AL2023 EKS AMI, the path Karpenter reads for
 * an `al2023@<release>` alias (aws/karpenter-provider-aws v1.15.1 pkg/providers/amifamily/al2023.go,
 * resolvePath). AWS never re-points a release's parameter, unlike `.../recommended/image_id`, which
 * pulumi-eks v4.3.0 reads by default (nodejs/eks/nodes/ami.ts) and which moves with every AMI release.
 */
export function al2023AmiParameter(
  kubernetesVersion: string,
  architecture: "arm64" | "x86_64",
  release: string = NODE_AMI_RELEASE,
): string {
  const name = `amazon-eks-node-al2023-${architecture}-standard-${kubernetesVersion}-${release}`;
  return `/aws/service/eks/optimized-ami/${kubernetesVersion}/amazon-linux-2023/${architecture}/standard/${name}/image_id`;
}
