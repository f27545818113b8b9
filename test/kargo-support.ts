// What the kargo project's tests (kargo*.test.ts) share: the approver groups a pipeline names, and the shape
// of a planned Kubernetes object.
import { type Pipeline } from "../lib/pipeline/schema";

/** The Cognito groups the pipeline names: every gate's approvers and every destructive-change approver group. */
export const namedGroups = (p: Pipeline) =>
  [
    ...new Set([
      ...p.stages.flatMap((s) => (s.kind === "gate" ? s.approvers : [])),
      ...Object.values(p.environments).flatMap((e) => e.destructiveChangeApprovers),
    ]),
  ].sort();
export const environmentStageNames = (p: Pipeline) =>
  p.stages.filter((s) => s.kind !== "gate").map((s) => s.name);

export type Obj = {
  apiVersion: string;
  kind: string;
  metadata: Record<string, any>;
  spec: any;
  [k: string]: any;
};
